// Runtime overhead of a 5-stage no-op pipeline: per job per stage hop, jobs/s, and the
// peak resident memory while 1e4, 1e5 and 1e6 jobs stream through (it must stay flat:
// memory is O(jobs in flight), not O(jobs)). With timeouts on its stages, what a hop costs
// when every call is guarded by its deadline (a thread of its own, a copy of the job).
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "engine/executor.hpp"
#include "rss.hpp"
#include "support/hand_built_pipeline.hpp"
#include "engine/registry.hpp"

namespace {

constexpr int kStages = 5;


kforge::testing::PipelineSpec noop_pipeline(int64_t tasks, double timeout_seconds) {
  std::vector<kforge::testing::StageSpec> stages;
  for (int i = 0; i < kStages; ++i) {
    const std::string next = i + 1 < kStages ? "s" + std::to_string(i + 1) : kforge::testing::kEndTarget;
    stages.push_back(kforge::testing::stage("s" + std::to_string(i), "demo.noop", next));
    stages.back().timeout_seconds = timeout_seconds;
  }
  return kforge::testing::range_pipeline("bench", static_cast<int>(tasks), std::move(stages), 1, "t");
}

class CountFinished : public kforge::RunObserver {
 public:
  void job_finished(const kforge::Job&, const kforge::JobOutcome&) override { ++finished; }
  uint64_t finished = 0;
};

// state.range(1): the stages' timeout in seconds, 0 for none.
void BM_NoopPipeline(benchmark::State& state) {
  static kforge::Registry registry;
  if (registry.stage("demo.noop") == nullptr) registry.load(std::string(KFORGE_BENCH_PLUGIN_DIR) + "/libkforge_demo.so");
  const int64_t jobs = state.range(0);
  const kforge::Plan pipeline =
      kforge::testing::compile(registry, noop_pipeline(jobs, static_cast<double>(state.range(1))));
  long peak_delta = 0;
  double seconds = 0;
  for (auto _ : state) {
    kforge::Executor executor(pipeline);
    CountFinished observer;
    const long before = kforge::bench::rss_kib();
    std::atomic<bool> done{false};
    long peak = before;
    std::thread sampler([&] {
      while (!done.load()) {
        peak = std::max(peak, kforge::bench::rss_kib());
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
    const auto start = std::chrono::steady_clock::now();
    executor.run(observer);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    done = true;
    sampler.join();
    peak_delta = std::max(peak_delta, peak - before);
    if (observer.finished != static_cast<uint64_t>(jobs)) state.SkipWithError("not every job finished");
  }
  const double hops = static_cast<double>(jobs) * kStages;
  state.counters["jobs_per_s"] = benchmark::Counter(static_cast<double>(jobs), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["ns_per_hop"] = seconds * 1e9 / (hops * static_cast<double>(state.iterations()));
  state.counters["rss_growth_MiB"] = static_cast<double>(peak_delta) / 1024.0;
}

BENCHMARK(BM_NoopPipeline)
    ->Args({10'000, 0})
    ->Args({100'000, 0})
    ->Args({1'000'000, 0})
    ->Args({10'000, 60})
    ->Args({100'000, 60})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
