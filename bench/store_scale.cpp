// The run store at scale: TASKS x K jobs through bench/store_scale.yaml (two no-op stages)
// recorded as `kforge run` records them (every verdict and job in kforge.db, a line per
// job in results.jsonl, the run-end agreement check). Prints store write throughput and
// the runner's resident memory as the run goes (it must stay flat: O(jobs in flight)),
// then runs every command that reads the run as its own process, the kforge binary a user
// runs, and prints each one's wall time and peak resident memory: the report in every
// format, both exports, `show`, `compare` and `run --resume`. docs/performance.md records
// the output.
//
//   bench_store_scale [TASKS [K [DIR]]] [--kforge PATH] [--reuse]
//
// Defaults: 10000 tasks x k=10 into a temporary directory, this build's kforge. --kforge
// measures the commands of another build (an older kforge, for a before/after) on the
// same store; --reuse skips the run and measures the commands on the store an earlier
// call left in DIR.
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "engine/executor.hpp"
#include "engine/pipeline/load.hpp"
#include "engine/registry.hpp"
#include "rss.hpp"
#include "run/session.hpp"
#include "store/store.hpp"

namespace {

namespace fs = std::filesystem;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double mib(long kib) { return static_cast<double>(kib) / 1024.0; }

double file_mib(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0.0 : static_cast<double>(size) / (1 << 20);
}

// Samples RSS when the run crosses each tenth of its jobs, and its peak all along (until
// destroyed: a session's run-end check comes after its last job).
class RssProbe : public kforge::RunObserver {
 public:
  explicit RssProbe(uint64_t jobs) : jobs_(jobs) {
    sampler_ = std::thread([this] {
      while (!stop_) {
        peak_ = std::max(peak_.load(), kforge::bench::rss_kib());
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  ~RssProbe() override { stop(); }
  void stop() {
    if (stop_.exchange(true)) return;
    sampler_.join();
  }
  void job_finished(const kforge::Job&, const kforge::JobOutcome&) override {
    ++finished_;
    if (finished_ * 10 >= jobs_ * (samples.size() + 1)) samples.push_back(kforge::bench::rss_kib());
  }
  long peak() const { return peak_; }
  std::string tenths() const {
    std::vector<long> values;
    for (long s : samples) values.push_back(s / 1024);
    return fmt::format("{}", fmt::join(values, " "));
  }
  std::vector<long> samples;  // at 10%, 20%, ... 100% of the jobs

 private:
  uint64_t jobs_;
  uint64_t finished_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<long> peak_{0};
  std::thread sampler_;
};

// Runs the pipeline twice, without a store and as `kforge run` does, and prints what each cost.
int record_run(const fs::path& dir, const std::string& pipeline_file, int tasks, int k) {
  const uint64_t jobs = static_cast<uint64_t>(tasks) * static_cast<uint64_t>(k);
  kforge::Registry registry;
  registry.load(std::string(KFORGE_BENCH_PLUGIN_DIR) + "/libkforge_demo.so");
  const kforge::Overrides overrides{{{"tasks", std::to_string(tasks)}, {"k", std::to_string(k)}}};
  const kforge::Plan pipeline = kforge::load_pipeline(pipeline_file, registry, overrides);
  const long rss_start = kforge::bench::rss_kib();

  // The same run without the store, for scale: what the store adds per job.
  double bare_seconds = 0;
  {
    RssProbe probe(jobs);
    kforge::Executor executor(pipeline);
    const double start = now();
    executor.run(probe);
    bare_seconds = now() - start;
  }

  kforge::SessionOptions options;
  options.out_dir = dir.string();
  options.kforge_version = "bench";
  RssProbe probe(jobs);
  const double start = now();
  kforge::SessionResult result;
  {
    kforge::RunSession session(pipeline, options);
    result = session.run(&probe);
  }
  const double run_seconds = now() - start;
  probe.stop();
  if (result.status != kforge::RunStatus::Finished || result.summary.jobs != jobs) {
    fmt::print(stderr, "run failed: {} {} ({} of {} jobs)\n", result.write_failure, result.disagreement,
               result.summary.jobs, jobs);
    return 1;
  }
  const uint64_t attempts = jobs * pipeline.stages.size();
  fmt::print("store_scale: {} tasks x k={} = {} jobs, {} stage verdicts, 2 no-op stages, max_in_flight 256\n", tasks, k,
             jobs, attempts);
  fmt::print("run without a store:   {:.2f} s, {:.0f} jobs/s\n", bare_seconds, static_cast<double>(jobs) / bare_seconds);
  fmt::print("run with the store:    {:.2f} s, {:.0f} jobs/s, {:.0f} verdicts/s written (one transaction each), "
             "with results.jsonl and the run-end check\n",
             run_seconds, static_cast<double>(jobs) / run_seconds, static_cast<double>(attempts) / run_seconds);
  fmt::print("runner RSS:            {:.0f} MiB before; at 10%..100% of jobs: {} MiB; peak {:.0f} MiB (with the run-end check)\n",
             mib(rss_start), probe.tenths(), mib(probe.peak()));
  fmt::print("kforge.db:             {:.1f} MiB (+ WAL {:.1f} MiB), results.jsonl {:.1f} MiB\n",
             file_mib(dir / kforge::kStoreFileName), file_mib(dir / "kforge.db-wal"), file_mib(dir / "results.jsonl"));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  std::string kforge = KFORGE_BENCH_KFORGE;
  bool reuse = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--kforge" && i + 1 < argc) {
      kforge = argv[++i];
    } else if (arg == "--reuse") {
      reuse = true;
    } else {
      positional.push_back(arg);
    }
  }
  const int tasks = positional.size() > 0 ? std::atoi(positional[0].c_str()) : 10000;
  const int k = positional.size() > 1 ? std::atoi(positional[1].c_str()) : 10;
  const bool temporary = positional.size() <= 2;
  const fs::path dir = temporary ? fs::temp_directory_path() / fmt::format("kforge-store-scale-{}", getpid())
                                 : fs::path(positional[2]);
  const std::string pipeline_file = std::string(KFORGE_BENCH_SOURCE_DIR) + "/store_scale.yaml";
  if (reuse && !fs::exists(dir / kforge::kStoreFileName)) {
    fmt::print(stderr, "--reuse: {} holds no store; run without --reuse first\n", dir.string());
    return 2;
  }
  if (!reuse) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    if (const int failed = record_run(dir, pipeline_file, tasks, k)) return failed;
  }

  // Each command as a user runs it, in a process of its own. Ids are 0000, 0001, ...
  const std::string out = dir.string();
  const std::string exports = (dir / "export").string();
  const std::string some_task = fmt::format("{:04}", tasks / 2);
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"report (text, md, json, html, junit)", {kforge, "report", out, "--format", "text,md,json,html,junit"}},
      {"export --format records", {kforge, "export", out, "--format", "records", "--to", exports}},
      {"export --format kernelbench", {kforge, "export", out, "--format", "kernelbench", "--to", exports}},
      {"show " + some_task, {kforge, "show", out, some_task}},
      {"compare DIR DIR", {kforge, "compare", out, out}},
      {"run --resume (all done: reconcile, check, report)",
       {kforge, "run", pipeline_file, "--out", out, "--resume", "--progress", "off", "--set",
        "tasks=" + std::to_string(tasks), "--set", "k=" + std::to_string(k)}},
  };
  fmt::print("commands ({}), each its own process:\n", kforge);
  fmt::print("  {:<50} {:>5} {:>9} {:>9} {:>10}\n", "command", "exit", "wall s", "CPU s", "peak MiB");
  int status = 0;
  for (size_t i = 0; i < commands.size(); ++i) {
    const std::string log = (dir / fmt::format("command-{}.log", i)).string();
    const kforge::bench::ChildUsage used = kforge::bench::run_child(commands[i].second, log);
    fmt::print("  {:<50} {:>5} {:>9.2f} {:>9.2f} {:>10.1f}\n", commands[i].first, used.exit_code, used.seconds,
               used.cpu_seconds, mib(used.peak_kib));
    if (used.exit_code != 0) {
      fmt::print("    failed: see {}\n", log);
      status = 1;
    }
    std::fflush(stdout);  // each row as it comes: the largest runs take minutes per command
  }
  fmt::print("files: report.html {:.1f} MiB, report.json {:.1f} MiB, report.md {:.1f} MiB, junit.xml {:.1f} MiB, "
             "records.jsonl {:.1f} MiB, eval_results.json {:.1f} MiB\n",
             file_mib(dir / "report.html"), file_mib(dir / "report.json"), file_mib(dir / "report.md"),
             file_mib(dir / "junit.xml"), file_mib(dir / "export" / "records.jsonl"),
             file_mib(dir / "export" / "eval_results.json"));
  if (temporary) fs::remove_all(dir);
  return status;
}
