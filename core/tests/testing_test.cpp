// The plugin test kit (kforge/testing.hpp) on the runtime's own test plugins: what it hands
// a stage is what a run hands it, through the real host.
#include <kforge/testing.hpp>

#include <gtest/gtest.h>

#include <stdlib.h>

#include <string>

namespace {

using kforge::testing::SourceHarness;
using kforge::testing::StageHarness;
using kforge::testing::TestJob;

class TestKit : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    kforge::testing::load_plugin(std::string(KFORGE_TEST_PLUGIN_DIR) + "/libkforge_demo.so");
    kforge::testing::load_plugin(std::string(KFORGE_TEST_EXTRA_PLUGIN_DIR) + "/libtest_npu.so");
  }
};

TEST_F(TestKit, AStageSeesTheJobAndLeavesItsVerdictMetricsAndAttributes) {
  StageHarness run("npu.run", "{budget: 2m}");
  ASSERT_TRUE(run.created()) << run.create_error();
  TestJob job;
  job.strings[KF_KEY_TASK_ID] = "npu-0";
  job.strings[KF_KEY_CANDIDATE_CODE] = "kernel";
  EXPECT_EQ(run.process(job), "");
  EXPECT_TRUE(job.verdict.given);
  EXPECT_EQ(job.verdict.status, KF_VERDICT_PASS);
  EXPECT_TRUE(job.verdict.measured);
  EXPECT_EQ(job.metric(KF_METRIC_SPEEDUP), 2.5);
  EXPECT_EQ(job.metric("budget_seconds"), 120) << "a duration reaches the stage in seconds";
  EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_DEVICE], "npu:3");
  EXPECT_EQ(job.strings[KF_KEY_TASK_ID], "npu-0");

  ::setenv("NPU_TEST_DEVICE_MODEL", "ascend-910b", 1);
  EXPECT_EQ(run.cache_key(job), "device-model=ascend-910b");
  ::unsetenv("NPU_TEST_DEVICE_MODEL");
}

TEST_F(TestKit, ParametersAreLoadedAsAPipelinesAre) {
  StageHarness wrong("npu.run", "{budget: -1s, timing: maybe}");
  EXPECT_FALSE(wrong.created());
  EXPECT_NE(wrong.create_error().find("parameters of npu.run:1:10: error: parameter 'budget' of stage 'npu.run' must "
                                      "be a duration"),
            std::string::npos)
      << wrong.create_error();
  EXPECT_NE(wrong.create_error().find("parameter 'timing' of stage 'npu.run' must be true or false, got 'maybe'"),
            std::string::npos)
      << wrong.create_error();
  EXPECT_THROW(StageHarness("npu.nothing"), std::invalid_argument);
}

TEST_F(TestKit, TheRunsSeedAndCancellation) {
  StageHarness generate("vllm.generate");
  TestJob job;
  job.strings[KF_KEY_TASK_ID] = "npu-0";
  generate.process(job);
  EXPECT_EQ(job.strings["npu.seed"], "none") << "no seed, as in `kforge validate`";
  generate.set_run_seed(7);
  generate.process(job);
  EXPECT_EQ(job.strings["npu.seed"], "7");

  StageHarness sleep("demo.sleep", "{seconds: 30}");
  sleep.cancel();
  TestJob waiting;
  EXPECT_EQ(sleep.process(waiting), "");
  EXPECT_EQ(waiting.verdict.status, KF_VERDICT_ERROR);
  EXPECT_EQ(waiting.verdict.error_class, "cancelled");
}

TEST_F(TestKit, AJobCarriesItsCountersAndTheVerdictThatRoutedIt) {
  StageHarness flaky("demo.flaky", "{failures: 1}");
  TestJob job;
  job.numbers[KF_KEY_CANDIDATE_ROUND] = 2;
  EXPECT_EQ(flaky.process(job), "");
  EXPECT_EQ(job.verdict.status, KF_VERDICT_FAIL);
  EXPECT_EQ(job.numbers["demo.visits"], 1);
  job.next_stage();
  EXPECT_FALSE(job.verdict.given);
  EXPECT_TRUE(job.metrics.empty());
  flaky.process(job);
  EXPECT_EQ(job.verdict.status, KF_VERDICT_PASS);
  EXPECT_EQ(job.numbers[KF_KEY_CANDIDATE_ROUND], 2);

  StageHarness judge("demo.judge", "{route: [t]}");
  TestJob routed;
  routed.strings[KF_KEY_TASK_ID] = "t";
  judge.process(routed);
  EXPECT_EQ(routed.verdict.route, "special");
}

TEST_F(TestKit, ASourceIsDrainedAndCounted) {
  SourceHarness range("demo.range", "{count: 3, prefix: t-}");
  ASSERT_TRUE(range.created()) << range.create_error();
  EXPECT_EQ(range.count(), 3u);
  const auto tasks = range.drain();
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_EQ(tasks[2].strings.at(KF_KEY_TASK_ID), "t-0002");
  EXPECT_EQ(tasks[2].numbers.at(KF_KEY_TASK_LEVEL), 1);

  SourceHarness negative("demo.range", "{count: -1}");
  EXPECT_FALSE(negative.created());
  EXPECT_NE(negative.create_error().find("must be at least 0, got -1"), std::string::npos) << negative.create_error();
}

// The run-start check, as `kforge run` calls it: the SDK's preflight() member, its exception's
// message when it refuses, "" when it passes or the kind has none.
TEST_F(TestKit, PreflightIsCalledAsTheRunWould) {
  ::unsetenv("KFORGE_TEST_KIT_VARIABLE");
  StageHarness needs("demo.needs_env", "{variable: KFORGE_TEST_KIT_VARIABLE}");
  ASSERT_TRUE(needs.created()) << "creating does not look at the environment: " << needs.create_error();
  EXPECT_EQ(needs.preflight(), "environment variable KFORGE_TEST_KIT_VARIABLE is not set; export it before the run");
  ::setenv("KFORGE_TEST_KIT_VARIABLE", "x", 1);
  EXPECT_EQ(needs.preflight(), "");
  ::unsetenv("KFORGE_TEST_KIT_VARIABLE");

  StageHarness noop("demo.noop");
  EXPECT_EQ(noop.preflight(), "") << "a stage without preflight has nothing to check";
  SourceHarness range("demo.range", "{count: 1, needs_env: KFORGE_TEST_KIT_VARIABLE}");
  ASSERT_TRUE(range.created()) << range.create_error();
  EXPECT_NE(range.preflight().find("KFORGE_TEST_KIT_VARIABLE is not set"), std::string::npos);
}

}  // namespace
