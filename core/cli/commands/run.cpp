// `kforge run PIPELINE`: runs a pipeline into its output directory, then reports on it.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <tbb/global_control.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include "command.hpp"
#include "report_options.hpp"
#include "engine/registry.hpp"
#include "run/progress.hpp"
#include "run/session.hpp"
#include "store/store.hpp"

namespace kforge::cli {
namespace {

std::string default_out_dir(const Plan& pipeline) {
  return (std::filesystem::path("kforge-out") / pipeline.name).string();
}

// "1 job", "3 jobs"
std::string count_of(uint64_t n, const char* noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); }

void print_summary(const SessionResult& result, const std::string& out_dir) {
  const RunSummary& s = result.summary;
  print_stdout(fmt::format("\n{} tasks, {} jobs: {} passed, {} failed, {} errors", s.tasks, s.jobs, s.passed,
                           s.failed, s.errors));
  if (s.skipped) print_stdout(fmt::format(", {} skipped (done before)", s.skipped));
  if (s.unfinished) print_stdout(fmt::format(", {} unfinished", s.unfinished));
  print_stdout(fmt::format(" in {:.2f} s\nresults: {}/results.jsonl\n", s.seconds, out_dir));
  if (!result.write_failure.empty()) {
    // The counts above are what ran; these are what was kept.
    print_stdout(fmt::format("stopped by a failed write or a change to its files (below); saved: {} in {}, {} in "
                             "results.jsonl\n",
                             count_of(result.saved_jobs, "job"), kStoreFileName,
                             count_of(result.results_lines, "line")));
  } else if (s.cancelled) {
    print_stdout("interrupted: results of finished jobs are saved; `--resume` continues\n");
  }
}

class RunCommand : public Command {
 public:
  explicit RunCommand(CLI::App& app) : command_(app.add_subcommand("run", "Run a pipeline")) {
    command_->add_option("pipeline", pipeline_path_, "Pipeline YAML file")->required();
    command_->add_option("--jobs,-j", jobs_, "Worker threads for CPU stages (default: all cores)")
        ->check(CLI::PositiveNumber);
    command_->add_option("--set", sets_,
                         "Override: NAME=value sets a variable, STAGE.PARAM=value a stage parameter");
    command_->add_option("--out,-o", out_dir_, "Output directory (default: kforge-out/<pipeline name>)");
    command_->add_option("--max-in-flight", max_in_flight_, "Jobs inside the graph at once (overrides the pipeline)")
        ->check(CLI::PositiveNumber);
    command_->add_flag(
        "--resume", resume_,
        "Continue the last run in the output directory: skip jobs it finished (same pipeline required)");
    command_->add_flag("--no-cache", no_cache_,
                       "Evaluate every candidate, even code the verdict cache has judged before");
    command_->add_flag("--replay-measurements", replay_measurements_,
                       "Answer stages whose verdicts include measurements (timings) from the verdict cache too; by "
                       "default they measure again");
    command_->add_option("--progress", progress_,
                         "auto (a bar on a terminal, log lines otherwise), bar, lines or off")
        ->check(CLI::IsMember({"auto", "bar", "lines", "off"}));
    command_->add_option("--progress-interval", progress_interval_,
                         "Seconds between progress lines (default 10, at least 0.1)")
        ->check(kFinite & CLI::Range(0.1, 1e9));
    report_options_.emplace(command_, "--report-format");
  }

  bool chosen() const override { return command_->parsed(); }
  void check() override { report_options_->check(); }

  int run(const LoadedPlugins* plugins) override {
    if (!plugins->ok) return kExitConfig;
    const Plan pipeline = load_pipeline(pipeline_path_, plugins->registry, parse_overrides(sets_));
    std::optional<tbb::global_control> threads;
    if (jobs_ > 0) threads.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(jobs_));
    SessionOptions session_options;
    session_options.out_dir = out_dir_.empty() ? default_out_dir(pipeline) : out_dir_;
    session_options.resume = resume_;
    session_options.use_cache = !no_cache_;
    session_options.replay_measurements = replay_measurements_;
    session_options.max_in_flight = max_in_flight_;
    session_options.kforge_version = KFORGE_VERSION;
    RunSession session(pipeline, session_options);
    const ProgressMode mode = progress_ == "auto"    ? progress_mode_for(stderr)
                              : progress_ == "bar"   ? ProgressMode::Bar
                              : progress_ == "lines" ? ProgressMode::Lines
                                                     : ProgressMode::Off;
    ProgressObserver progress_display(mode, stderr, progress_interval_, session.already_done());
    set_running_run(&session.cancel_token());
    const SessionResult result = session.run(&progress_display);
    set_running_run(nullptr);
    progress_display.finish();

    print_summary(result, session_options.out_dir);
    if (!result.write_failure.empty()) {
      spdlog::error("{}", result.write_failure);
      return kExitRuntime;  // the store cannot be trusted for a report
    }
    if (!result.disagreement.empty()) {
      spdlog::error("{}\nthe run's records cannot be trusted as they are; results.jsonl is left as it is, to be "
                    "looked at. `--resume` (same pipeline and --out) rewrites it to agree with the store, running "
                    "the jobs whose lines disagree again; or run again into a fresh --out",
                    result.disagreement);
      return kExitRuntime;
    }
    const int gate = report_and_gate(load_report(session_options.out_dir, &plugins->registry),
                                     session_options.out_dir, *report_options_, ReportFor::Run);
    if (result.summary.cancelled) return kExitInterrupted;
    if (!result.summary.source_error.empty()) return kExitRuntime;
    return gate;
  }

 private:
  CLI::App* command_;
  std::string pipeline_path_;
  std::vector<std::string> sets_;
  int jobs_ = 0;
  int max_in_flight_ = 0;
  std::string out_dir_;
  bool resume_ = false;
  bool no_cache_ = false;
  bool replay_measurements_ = false;
  std::string progress_ = "auto";
  double progress_interval_ = 10;
  std::optional<ReportOptions> report_options_;  // added after the run's own options, as --help lists them
};

}  // namespace

std::unique_ptr<Command> add_run_command(CLI::App& app) { return std::make_unique<RunCommand>(app); }

}  // namespace kforge::cli
