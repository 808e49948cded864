// kforge: the command-line front end of the runtime.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <tbb/global_control.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <unistd.h>

#include "engine/executor.hpp"
#include "engine/param_types.hpp"
#include "engine/pipeline/load.hpp"
#include "engine/registry.hpp"
#include "report/environment.hpp"
#include "export_command.hpp"
#include "report/report.hpp"
#include "report/show.hpp"
#include "report/schemas.hpp"
#include "run/progress.hpp"
#include "run/session.hpp"
#include "run/store/store.hpp"
#include "signals.hpp"

namespace fs = std::filesystem;
using kforge::cli::print_stdout;

namespace {

// Exit codes, documented in docs/cli.md.
constexpr int kExitOk = 0;
constexpr int kExitThresholds = 1;
constexpr int kExitConfig = 2;
constexpr int kExitRuntime = 3;
constexpr int kExitInterrupted = kforge::cli::kExitInterrupted;

// CLI11's number checks let NaN through (every comparison with it is false): a NaN
// interval would print progress lines without pause, a NaN threshold never fire.
const CLI::Validator kFinite(
    [](const std::string& text) {
      double value = 0;
      return CLI::detail::lexical_cast(text, value) && std::isfinite(value)
                 ? std::string()
                 : "must be a finite number, got " + text;
    },
    "FINITE");

// Loads every plugin on the search path; a plugin that does not load is an error.
bool load_plugins(kforge::Registry& registry, const std::vector<std::string>& extra_dirs) {
  std::vector<std::string> dirs = extra_dirs;
  for (auto& d : kforge::default_plugin_path()) dirs.push_back(d);
  const auto problems = registry.discover(dirs);
  for (const auto& p : problems) spdlog::error("{}", p);
  if (dirs.empty()) spdlog::warn("no plugin directory found; set KFORGE_PLUGIN_PATH");
  return problems.empty();
}

kforge::Overrides parse_overrides(const std::vector<std::string>& sets) {
  kforge::Overrides overrides;
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      // Reported as every pipeline problem is: where (the argument), then what to write.
      throw kforge::ConfigError({{{"--set " + s, 0, 0},
                                  "expected NAME=value (a variable) or STAGE.PARAM=value (a stage parameter)", ""}});
    }
    overrides.values[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return overrides;
}

// "one of: a, b", ">= 1", "> 0, <= 1": what a parameter accepts beyond its type.
std::string constraints_text(const kforge::ParamSpec& p) {
  std::vector<std::string> parts;
  if (!p.choices.empty()) parts.push_back(fmt::format("one of: {}", fmt::join(p.choices, ", ")));
  if (p.range & KF_RANGE_MIN) parts.push_back(fmt::format("{} {:g}", (p.range & KF_RANGE_MIN_EXCLUSIVE) ? ">" : ">=", p.min));
  if (p.range & KF_RANGE_MAX) parts.push_back(fmt::format("{} {:g}", (p.range & KF_RANGE_MAX_EXCLUSIVE) ? "<" : "<=", p.max));
  return parts.empty() ? "" : fmt::format(" ({})", fmt::join(parts, ", "));
}

void print_params(const std::vector<kforge::ParamSpec>& params) {
  if (params.empty()) {
    print_stdout("  (no parameters)\n");
    return;
  }
  for (const kforge::ParamSpec& p : params) {
    std::string def = p.required ? "required" : (p.default_value ? fmt::format("default: {}", *p.default_value) : "optional");
    const std::string former =
        p.former_names.empty() ? "" : fmt::format(" (formerly {})", fmt::join(p.former_names, ", "));
    print_stdout(fmt::format("  {:<20} {:<13} {}{}{}\n      {}\n", p.name, kforge::param_type(p.type)->name, def,
                             constraints_text(p), former, p.doc));
  }
}


std::string default_out_dir(const kforge::Plan& pipeline) {
  return (fs::path("kforge-out") / pipeline.name).string();
}

// "1 job", "3 jobs"
std::string count_of(uint64_t n, const char* noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); }

void print_summary(const kforge::SessionResult& result, const std::string& out_dir) {
  const kforge::RunSummary& s = result.summary;
  print_stdout(fmt::format("\n{} tasks, {} jobs: {} passed, {} failed, {} errors", s.tasks, s.jobs, s.passed,
             s.failed, s.errors));
  if (s.skipped) print_stdout(fmt::format(", {} skipped (done before)", s.skipped));
  if (s.unfinished) print_stdout(fmt::format(", {} unfinished", s.unfinished));
  print_stdout(fmt::format(" in {:.2f} s\nresults: {}/results.jsonl\n", s.seconds, out_dir));
  if (!result.write_failure.empty()) {
    // The counts above are what ran; these are what was kept.
    print_stdout(fmt::format("stopped by a failed write or a change to its files (below); saved: {} in {}, {} in "
                             "results.jsonl\n",
                             count_of(result.saved_jobs, "job"), kforge::kStoreFileName,
                             count_of(result.results_lines, "line")));
  } else if (s.cancelled) {
    print_stdout("interrupted: results of finished jobs are saved; `--resume` continues\n");
  }
}

// "text,md" -> formats; throws CLI::ValidationError naming the bad one.
std::vector<kforge::ReportFormat> parse_formats(const std::string& option, const std::string& list) {
  std::vector<kforge::ReportFormat> formats;
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    auto format = kforge::parse_report_format(item);
    if (!format) {
      throw CLI::ValidationError(option, fmt::format("unknown report format '{}' (known: {})", item, kforge::kReportFormatNames));
    }
    formats.push_back(*format);
  }
  return formats;
}

kforge::Thresholds parse_thresholds(std::optional<double> min_pass_rate, const std::vector<std::string>& min_fast_p) {
  kforge::Thresholds thresholds;
  thresholds.min_pass_rate = min_pass_rate;
  for (const auto& text : min_fast_p) {
    try {
      thresholds.min_fast_p.push_back(kforge::parse_fast_p_threshold(text));
    } catch (const std::invalid_argument& e) {
      throw CLI::ValidationError("--min-fast-p", e.what());
    }
  }
  return thresholds;
}

// Whose report: `kforge report` may read a run's directory on a read-only mount or in an
// archive, where the tables are the report; a run whose directory became read-only (or
// went) under it has not produced what it was asked for.
enum class ReportFor { Reader, Run };

// Prints the text tables and writes the report files; returns the exit code the
// thresholds give (0 when all are met), or kExitRuntime when a run cannot write them.
int report_and_gate(const kforge::Report& report, const std::string& out_dir,
                    const std::vector<kforge::ReportFormat>& formats, const kforge::Thresholds& thresholds,
                    ReportFor report_for) {
  if (std::find(formats.begin(), formats.end(), kforge::ReportFormat::Text) != formats.end()) {
    print_stdout(fmt::format("\n{}", kforge::render_text(kforge::report_tables(report.metrics, report.section_tables))));
  }
  if (::access(out_dir.c_str(), W_OK) != 0) {
    if (report_for == ReportFor::Run) {
      spdlog::error("'{}' is not writable any more ({}): the report files were not written. The results are saved: "
                    "`kforge report {}` writes them once the directory is writable",
                    out_dir, std::strerror(errno), out_dir);
      return kExitRuntime;
    }
    spdlog::warn("'{}' is not writable ({}): report files are not written", out_dir, std::strerror(errno));
  } else {
    for (const auto& path : kforge::write_report_files(report, out_dir, formats)) spdlog::info("report: {}", path);
  }
  const auto missed = kforge::missed_thresholds(report, thresholds);
  for (const auto& m : missed) spdlog::error("threshold missed: {}", m);
  return missed.empty() ? kExitOk : kExitThresholds;
}

std::string store_path(const std::string& out_dir) { return (fs::path(out_dir) / kforge::kStoreFileName).string(); }

}  // namespace

int main(int argc, char** argv) {
  kforge::cli::install_signal_handling();
  // Whole lines on stdout as they are printed: with stdout and stderr in one file (`> log
  // 2>&1`), a log line then falls between two lines of a table, never inside one (stdout
  // to a file is otherwise written in blocks, some before and some after the log lines
  // printed meanwhile).
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  CLI::App app{"kforge: run pipelines that generate, check, compile, run and time compute kernels"};
  app.set_version_flag("--version", std::string("kforge ") + KFORGE_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // global options also after the command: `kforge run X --log-level warn`
  std::string log_level = "info";
  std::vector<std::string> plugin_dirs;
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.add_option("--plugin-dir", plugin_dirs, "Extra plugin directory, searched first (repeatable)");

  std::string pipeline_path;
  std::vector<std::string> sets;
  int jobs = 0;
  int max_in_flight = 0;
  std::string out_dir;

  auto* run = app.add_subcommand("run", "Run a pipeline");
  run->add_option("pipeline", pipeline_path, "Pipeline YAML file")->required();
  run->add_option("--jobs,-j", jobs, "Worker threads for CPU stages (default: all cores)")->check(CLI::PositiveNumber);
  run->add_option("--set", sets, "Override: NAME=value sets a variable, STAGE.PARAM=value a stage parameter");
  run->add_option("--out,-o", out_dir, "Output directory (default: kforge-out/<pipeline name>)");
  run->add_option("--max-in-flight", max_in_flight, "Jobs inside the graph at once (overrides the pipeline)")
      ->check(CLI::PositiveNumber);
  bool resume = false;
  bool no_cache = false;
  bool replay_measurements = false;
  std::string progress = "auto";
  double progress_interval = 10;
  run->add_flag("--resume", resume,
                "Continue the last run in the output directory: skip jobs it finished (same pipeline required)");
  run->add_flag("--no-cache", no_cache, "Evaluate every candidate, even code the verdict cache has judged before");
  run->add_flag("--replay-measurements", replay_measurements,
                "Answer stages whose verdicts include measurements (timings) from the verdict cache too; by default "
                "they measure again");
  run->add_option("--progress", progress, "auto (a bar on a terminal, log lines otherwise), bar, lines or off")
      ->check(CLI::IsMember({"auto", "bar", "lines", "off"}));
  run->add_option("--progress-interval", progress_interval, "Seconds between progress lines (default 10, at least 0.1)")
      ->check(kFinite & CLI::Range(0.1, 1e9));

  // Report options, shared by run and report.
  std::string formats_text = "text,md,json,html,junit";
  std::optional<double> min_pass_rate;
  std::vector<std::string> min_fast_p;
  auto add_report_options = [&](CLI::App* command, const char* formats_option) {
    command->add_option(formats_option, formats_text, "Report formats, comma-separated: text,md,json,html,junit (default: all)");
    command->add_option("--min-pass-rate", min_pass_rate, "Exit 1 when fewer than this share of tasks pass (0..1)")
        ->check(kFinite & CLI::Range(0.0, 1.0));
    command->add_option("--min-fast-p", min_fast_p,
                        "P:SHARE: exit 1 when fewer than SHARE of tasks are correct and faster than P x baseline "
                        "(repeatable), e.g. 1.0:0.2")
        ->allow_extra_args(false);  // one value per --min-fast-p: it must not swallow the pipeline
  };
  add_report_options(run, "--report-format");

  std::string report_dir;
  auto* report = app.add_subcommand("report", "Report on an output directory: tables on stdout, files into it");
  report->add_option("dir", report_dir, "Output directory of a run (holds kforge.db)")->required()->check(CLI::ExistingDirectory);
  add_report_options(report, "--format");

  std::vector<std::string> compare_dirs;
  std::string compare_format = "text";
  auto* compare = app.add_subcommand("compare", "Strategies side by side: pass rate, time, cost, pass rate per class");
  compare->add_option("dirs", compare_dirs, "Output directories, one per strategy")->required()->check(CLI::ExistingDirectory);
  compare->add_option("--format", compare_format, "text or md")->check(CLI::IsMember({"text", "md"}));

  std::string show_dir;
  std::string show_task;
  std::optional<int> show_sample;
  auto* show = app.add_subcommand("show", "A task's candidates: code per round, diffs, verdicts, logs, timings, model, cost");
  show->add_option("dir", show_dir, "Output directory of a run (holds kforge.db)")->required()->check(CLI::ExistingDirectory);
  show->add_option("task", show_task, "Task id, as in the report's task table")->required();
  show->add_option("sample", show_sample, "Only this sample (default: every candidate of the task)")->check(CLI::NonNegativeNumber);

  auto* validate = app.add_subcommand("validate", "Check a pipeline without running anything");
  validate->add_option("pipeline", pipeline_path, "Pipeline YAML file")->required();
  validate->add_option("--set", sets, "Override, as for run");

  auto* plugins = app.add_subcommand("plugins", "Inspect the loaded plugins");
  plugins->require_subcommand(1);
  auto* list = plugins->add_subcommand(
      "list", "List plugins and what they register: stage and source kinds, exporters, report sections");
  std::string kind_name;
  auto* describe = plugins->add_subcommand("describe", "Show a stage or source kind's parameters");
  describe->add_option("kind", kind_name, "Kind name, e.g. demo.sleep")->required();

  auto* schema = app.add_subcommand("schema", "Print a JSON Schema: of the pipeline format, or of an output file");
  bool schema_results = false;
  bool schema_report = false;
  bool schema_records = false;
  auto* results_flag = schema->add_flag("--results", schema_results, "The schema of a results.jsonl line");
  auto* report_flag = schema->add_flag("--report", schema_report, "The schema of report.json");
  auto* records_flag =
      schema->add_flag("--records", schema_records, "The schema of a records.jsonl line (kforge export --format records)");
  results_flag->excludes(report_flag, records_flag);
  report_flag->excludes(records_flag);

  kforge::cli::ExportArgs export_args;
  auto* export_command =
      app.add_subcommand("export", "Write an output directory's results in another tool's format (read-only)");
  export_command->add_option("dir", export_args.dir, "Output directory of a run (holds kforge.db)")
      ->required()
      ->check(CLI::ExistingDirectory);
  export_command->add_option("--format", export_args.format,
                             "records, or a plugin's exporter (without it: the list of formats)");
  export_command->add_option("--to", export_args.to, "Directory to write into (default: the output directory)");
  export_command->add_option("--option", export_args.options, "KEY=VALUE for the exporter, e.g. --option level=2");

  // Usage errors are configuration errors: exit 2, as docs/cli.md says (CLI11's own codes
  // would collide with ours).
  std::vector<kforge::ReportFormat> formats;
  kforge::Thresholds thresholds;
  try {
    app.parse(argc, argv);
    formats = parse_formats(*report ? "--format" : "--report-format", formats_text);
    thresholds = parse_thresholds(min_pass_rate, min_fast_p);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitConfig;
  }

  auto logger = spdlog::stderr_color_mt("kforge");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("%^[%L %H:%M:%S.%e]%$ %v");

  try {
    if (*show) {
      if (!fs::exists(store_path(show_dir))) {
        spdlog::error("'{}' has no {}: is it the --out directory of a kforge run?", show_dir, kforge::kStoreFileName);
        return kExitConfig;
      }
      try {
        print_stdout(kforge::render_show(show_dir, show_task, show_sample));
      } catch (const kforge::ShowError& e) {
        spdlog::error("{}", e.what());
        return kExitConfig;
      }
      return kExitOk;
    }
    if (*compare) {
      std::vector<kforge::Metrics> strategies;
      for (const auto& dir : compare_dirs) {
        if (!fs::exists(store_path(dir))) {
          spdlog::error("'{}' has no {}: is it the --out directory of a kforge run?", dir, kforge::kStoreFileName);
          return kExitConfig;
        }
        strategies.push_back(kforge::load_report(dir).metrics);
      }
      const kforge::Table table = kforge::comparison_table(strategies);
      if (compare_format == "md") {
        print_stdout(kforge::render_markdown_tables({table}));
      } else {
        print_stdout(kforge::render_text({table}));
      }
      for (const auto& difference : kforge::environment_mismatches(strategies)) spdlog::warn("{}", difference);
      return kExitOk;
    }
    if (*schema && (schema_results || schema_report || schema_records)) {
      const auto which = schema_results  ? kforge::OutputSchema::Results
                         : schema_report ? kforge::OutputSchema::Report
                                         : kforge::OutputSchema::Records;
      print_stdout(kforge::output_schema(which));
      return kExitOk;
    }
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitRuntime;
  }

  kforge::Registry registry;
  const bool plugins_ok = load_plugins(registry, plugin_dirs);

  try {
    if (*export_command) return plugins_ok ? kforge::cli::run_export(export_args, registry) : kExitConfig;
    if (*report) {
      // The plugins' report sections add their tables: a half-loaded set would leave some out.
      if (!plugins_ok) return kExitConfig;
      if (!fs::exists(store_path(report_dir))) {
        spdlog::error("'{}' has no {}: is it the --out directory of a kforge run?", report_dir, kforge::kStoreFileName);
        return kExitConfig;
      }
      return report_and_gate(kforge::load_report(report_dir, &registry), report_dir, formats, thresholds,
                             ReportFor::Reader);
    }
    if (*list) {
      print_stdout(fmt::format("{:<24} {:<8} {:<12} {}\n", "KIND", "TYPE", "PLUGIN", "FILE"));
      for (const auto& s : registry.sources()) print_stdout(fmt::format("{:<24} {:<8} {:<12} {}\n", s.name, "source", s.plugin, s.file));
      for (const auto& s : registry.stages()) {
        print_stdout(fmt::format("{:<24} {:<8} {:<12} {}\n", s.name, s.waits() ? "waits" : "stage", s.plugin, s.file));
      }
      for (const auto& e : registry.exporters()) print_stdout(fmt::format("{:<24} {:<8} {:<12} {}\n", e.name, "exporter", e.plugin, e.file));
      for (const auto& r : registry.report_sections()) {
        print_stdout(fmt::format("{:<24} {:<8} {:<12} {}\n", r.name, "report", r.plugin, r.file));
      }
      return plugins_ok ? kExitOk : kExitConfig;
    }
    if (*describe) {
      if (const auto* s = registry.stage(kind_name)) {
        print_stdout(fmt::format("{} (stage kind, plugin {} {}, {})\n{}\n", s->name, s->plugin, s->version, s->file, s->doc));
        print_stdout(fmt::format("role: {}\n", kforge::to_string(s->role)));
        print_stdout(fmt::format("runs on: {}\n", s->waits() ? "its own threads (waits on I/O or processes)" : "TBB worker threads"));
        std::string routes = "pass, fail, error";
        for (const std::string& route : s->routes) routes += ", " + route;
        print_stdout(fmt::format("routes: {}\nparameters:\n", routes));
        print_params(s->params);
        return kExitOk;
      }
      if (const auto* s = registry.source(kind_name)) {
        print_stdout(fmt::format("{} (task source kind, plugin {} {}, {})\n{}\nparameters:\n", s->name, s->plugin, s->version, s->file,
                   s->doc));
        print_params(s->params);
        return kExitOk;
      }
      std::string hint;
      auto close = registry.closest(kind_name, false);
      for (auto& c : registry.closest(kind_name, true)) close.push_back(c);
      if (!close.empty()) hint = "; did you mean '" + close.front() + "'?";
      spdlog::error("no stage or source kind named '{}'{} (see `kforge plugins list`)", kind_name, hint);
      return kExitConfig;
    }
    if (*schema) {
      print_stdout(fmt::format("{}\n", kforge::pipeline_json_schema(registry)));
      return plugins_ok ? kExitOk : kExitConfig;
    }

    if (!plugins_ok) return kExitConfig;
    const kforge::Plan pipeline = kforge::load_pipeline(pipeline_path, registry, parse_overrides(sets));
    if (*validate) {
      // Create and destroy every stage: what the stages' own constructors refuse, run would too.
      kforge::Executor dry_run(pipeline);
      print_stdout(fmt::format("{}: ok ({} stages)\n", pipeline_path, pipeline.stages.size()));
      // Their run-start checks need the run's environment (API keys, programs on PATH): say
      // which were left to `run`, so an ok here is not read as more than it is.
      std::vector<std::string> deferred;
      if (pipeline.source.kind->preflight != nullptr) deferred.push_back("tasks (" + pipeline.source.kind->name + ")");
      for (const kforge::StagePlan& stage : pipeline.stages) {
        if (stage.kind->preflight != nullptr) deferred.push_back(fmt::format("{} ({})", stage.id, stage.kind->name));
      }
      if (!deferred.empty()) {
        print_stdout(fmt::format("not checked here: what the run's environment must provide (API keys, programs on PATH), which "
                   "`kforge run` checks before the first job, for: {}\n",
                   fmt::join(deferred, ", ")));
      }
      return kExitOk;
    }

    // run
    std::optional<tbb::global_control> threads;
    if (jobs > 0) threads.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(jobs));
    kforge::SessionOptions session_options;
    session_options.out_dir = out_dir.empty() ? default_out_dir(pipeline) : out_dir;
    session_options.resume = resume;
    session_options.use_cache = !no_cache;
    session_options.replay_measurements = replay_measurements;
    session_options.max_in_flight = max_in_flight;
    session_options.kforge_version = KFORGE_VERSION;
    kforge::RunSession session(pipeline, session_options);
    const kforge::ProgressMode mode = progress == "auto" ? kforge::progress_mode_for(stderr)
                                      : progress == "bar" ? kforge::ProgressMode::Bar
                                      : progress == "lines" ? kforge::ProgressMode::Lines
                                                            : kforge::ProgressMode::Off;
    kforge::ProgressObserver progress_display(mode, stderr, progress_interval, session.already_done());
    kforge::cli::set_running_run(&session.cancel_token());
    const kforge::SessionResult result = session.run(&progress_display);
    kforge::cli::set_running_run(nullptr);
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
    const int gate = report_and_gate(kforge::load_report(session_options.out_dir, &registry), session_options.out_dir,
                                     formats, thresholds, ReportFor::Run);
    if (result.summary.cancelled) return kExitInterrupted;
    if (!result.summary.source_error.empty()) return kExitRuntime;
    return gate;
  } catch (const kforge::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitConfig;
  } catch (const kforge::RunSetupError& e) {
    spdlog::error("{}", e.what());
    return kExitConfig;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitRuntime;
  }
}
