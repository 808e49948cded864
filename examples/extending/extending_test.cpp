// The recipes' stages on the real kforge host and parameter loader (kforge/testing.hpp),
// with fake/model.sh standing in for a model's command line and fake/npu-eval.sh for a
// device vendor's evaluator.
#include <gtest/gtest.h>
#include <kforge/testing.hpp>

#include <chrono>
#include <string>

namespace {

using kforge::testing::StageHarness;
using kforge::testing::TestJob;

class Extending : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    kforge::testing::load_plugin(COMMAND_LLM_PLUGIN_FILE);
    kforge::testing::load_plugin(DEVICE_RUNNER_PLUGIN_FILE);
  }
};

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- recipe 1: command_llm.generate ----

constexpr const char* kModel = "{command: [./model.sh], model: fake-coder, target: cpp}";

TestJob task(const std::string& source) {
  TestJob job;
  job.strings[KF_KEY_TASK_ID] = "001_relu";
  job.strings[KF_KEY_TASK_SOURCE] = source;
  return job;
}

TEST_F(Extending, TheModelsFencedCodeBecomesTheCandidate) {
  StageHarness generate("command_llm.generate", kModel, FAKE_DIR);
  ASSERT_TRUE(generate.created()) << generate.create_error();
  EXPECT_EQ(generate.preflight(), "");
  TestJob job = task("class Model: return torch.relu(x)");
  EXPECT_EQ(generate.process(job), "");
  EXPECT_EQ(job.verdict.status, KF_VERDICT_PASS) << job.verdict.message;
  // The prompt's first line, as the fake model echoes it: the task's name went in.
  EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_CODE],
            "# Task 001_relu: write a cpp kernel for this PyTorch reference, as a module with a class ModelNew "
            "that replaces Model. Answer with the code in one fenced block.\nclass ModelNew: pass\n");
  EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_LANGUAGE], "cpp");
  EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_MODEL], "fake-coder");
  EXPECT_GE(job.metric("llm_seconds"), 0);
}

TEST_F(Extending, APromptTemplateOfThePipelinesOwnIsFilledIn) {
  StageHarness generate("command_llm.generate", "{command: [./model.sh], model: m, target: cuda, prompt: prompt.md}",
                        FAKE_DIR);
  ASSERT_TRUE(generate.created()) << generate.create_error();
  TestJob job = task("class Model: pass");
  EXPECT_EQ(generate.process(job), "");
  EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_CODE], "# Kernel for 001_relu in cuda, please.\nclass ModelNew: pass\n");
  StageHarness missing("command_llm.generate", "{command: [./model.sh], model: m, target: cpp, prompt: nowhere.md}",
                       FAKE_DIR);
  EXPECT_FALSE(missing.created());
  EXPECT_TRUE(has(missing.create_error(), "nowhere.md is missing or empty")) << missing.create_error();
}

TEST_F(Extending, AnEmptyCodeBlockFailsTheCandidateAsNoCode) {
  StageHarness generate("command_llm.generate", kModel, FAKE_DIR);
  TestJob job = task("EMPTY");
  EXPECT_EQ(generate.process(job), "");
  EXPECT_EQ(job.verdict.status, KF_VERDICT_FAIL);
  EXPECT_EQ(job.verdict.error_class, "no_code");
  EXPECT_TRUE(has(job.log_tail, "I cannot write this kernel.")) << job.log_tail;
}

TEST_F(Extending, AModelThatDoesNotAnswerIsAnErrorNotTheCandidates) {
  StageHarness generate("command_llm.generate", kModel, FAKE_DIR);
  TestJob job = task("UNAVAILABLE");
  EXPECT_EQ(generate.process(job), "");
  EXPECT_EQ(job.verdict.status, KF_VERDICT_ERROR);
  EXPECT_EQ(job.verdict.error_class, "llm_error");
  EXPECT_EQ(job.verdict.message, "./model.sh exited with status 2: error: model 'fake-coder' is not loaded");
}

TEST_F(Extending, AHungModelIsKilledAtTheTimeout) {
  StageHarness generate("command_llm.generate", "{command: [./model.sh], model: m, target: cpp, timeout: 500ms}",
                        FAKE_DIR);
  TestJob job = task("HANG");
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(generate.process(job), "");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));  // not the 60 s it sleeps
  EXPECT_EQ(job.verdict.error_class, "llm_error");
  EXPECT_EQ(job.verdict.message, "./model.sh timed out");
}

TEST_F(Extending, AnAnswerIsTakenWhenTheModelExitsWhateverItLeftRunning) {
  StageHarness generate("command_llm.generate", kModel, FAKE_DIR);
  TestJob job = task("DAEMON");  // a process in a session of its own holds the answer's pipe
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(generate.process(job), "");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(15));  // not the 25 s it sleeps
  EXPECT_EQ(job.verdict.status, KF_VERDICT_PASS) << job.verdict.message;
  EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_CODE], "class ModelNew: pass\n");
}

TEST_F(Extending, AMissingProgramStopsTheRunBeforeItsFirstJob) {
  StageHarness generate("command_llm.generate", "{command: [no-such-model-cli], model: m, target: cpp}", FAKE_DIR);
  ASSERT_TRUE(generate.created()) << generate.create_error();  // kforge validate passes: the run checks
  EXPECT_TRUE(has(generate.preflight(), "no program 'no-such-model-cli' on PATH")) << generate.preflight();
}

TEST_F(Extending, ATargetOutsideTheChoicesIsRefusedAtItsPlace) {
  StageHarness generate("command_llm.generate", "{command: [./model.sh], model: m, target: rust}", FAKE_DIR);
  EXPECT_FALSE(generate.created());
  EXPECT_TRUE(has(generate.create_error(), "rust")) << generate.create_error();
}

// ---- recipe 2: device_runner.run ----

constexpr const char* kRunner = "{command: [./npu-eval.sh, '{candidate}', '{task}', '{device}'], device: 'npu:1'}";

TestJob candidate(const std::string& code) {
  TestJob job = task("class Model: return torch.relu(x)");
  job.strings[KF_KEY_CANDIDATE_CODE] = code;
  job.strings[KF_KEY_CANDIDATE_LANGUAGE] = "ascendc";
  return job;
}

TEST_F(Extending, APassingEvaluationBringsItsTimingsAndEnvironment) {
  StageHarness run("device_runner.run", kRunner, FAKE_DIR);
  ASSERT_TRUE(run.created()) << run.create_error();
  EXPECT_EQ(run.preflight(), "");
  TestJob job = candidate("class ModelNew: pass");
  EXPECT_EQ(run.process(job), "");
  EXPECT_EQ(job.verdict.status, KF_VERDICT_PASS) << job.verdict.message;
  EXPECT_EQ(job.metric(KF_METRIC_SPEEDUP), 2.5);
  EXPECT_EQ(job.metric("candidate_ms"), 2.0);
  EXPECT_EQ(job.metric(KF_METRIC_TRIALS), 5);
  EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_DEVICE], "npu:1");
  EXPECT_EQ(job.strings[KF_KEY_RUN_ENVIRONMENT], R"({"cann":"8.0","npu":"Ascend 910B"})");
  EXPECT_TRUE(has(job.log_tail, "compiling")) << job.log_tail;
  EXPECT_TRUE(has(job.log_tail, "for npu:1")) << job.log_tail;
}

TEST_F(Extending, WrongOutputsFailTheCandidateInTheirClass) {
  StageHarness run("device_runner.run", kRunner, FAKE_DIR);
  TestJob job = candidate("WRONG");
  EXPECT_EQ(run.process(job), "");
  EXPECT_EQ(job.verdict.status, KF_VERDICT_FAIL);
  EXPECT_EQ(job.verdict.error_class, KF_ERROR_NUMERICAL_MISMATCH);
  EXPECT_EQ(job.verdict.message, "output 0 differs by up to 0.5");
  EXPECT_EQ(job.metric(KF_METRIC_MAX_ABS_DIFF), 0.5);
}

TEST_F(Extending, AnEvaluatorThatDiesWithoutAVerdictBlamesTheHost) {
  StageHarness run("device_runner.run", kRunner, FAKE_DIR);
  TestJob job = candidate("CRASH");
  EXPECT_EQ(run.process(job), "");
  EXPECT_EQ(job.verdict.status, KF_VERDICT_ERROR);
  EXPECT_EQ(job.verdict.error_class, KF_ERROR_HOST);
  EXPECT_EQ(job.verdict.message, "./npu-eval.sh exited with status 3 without a JSON verdict line");
  EXPECT_TRUE(has(job.log_tail, "device lost")) << job.log_tail;
}

TEST_F(Extending, ACandidateOverTheLimitFailsAsTimeout) {
  StageHarness run("device_runner.run",
                   "{command: [./npu-eval.sh, '{candidate}', '{task}', '{device}'], timeout: 500ms}", FAKE_DIR);
  TestJob job = candidate("SLOW");
  EXPECT_EQ(run.process(job), "");
  EXPECT_EQ(job.verdict.status, KF_VERDICT_FAIL);
  EXPECT_EQ(job.verdict.error_class, KF_ERROR_TIMEOUT);
}

TEST_F(Extending, NoCodeIsNoCandidate) {
  StageHarness run("device_runner.run", kRunner, FAKE_DIR);
  TestJob job = task("class Model: pass");
  EXPECT_EQ(run.process(job), "");
  EXPECT_EQ(job.verdict.error_class, KF_ERROR_NO_CANDIDATE);
}

}  // namespace
