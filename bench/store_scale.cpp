// The run store at scale: TASKS x K jobs through a two-stage no-op pipeline with every
// verdict and job written to kforge.db as a real run does. Prints store write throughput,
// the runner's resident memory as the run goes (it must stay flat: O(jobs in flight)),
// and the time to build every report from the store. docs/performance.md records the output.
//
//   bench_store_scale [TASKS [K [DIR]]]    defaults: 10000 10, a temporary directory
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/executor.hpp"
#include "rss.hpp"
#include "support/hand_built_pipeline.hpp"
#include "run/fan_out_observer.hpp"
#include "engine/registry.hpp"
#include "report/report.hpp"
#include "run/store/recorder.hpp"
#include "run/store/store.hpp"
#include "run/store/verdict_cache.hpp"

namespace {

namespace fs = std::filesystem;


double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

kforge::testing::PipelineSpec noop_pipeline(int tasks, int k) {
  using namespace kforge::testing;
  PipelineSpec p =
      range_pipeline("store-scale", tasks, {stage("generate", "demo.noop", "evaluate"), stage("evaluate", "demo.noop")}, k, "t");
  p.max_in_flight = 256;
  return p;
}

// Samples RSS when the run crosses each tenth of its jobs, and its peak all along.
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
  ~RssProbe() override {
    stop_ = true;
    sampler_.join();
  }
  void job_finished(const kforge::Job&, const kforge::JobOutcome&) override {
    ++finished_;
    if (finished_ * 10 >= jobs_ * (samples.size() + 1)) samples.push_back(kforge::bench::rss_kib());
  }
  long peak() const { return peak_; }
  std::vector<long> samples;  // at 10%, 20%, ... 100% of the jobs

 private:
  uint64_t jobs_;
  uint64_t finished_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<long> peak_{0};
  std::thread sampler_;
};

}  // namespace

int main(int argc, char** argv) {
  const int tasks = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int k = argc > 2 ? std::atoi(argv[2]) : 10;
  const bool temporary = argc <= 3;
  const fs::path dir = temporary ? fs::temp_directory_path() / fmt::format("kforge-store-scale-{}", getpid()) : fs::path(argv[3]);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const uint64_t jobs = static_cast<uint64_t>(tasks) * static_cast<uint64_t>(k);

  kforge::Registry registry;
  registry.load(std::string(KFORGE_BENCH_PLUGIN_DIR) + "/libkforge_demo.so");
  const kforge::Plan pipeline = kforge::testing::compile(registry, noop_pipeline(tasks, k));
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

  double run_seconds = 0;
  long peak = 0;
  std::vector<long> samples;
  {
    kforge::Store store((dir / kforge::kStoreFileName).string());
    const int64_t run = store.begin_run(kforge::describe_run(pipeline, "bench"));
    kforge::CancelToken cancel;
    kforge::RunRecorder recorder(store, run, cancel);
    RssProbe probe(jobs);
    kforge::FanOutObserver observers{&recorder, &probe};
    kforge::Executor executor(pipeline);
    const double start = now();
    const kforge::RunSummary summary = executor.run(observers);
    run_seconds = now() - start;
    store.end_run(run, kforge::RunStatus::Finished);
    if (!recorder.failure().empty() || summary.jobs != jobs) {
      fmt::print(stderr, "run failed: {} ({} of {} jobs)\n", recorder.failure(), summary.jobs, jobs);
      return 1;
    }
    peak = probe.peak();
    samples = probe.samples;
  }
  const uint64_t attempts = jobs * pipeline.stages.size();

  const double report_start = now();
  const kforge::Report report = kforge::load_report(dir.string());
  const double load_seconds = now() - report_start;
  kforge::write_report_files(report, dir.string(),
                             {kforge::ReportFormat::Markdown, kforge::ReportFormat::Json, kforge::ReportFormat::Html,
                              kforge::ReportFormat::Junit});
  const size_t text_bytes = kforge::render_text(kforge::report_tables(report.metrics)).size();
  const double report_seconds = now() - report_start;

  fmt::print("store_scale: {} tasks x k={} = {} jobs, {} stage verdicts, 2 no-op stages, max_in_flight 256\n", tasks, k,
             jobs, attempts);
  fmt::print("run without a store:   {:.2f} s, {:.0f} jobs/s\n", bare_seconds, static_cast<double>(jobs) / bare_seconds);
  fmt::print("run with the store:    {:.2f} s, {:.0f} jobs/s, {:.0f} verdicts/s written (one transaction each)\n",
             run_seconds, static_cast<double>(jobs) / run_seconds, static_cast<double>(attempts) / run_seconds);
  fmt::print("runner RSS:            {} MiB before, peak {} MiB; at 10%..100% of jobs: {} MiB\n", rss_start / 1024,
             peak / 1024, fmt::join([&] {
               std::vector<long> mib;
               for (long s : samples) mib.push_back(s / 1024);
               return mib;
             }(),
                                    " "));
  fmt::print("kforge.db:             {:.1f} MiB (+ WAL {:.1f} MiB)\n",
             static_cast<double>(fs::file_size(dir / kforge::kStoreFileName)) / (1 << 20),
             fs::exists(dir / "kforge.db-wal") ? static_cast<double>(fs::file_size(dir / "kforge.db-wal")) / (1 << 20) : 0.0);
  fmt::print("report:                {:.2f} s to load and compute, {:.2f} s with md, json, html, junit and text ({} tasks, "
             "pass rate {})\n",
             load_seconds, report_seconds, report.metrics.tasks, kforge::format_share(report.metrics.solved));
  fmt::print("                       RSS after the report {} MiB; html {:.1f} MiB, text tables {} bytes\n",
             kforge::bench::rss_kib() / 1024, static_cast<double>(fs::file_size(dir / "report.html")) / (1 << 20), text_bytes);
  if (temporary) fs::remove_all(dir);
  return 0;
}
