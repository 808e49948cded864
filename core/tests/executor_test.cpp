// The executor on hand-built pipelines (no YAML), with the demo plugin's stages.
#include "engine/executor.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "run/results.hpp"
#include "support/hand_built_pipeline.hpp"

namespace {

using kforge::Job;
using kforge::testing::PipelineSpec;
using kforge::testing::StageSpec;
using kforge::VerdictStatus;
using kforge::testing::route;
using kforge::testing::scalar;
using kforge::testing::set_route;
using kforge::testing::stage;
using kforge::testing::string_list;

PipelineSpec pipeline(int tasks, std::vector<StageSpec> stages, int k = 1) {
  return kforge::testing::range_pipeline("test", tasks, std::move(stages), k);
}

StageSpec judge(std::string id, std::string next, std::vector<std::string> fail, std::vector<std::string> error = {},
                std::vector<std::string> throws = {}, std::vector<std::string> special = {}) {
  StageSpec s = stage(std::move(id), "demo.judge", std::move(next));
  s.config.values["fail"] = string_list(std::move(fail));
  s.config.values["error"] = string_list(std::move(error));
  s.config.values["throw"] = string_list(std::move(throws));
  s.config.values["route"] = string_list(std::move(special));
  s.config.values["fail_class"] = scalar(KF_PARAM_STRING, "demo_fail");
  s.config.values["error_class"] = scalar(KF_PARAM_STRING, "demo_error");
  s.routes.push_back(route("special", kforge::testing::kEndTarget));
  return s;
}

StageSpec timed(std::string id, std::string uses, double seconds, int concurrency,
                std::string next = kforge::testing::kEndTarget) {
  StageSpec s = stage(std::move(id), std::move(uses), std::move(next));
  s.config.values["seconds"] = scalar(KF_PARAM_FLOAT, std::to_string(seconds));
  s.concurrency = concurrency;
  return s;
}

std::string task_id(int i) {
  std::string n = std::to_string(i);
  return "task-" + std::string(4 - std::min<size_t>(4, n.size()), '0') + n;
}

struct Finished {
  uint64_t index;
  std::string task;
  VerdictStatus status;
  std::vector<std::string> stages;
  std::string error_class;
  std::string message;
  int round;
  double max_concurrent;
  std::string line;
};

class Collector : public kforge::RunObserver {
 public:
  void verdict(const Job&, const kforge::Verdict&) override { ++verdicts; }
  void job_finished(const Job& job, const kforge::JobOutcome& outcome) override {
    Finished f{job.index, job.task->id(), job.final_status(), {}, {}, {}, job.round, 0, kforge::result_line(outcome)};
    for (const auto& v : job.verdicts) {
      f.stages.push_back(v.stage);
      for (const auto& [name, value] : v.metrics) {
        if (name == "concurrent") f.max_concurrent = std::max(f.max_concurrent, value);
      }
    }
    if (const auto* last = job.last()) {
      f.error_class = last->error_class;
      f.message = last->message;
    }
    // Jobs finish in any order; kept by job index, so that tests can look a job up.
    const auto at = std::lower_bound(finished.begin(), finished.end(), f.index,
                                     [](const Finished& a, uint64_t index) { return a.index < index; });
    finished.insert(at, std::move(f));
    ++finished_so_far;
  }
  double peak() const {
    double p = 0;
    for (const auto& f : finished) p = std::max(p, f.max_concurrent);
    return p;
  }
  std::atomic<int> verdicts{0};
  std::vector<Finished> finished;  // by job index
  std::atomic<int> finished_so_far{0};
};

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override { registry.load(std::string(KFORGE_TEST_PLUGIN_DIR) + "/libkforge_demo.so"); }

  kforge::RunSummary run(const PipelineSpec& p, Collector& c, kforge::RunOptions options = {}) {
    const kforge::Plan plan = kforge::testing::compile(registry, p);
    kforge::Executor executor(plan);
    return executor.run(c, options);
  }

  kforge::Registry registry;
};

TEST_F(ExecutorTest, LinearPipelinePassesEveryJobInOrder) {
  Collector c;
  auto summary = run(pipeline(50, {stage("a", "demo.noop", "b"), stage("b", "demo.noop")}, 2), c);
  EXPECT_EQ(summary.tasks, 50u);
  EXPECT_EQ(summary.jobs, 100u);
  EXPECT_EQ(summary.passed, 100u);
  ASSERT_EQ(c.finished.size(), 100u);
  for (size_t i = 0; i < c.finished.size(); ++i) {
    EXPECT_EQ(c.finished[i].index, i);
    EXPECT_EQ(c.finished[i].stages, (std::vector<std::string>{"a", "b"}));
  }
}

// A fix round is for the candidate's own faults: an error verdict (or a fail whose class
// blames the harness) never enters a fix stage, whatever the plan's routes say (here
// hand-built: the loader would refuse the error route).
TEST_F(ExecutorTest, ErrorVerdictsNeverEnterAFixStage) {
  auto check = judge("check", kforge::testing::kEndTarget, {task_id(0)}, {task_id(1)});
  set_route(check, "fail", "fix", 2);
  set_route(check, "error", "fix", 2);
  auto fix = stage("fix", "demo.mend", "check");
  Collector c;
  run(pipeline(2, {check, fix}), c);
  ASSERT_EQ(c.finished.size(), 2u);
  EXPECT_EQ(c.finished[0].stages, (std::vector<std::string>{"check", "fix", "check", "fix", "check"}));
  EXPECT_EQ(c.finished[0].round, 2);
  EXPECT_EQ(c.finished[1].stages, (std::vector<std::string>{"check"}));
  EXPECT_EQ(c.finished[1].status, VerdictStatus::Error);
  EXPECT_EQ(c.finished[1].round, 0);

  // A fail whose class says the harness failed is an error verdict.
  check.config.values["fail_class"] = scalar(KF_PARAM_STRING, KF_ERROR_HARNESS);
  Collector blamed;
  run(pipeline(1, {check, fix}), blamed);
  ASSERT_EQ(blamed.finished.size(), 1u);
  EXPECT_EQ(blamed.finished[0].stages, (std::vector<std::string>{"check"}));
  EXPECT_EQ(blamed.finished[0].status, VerdictStatus::Error);
  EXPECT_EQ(blamed.finished[0].error_class, KF_ERROR_HARNESS);
}

TEST_F(ExecutorTest, RoutesByVerdict) {
  auto check = judge("check", "after", {task_id(1)}, {task_id(2)}, {}, {task_id(3)});
  set_route(check, "fail", "on_fail");
  set_route(check, "special", "on_special");
  // error is not routed explicitly: it ends the job (the loader's default too).
  Collector c;
  auto summary = run(pipeline(4, {check, stage("after", "demo.noop"), stage("on_fail", "demo.noop"),
                                  stage("on_special", "demo.noop")}),
                     c);
  ASSERT_EQ(c.finished.size(), 4u);
  EXPECT_EQ(c.finished[0].stages, (std::vector<std::string>{"check", "after"}));
  EXPECT_EQ(c.finished[1].stages, (std::vector<std::string>{"check", "on_fail"}));
  EXPECT_EQ(c.finished[2].stages, (std::vector<std::string>{"check"}));
  EXPECT_EQ(c.finished[2].status, VerdictStatus::Error);
  EXPECT_EQ(c.finished[3].stages, (std::vector<std::string>{"check", "on_special"}));
  EXPECT_EQ(summary.errors, 1u);
}

TEST_F(ExecutorTest, StageThatFailsTwiceThenPassesIsSeenThreeTimes) {
  StageSpec flaky = stage("flaky", "demo.flaky", "done");
  flaky.config.values["failures"] = scalar(KF_PARAM_INT, "2");
  set_route(flaky, "fail", "flaky", /*max_rounds=*/5);
  Collector c;
  run(pipeline(3, {flaky, stage("done", "demo.noop")}), c);
  ASSERT_EQ(c.finished.size(), 3u);
  for (const auto& f : c.finished) {
    EXPECT_EQ(f.stages, (std::vector<std::string>{"flaky", "flaky", "flaky", "done"}));
    EXPECT_EQ(f.status, VerdictStatus::Pass);
    EXPECT_EQ(f.round, 2);
  }
}

TEST_F(ExecutorTest, BoundedEdgeStopsAfterMaxRounds) {
  StageSpec flaky = stage("flaky", "demo.flaky", "done");
  flaky.config.values["failures"] = scalar(KF_PARAM_INT, "5");
  set_route(flaky, "fail", "flaky", /*max_rounds=*/1);
  Collector c;
  run(pipeline(2, {flaky, stage("done", "demo.noop")}), c);
  ASSERT_EQ(c.finished.size(), 2u);
  EXPECT_EQ(c.finished[0].stages, (std::vector<std::string>{"flaky", "flaky"}));
  EXPECT_EQ(c.finished[0].status, VerdictStatus::Fail);
  EXPECT_EQ(c.finished[0].round, 1);
}

TEST_F(ExecutorTest, ExceptionInPluginFailsThatJobOnly) {
  Collector c;
  auto summary = run(pipeline(5, {judge("j", "after", {}, {}, {task_id(2)}), stage("after", "demo.noop")}), c);
  ASSERT_EQ(c.finished.size(), 5u);
  EXPECT_EQ(c.finished[2].status, VerdictStatus::Error);
  EXPECT_EQ(c.finished[2].error_class, "plugin_error");
  EXPECT_NE(c.finished[2].message.find("told to throw on task-0002"), std::string::npos);
  EXPECT_EQ(summary.passed, 4u);
  EXPECT_EQ(summary.errors, 1u);
}

TEST_F(ExecutorTest, WaitingStageConcurrencyLimitIsHonoured) {
  Collector c;
  run(pipeline(24, {timed("sleep", "demo.sleep", 0.02, 3)}), c);
  EXPECT_EQ(c.finished.size(), 24u);
  EXPECT_LE(c.peak(), 3);
  EXPECT_GE(c.peak(), 2);  // it did run in parallel
}

// A waiting stage takes the job furthest along its fix loop first: a job back from a fix
// reaches its next verdict (and its next LLM call) while first-round jobs still keep the
// stage busy, rather than after all of them, when nothing is left to overlap the call with.
TEST_F(ExecutorTest, AWaitingStageTakesTheJobsFurthestAlongTheirFixLoopFirst) {
  class Order : public Collector {
   public:
    void verdict(const Job& job, const kforge::Verdict& v) override {
      std::lock_guard lock(mutex);
      if (v.stage == "sleep") seen.emplace_back(job.task->id(), v.round);
    }
    std::mutex mutex;
    std::vector<std::pair<std::string, int>> seen;
  };
  StageSpec sleep = timed("sleep", "demo.sleep", 0.02, 1, "flaky");
  StageSpec flaky = stage("flaky", "demo.flaky");
  flaky.config.values["failures"] = scalar(KF_PARAM_INT, "1");
  set_route(flaky, "fail", "sleep", /*max_rounds=*/1);
  Order c;
  run(pipeline(20, {sleep, flaky}), c);
  ASSERT_EQ(c.seen.size(), 40u);
  const auto at = [&](const std::string& task, int round) {
    return std::find(c.seen.begin(), c.seen.end(), std::pair{task, round}) - c.seen.begin();
  };
  EXPECT_LT(at(task_id(0), 1), at(task_id(19), 0)) << "the first job's second visit waited for every first visit";
}

TEST_F(ExecutorTest, CpuStageConcurrencyLimitIsHonoured) {
  Collector c;
  run(pipeline(200, {timed("busy", "demo.busy", 0.0005, 1)}), c);
  EXPECT_EQ(c.finished.size(), 200u);
  EXPECT_EQ(c.peak(), 1);
}

TEST_F(ExecutorTest, SixtyFourSleepingJobsOverlapOnFewCores) {
  Collector c;
  const auto start = std::chrono::steady_clock::now();
  run(pipeline(64, {timed("sleep", "demo.sleep", 0.5, 64)}), c);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(c.finished.size(), 64u);
  // Every call saw all 64 inside at once at its peak: they overlapped.
  EXPECT_EQ(c.peak(), 64) << "only " << c.peak() << " sleeping jobs were in flight together";
  EXPECT_LT(seconds, 0.5 * 8) << "64 x 0.5 s took " << seconds << " s";
}

TEST_F(ExecutorTest, TenThousandJobs) {
  Collector c;
  auto p = pipeline(10000, {stage("a", "demo.noop", "b"), judge("b", "c", {task_id(7)}), stage("c", "demo.noop")});
  p.max_in_flight = 64;
  auto summary = run(p, c);
  EXPECT_EQ(summary.jobs, 10000u);
  EXPECT_EQ(summary.passed, 9999u);
  EXPECT_EQ(summary.failed, 1u);
  ASSERT_EQ(c.finished.size(), 10000u);
  EXPECT_TRUE(std::is_sorted(c.finished.begin(), c.finished.end(),
                             [](const Finished& a, const Finished& b) { return a.index < b.index; }));
}

TEST_F(ExecutorTest, EveryJobsOutcomeIsTheSameRegardlessOfTiming) {
  auto make = [&](int concurrency) {
    auto check = judge("check", "sleep", {task_id(3), task_id(9)}, {task_id(5)});
    set_route(check, "fail", "flaky");
    StageSpec flaky = stage("flaky", "demo.flaky", "sleep");
    flaky.config.values["failures"] = scalar(KF_PARAM_INT, "1");
    set_route(flaky, "fail", "flaky", 3);
    return pipeline(30, {check, flaky, timed("sleep", "demo.sleep", 0.001, concurrency)}, 2);
  };
  auto strip = [](const Collector& c) {
    std::vector<std::string> out;
    for (const auto& f : c.finished) {
      std::string s = f.task + ":" + std::to_string(static_cast<int>(f.status)) + ":" + std::to_string(f.round);
      for (const auto& st : f.stages) s += "," + st;
      out.push_back(s);
    }
    return out;
  };
  Collector one, many;
  run(make(1), one);
  run(make(16), many);
  EXPECT_EQ(strip(one), strip(many));
  EXPECT_EQ(one.finished.size(), 60u);
}

TEST_F(ExecutorTest, CancellationStopsIntakeAndKeepsFinishedResults) {
  Collector c;
  kforge::CancelToken cancel;
  std::thread canceller([&cancel] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel.request();
  });
  auto p = pipeline(1000, {timed("sleep", "demo.sleep", 0.05, 4, "after"), stage("after", "demo.noop")});
  kforge::RunOptions options;
  options.cancel = &cancel;
  auto summary = run(p, c, options);
  canceller.join();
  EXPECT_TRUE(summary.cancelled);
  EXPECT_GT(summary.jobs, 0u);
  EXPECT_LT(summary.jobs, 1000u);
  EXPECT_EQ(c.finished.size(), summary.jobs);
  for (const auto& f : c.finished) {
    EXPECT_EQ(f.stages, (std::vector<std::string>{"sleep", "after"}));  // finished ones are whole
  }
}

// demo.sleep answers a cancellation with an error, as a harness call or an LLM request
// abandoned mid-way does. That error judges nothing: the jobs are unfinished, not failed.
TEST_F(ExecutorTest, AStageThatGivesUpOnCancellationLeavesItsJobUnfinished) {
  Collector c;
  kforge::CancelToken cancel;
  std::thread canceller([&cancel] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel.request();
  });
  kforge::RunOptions options;
  options.cancel = &cancel;
  const auto start = std::chrono::steady_clock::now();
  auto summary =
      run(pipeline(8, {timed("sleep", "demo.sleep", 30.0, 4, "after"), stage("after", "demo.noop")}), c, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  canceller.join();
  EXPECT_TRUE(summary.cancelled);
  EXPECT_EQ(summary.jobs, 0u);
  EXPECT_EQ(summary.errors, 0u);
  EXPECT_GE(summary.unfinished, 4u);  // the four inside the stage, at least
  EXPECT_TRUE(c.finished.empty());
  EXPECT_EQ(c.verdicts.load(), 0) << "an abandoned call must not be recorded as an attempt";
  EXPECT_LT(seconds, 10.0);
}

// A CPU-bound call that never looks at its deadline is left behind at the timeout (plus a
// second's grace): the job leaves with stage_timeout while the call spins on, its result
// dropped when it comes.
TEST_F(ExecutorTest, AStageThatNeverPollsItsDeadlineIsLeftBehindOnTime) {
  StageSpec s = timed("busy", "demo.busy", 3.0, 2, "after");  // spins on 3 s in this process
  s.timeout_seconds = 0.2;
  Collector c;
  const auto start = std::chrono::steady_clock::now();
  const auto summary = run(pipeline(2, {s, stage("after", "demo.noop")}), c);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(summary.errors, 2u);
  ASSERT_EQ(c.finished.size(), 2u);
  for (const auto& f : c.finished) {
    EXPECT_EQ(f.status, VerdictStatus::Error);
    EXPECT_EQ(f.error_class, "stage_timeout");
    EXPECT_NE(f.message.find("did not return within its timeout of 0.200 s"), std::string::npos) << f.message;
    EXPECT_EQ(f.stages, (std::vector<std::string>{"busy"}));
  }
  EXPECT_LT(seconds, 0.2 + 1.0 + 1.5) << "timeout, grace, and the executor's short wait for the abandoned calls";
}

TEST_F(ExecutorTest, StageTimeoutBecomesAnError) {
  StageSpec s = timed("sleep", "demo.sleep", 5.0, 2);
  s.timeout_seconds = 0.05;
  Collector c;
  const auto start = std::chrono::steady_clock::now();
  run(pipeline(2, {s}), c);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(c.finished.size(), 2u);
  EXPECT_EQ(c.finished[0].status, VerdictStatus::Error);
  EXPECT_LT(seconds, 2.0);
}

TEST_F(ExecutorTest, SkipPredicateLeavesDoneJobsOut) {
  Collector c;
  kforge::RunOptions options;
  options.skip = [](const kforge::Task& task, int sample) { return task.index % 2 == 0 && sample == 0; };
  auto summary = run(pipeline(10, {stage("a", "demo.noop")}, 2), c, options);
  EXPECT_EQ(summary.skipped, 5u);
  EXPECT_EQ(summary.jobs, 15u);
}

class MemoryCache : public kforge::VerdictCache {
 public:
  std::optional<kforge::CachedVerdict> find(const std::string& key) override {
    std::lock_guard lock(mutex);
    auto it = entries.find(key);
    if (it == entries.end()) return std::nullopt;
    ++hits;
    return it->second;
  }
  void put(const std::string& key, const kforge::CachedVerdict& entry) override {
    std::lock_guard lock(mutex);
    entries[key] = entry;
  }
  std::mutex mutex;
  std::map<std::string, kforge::CachedVerdict> entries;
  int hits = 0;
};

TEST_F(ExecutorTest, CacheableStageIsAnsweredFromTheCacheTheSecondTime) {
  MemoryCache cache;
  kforge::RunOptions options;
  options.cache = &cache;
  auto p = pipeline(6, {judge("check", "after", {task_id(1)}, {task_id(2)}), stage("after", "demo.noop")});
  Collector first, second;
  run(p, first, options);
  EXPECT_EQ(cache.hits, 0);
  EXPECT_EQ(cache.entries.size(), 5u);  // the error verdict is not cached
  run(p, second, options);
  EXPECT_EQ(cache.hits, 5);
  ASSERT_EQ(second.finished.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(first.finished[i].status, second.finished[i].status);
    EXPECT_EQ(first.finished[i].stages, second.finished[i].stages);
  }
  EXPECT_NE(second.finished[0].line.find("\"cached\":true"), std::string::npos) << second.finished[0].line;
}

TEST_F(ExecutorTest, StageCreationErrorNamesTheStage) {
  StageSpec s = stage("broken", "demo.noop");
  // A hand-built plan skips the loader's checks: the source's required count is missing.
  auto draft = pipeline(1, {s});
  draft.source_config.values.erase("count");
  const kforge::Plan plan = kforge::testing::compile(registry, draft);
  try {
    kforge::Executor executor(plan);
    FAIL() << "a source without its required count must not be created";
  } catch (const kforge::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 'count' is not available"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("demo.range"), std::string::npos) << e.what();
  }
}

// Two runs in one process cancel independently: the token belongs to the run.
TEST_F(ExecutorTest, CancellingOneRunLeavesAnotherRunning) {
  kforge::CancelToken cancelled;
  cancelled.request();
  kforge::CancelToken running;
  Collector stopped, finished;
  kforge::RunOptions stop;
  stop.cancel = &cancelled;
  kforge::RunOptions go;
  go.cancel = &running;
  const auto p = pipeline(5, {timed("sleep", "demo.sleep", 0.01, 2)});
  std::thread other([&] { run(p, stopped, stop); });
  const auto summary = run(p, finished, go);
  other.join();
  EXPECT_EQ(stopped.finished.size(), 0u);
  EXPECT_FALSE(summary.cancelled);
  EXPECT_EQ(finished.finished.size(), 5u);
}

}  // namespace
