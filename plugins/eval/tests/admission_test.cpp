// Memory-aware admission through the real harness on the CPU, with a made-up device
// budget (memory_gb): the harness teaches the pool each task's need, a task bigger than
// the budget is a task_error that says so, and an out-of-memory beside another job is
// retried with the device to itself, while one alone is the candidate's.
#include "harness_pool.hpp"
#include "harness_stages.hpp"
#include "test_env.hpp"

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace kforge::eval {
namespace {

std::string harness_task(const std::string& name) { return testing::harness_dir() + "/tests/data/tasks/" + name + ".py"; }
std::string harness_candidate(const std::string& name) {
  return testing::read_file(testing::harness_dir() + "/tests/data/candidates/" + name + ".py");
}

EvalJob task_job(const std::string& task, std::optional<std::string> code) {
  EvalJob job;
  job.task_id = task;
  job.task_path = harness_task(task);
  job.code = std::move(code);
  job.language = "python";
  return job;
}

// A pool on "cpu" with a budget of 2 GiB and no headroom or per-job overhead: the numbers
// below are the tasks' own.
std::shared_ptr<HarnessPool> budget_pool() {
  HarnessSettings settings = testing::test_harness_settings(2);
  settings.memory.memory_gb = 2;
  settings.memory.headroom_gb = 0;
  settings.memory.per_job_mb = 0;
  return std::make_shared<HarnessPool>(settings);
}

RunStage run_stage(std::shared_ptr<HarnessPool> pool) {
  RunStage::Options options;
  options.trials = 1;
  options.limits = ChildLimits{60, 16384, 120};
  return RunStage(std::move(pool), options);
}

TEST(Admission, TheHarnessTeachesTheTasksNeedAndTheBudgetBoundsIt) {
  KFORGE_REQUIRE_TORCH();
  auto pool = budget_pool();
  EXPECT_EQ(pool->budget_mb("cpu"), 2048);
  const EvalJob relu = task_job("relu", std::nullopt);
  const StageResult ok = run_stage(pool).process(relu);
  ASSERT_EQ(ok.status, KF_VERDICT_PASS) << ok.message;
  const auto need = device_gate("cpu").need(admission_key(relu));
  ASSERT_TRUE(need);
  EXPECT_EQ(*need, ok.metric("task_peak_mb"));
  EXPECT_LT(*need, 512);
  ASSERT_NE(ok.attribute(kAttrRunTaskSizes), nullptr);
  EXPECT_EQ(*ok.attribute(kAttrRunTaskSizes), R"({"batch_size":64,"dim":256})");

  // 1.5 GiB in, 1.5 GiB out: more than the 2 GiB the device has.
  const StageResult big = run_stage(pool).process(task_job("too_big", harness_candidate("python_relu")));
  EXPECT_EQ(big.status, KF_VERDICT_ERROR);
  EXPECT_EQ(big.error_class, "task_error");
  EXPECT_NE(big.message.find("needs more than"), std::string::npos) << big.message;
  EXPECT_NE(big.message.find("2.00 GiB for this job"), std::string::npos) << big.message;
}

TEST(Admission, OutOfMemoryBesideAnotherJobIsRetriedAlone) {
  KFORGE_REQUIRE_TORCH();
  auto pool = budget_pool();
  const EvalJob greedy = task_job("relu", harness_candidate("greedy_relu"));
  ASSERT_EQ(run_stage(pool).process(task_job("relu", std::nullopt)).status, KF_VERDICT_PASS);  // need known

  // A neighbour holding 1.2 GB of the 2 GB: the greedy candidate (1 GiB of scratch) is
  // admitted beside it with what is left, runs out of memory, and is run again alone.
  DeviceGate& gate = device_gate("cpu");
  gate.record_need("neighbour", 1200);
  const auto neighbour = gate.enter(DeviceGate::Use::Shared, "neighbour", 0, pool->budget_mb("cpu"),
                                    std::chrono::steady_clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(neighbour);
  auto verdict = std::async(std::launch::async, [&] { return run_stage(pool).process(greedy); });
  std::this_thread::sleep_for(std::chrono::seconds(2));
  gate.leave(*neighbour);
  const StageResult result = verdict.get();
  EXPECT_EQ(result.status, KF_VERDICT_PASS) << result.message << result.log_tail;
  EXPECT_EQ(result.metric("retried_alone"), 1);

  // Alone from the start, the same out-of-memory is the candidate's own.
  EvalJob huge = task_job("relu", harness_candidate("huge_alloc"));
  huge.language = "cpp";  // it builds its kernel with kforge_cpp: a python candidate may not
  const StageResult alone = run_stage(pool).process(huge);
  EXPECT_EQ(alone.status, KF_VERDICT_FAIL) << alone.message;
  EXPECT_EQ(alone.error_class, "out_of_memory");
  EXPECT_TRUE(std::isnan(alone.metric("retried_alone")));
}

TEST(Admission, AJobsWaitForItsDeviceIsAMetric) {
  KFORGE_REQUIRE_TORCH();
  auto pool = budget_pool();
  const EvalJob relu = task_job("relu", std::nullopt);
  const StageResult first = run_stage(pool).process(relu);
  ASSERT_EQ(first.status, KF_VERDICT_PASS) << first.message;
  EXPECT_GE(first.metric("device_wait_seconds"), 0);

  // Another harness server's timed job holds the device for 1.5 s: the job admitted after
  // it waited at least that long, and says so.
  DeviceGate& gate = device_gate("cpu");
  const auto timing = gate.enter(DeviceGate::Use::Timed, "timing", 0, pool->budget_mb("cpu"),
                                 std::chrono::steady_clock::now() + std::chrono::seconds(5), "another server");
  ASSERT_TRUE(timing);
  auto verdict = std::async(std::launch::async, [&] { return run_stage(pool).process(relu); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  gate.leave(*timing);
  const StageResult waited = verdict.get();
  ASSERT_EQ(waited.status, KF_VERDICT_PASS) << waited.message;
  EXPECT_GE(waited.metric("device_wait_seconds"), 1.4);
}

}  // namespace
}  // namespace kforge::eval
