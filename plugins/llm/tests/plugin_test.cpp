// The built plugin, loaded by the runtime's own registry and driven through its real host
// and parameter loader (kforge/testing.hpp): stage schemas, and what each stage does to a job.
#include <gtest/gtest.h>
#include <kforge/testing.hpp>

#include <nlohmann/json.hpp>

#include "loopback_server.hpp"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kforge::llm::testing {
namespace {

using kforge::testing::TestJob;

const std::string kPipelines = KFORGE_PIPELINES_DIR;

const kf_plugin_descriptor* plugin_descriptor() {
  static const kf_plugin_descriptor* descriptor = kforge::testing::load_plugin(KFORGE_LLM_PLUGIN_FILE);
  return descriptor;
}

const kf_stage_kind* stage_kind(const std::string& name) {
  const kf_plugin_descriptor* d = plugin_descriptor();
  for (uint32_t i = 0; i < d->stage_count; ++i) {
    if (name == d->stages[i]->name) return d->stages[i];
  }
  throw std::runtime_error("the plugin has no stage kind " + name);
}

// The kind's name, once the plugin under test is loaded.
const std::string& loaded(const std::string& kind) {
  plugin_descriptor();
  return kind;
}

// The kit's harness with the parameters written as JSON, which is YAML too.
struct Stage : kforge::testing::StageHarness {
  Stage(const std::string& kind, const nlohmann::json& params, const std::string& base_dir)
      : StageHarness(loaded(kind), params.dump(), base_dir) {}
};

const std::string kReluSource =
    "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
    "        return torch.relu(x)\n";

const std::string kReluKernel =
    "import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\n"
    "def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    x = tl.load(x_ptr + offs, mask=offs < n)\n"
    "    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=offs < n)\n";

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("kforge-llm-plugin-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

void write_lines(const std::string& path, const std::vector<nlohmann::json>& lines) {
  std::ofstream out(path);
  for (const auto& line : lines) out << line.dump() << "\n";
}

nlohmann::json selector_line(nlohmann::json match, const std::string& content, int in = 1000, int out = 500) {
  return {{"match", std::move(match)},
          {"response", {{"content", content}, {"usage", {{"prompt_tokens", in}, {"completion_tokens", out}}}}},
          {"duration_s", 3.5}};
}

TestJob relu_job(int sample = 0) {
  TestJob job;
  job.strings[KF_KEY_TASK_NAME] = "relu";
  job.strings[KF_KEY_TASK_SOURCE] = kReluSource;
  job.strings[KF_KEY_TASK_COMPLEXITY] = "C1";
  job.numbers[KF_KEY_CANDIDATE_SAMPLE] = sample;
  return job;
}

TEST(Plugin, DescribesItsThreeStageKinds) {
  const kf_plugin_descriptor* d = plugin_descriptor();
  EXPECT_EQ(d->abi_version, KF_ABI_VERSION);
  EXPECT_STREQ(d->name, "llm");
  ASSERT_EQ(d->stage_count, 3u);
  EXPECT_EQ(stage_kind("llm.generate")->flags & KF_STAGE_WAITS, KF_STAGE_WAITS);
  EXPECT_EQ(stage_kind("llm.fix")->flags & KF_STAGE_WAITS, KF_STAGE_WAITS);
  EXPECT_EQ(stage_kind("llm.select")->flags & KF_STAGE_WAITS, 0u) << "selection does not wait";
  for (uint32_t s = 0; s < d->stage_count; ++s) {
    const kf_stage_kind* kind = d->stages[s];
    EXPECT_GT(std::strlen(kind->doc), 40u) << kind->name;
    for (uint32_t p = 0; p < kind->param_count; ++p) {
      EXPECT_GT(std::strlen(kind->params[p].doc), 10u) << kind->name << "." << kind->params[p].name;
    }
  }
}

// The README's parameter tables keep up with the schemas.
TEST(Plugin, TheReadmeDocumentsEveryParameter) {
  std::stringstream readme;
  readme << std::ifstream(KFORGE_LLM_README).rdbuf();
  ASSERT_FALSE(readme.str().empty()) << KFORGE_LLM_README;
  const kf_plugin_descriptor* d = plugin_descriptor();
  for (uint32_t s = 0; s < d->stage_count; ++s) {
    const kf_stage_kind* kind = d->stages[s];
    EXPECT_NE(readme.str().find(std::string("## `") + kind->name + "`"), std::string::npos) << kind->name;
    for (uint32_t p = 0; p < kind->param_count; ++p) {
      EXPECT_NE(readme.str().find(std::string("| `") + kind->params[p].name + "` |"), std::string::npos)
          << kind->name << "." << kind->params[p].name;
    }
  }
}

// ---- llm.select ----

TEST(SelectStage, PicksTheModelByComplexityClass) {
  Stage select("llm.select",
                        {{"table", {{"C3", "deepseek-reasoner"}, {"C4", "glm-5.1"}}}, {"default", "deepseek-chat"}},
                        kPipelines);
  ASSERT_TRUE(select.created()) << select.create_error();
  TestJob job = relu_job();
  job.strings[KF_KEY_TASK_COMPLEXITY] = "C4";
  EXPECT_EQ(select.process(job), "");
  EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_MODEL], "glm-5.1");
  EXPECT_EQ(job.strings["select.reason"], "C4 -> glm-5.1");
  EXPECT_EQ(job.verdict.status, KF_VERDICT_PASS);

  TestJob simple = relu_job();
  select.process(simple);
  EXPECT_EQ(simple.strings[KF_KEY_CANDIDATE_MODEL], "deepseek-chat");
}

TEST(SelectStage, FixedStrategyAndConfigurationErrors) {
  Stage fixed("llm.select", {{"strategy", "fixed"}, {"default", "qwen2.5-coder-7b"}}, kPipelines);
  TestJob job = relu_job();
  fixed.process(job);
  EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_MODEL], "qwen2.5-coder-7b");

  Stage bad_key("llm.select", {{"table", {{"C9", "x"}}}, {"default", "d"}}, kPipelines);
  EXPECT_FALSE(bad_key.created());
  EXPECT_NE(bad_key.create_error().find("C9"), std::string::npos) << bad_key.create_error();
  Stage no_table("llm.select", {{"default", "d"}}, kPipelines);
  EXPECT_NE(no_table.create_error().find("needs a table"), std::string::npos) << no_table.create_error();
  // A table beside the fixed strategy would be ignored: refused, so validate says so.
  Stage fixed_with_table("llm.select", {{"strategy", "fixed"}, {"table", {{"C1", "x"}}}, {"default", "d"}},
                         kPipelines);
  EXPECT_FALSE(fixed_with_table.created());
  EXPECT_NE(fixed_with_table.create_error().find("strategy fixed sends every task to `default` and takes no table"),
            std::string::npos)
      << fixed_with_table.create_error();
  // An empty one says nothing: both strategies send every task to default.
  for (const char* strategy : {"fixed", "table"}) {
    Stage empty_table("llm.select", {{"strategy", strategy}, {"table", nlohmann::json::object()}, {"default", "d"}},
                      kPipelines);
    ASSERT_TRUE(empty_table.created()) << strategy << ": " << empty_table.create_error();
    TestJob c1 = relu_job();
    empty_table.process(c1);
    EXPECT_EQ(c1.strings[KF_KEY_CANDIDATE_MODEL], "d") << strategy;
  }
}

// ---- llm.generate ----

TEST(GenerateStage, ReplaysAHandWrittenAnswerAndAccountsForIt) {
  TempDir dir;
  write_lines(dir.file("tape.jsonl"),
              {selector_line({{"task", "001_relu"}, {"purpose", "generate"}, {"model", "deepseek-chat"}},
                             "Here it is:\n```python\n" + kReluKernel + "```\n")});
  Stage generate("llm.generate",
                          {{"target", "triton"}, {"backend", "replay"}, {"cassette", dir.file("tape.jsonl")}},
                          kPipelines);
  ASSERT_TRUE(generate.created()) << generate.create_error();
  TestJob job = relu_job();
  job.strings[KF_KEY_TASK_ID] = "001_relu";  // selectors match the id, the prompt shows the name
  job.strings[KF_KEY_CANDIDATE_MODEL] = "deepseek-chat";  // as llm.select leaves it
  job.numbers[KF_KEY_CANDIDATE_COST] = 0.5;
  job.numbers[KF_KEY_CANDIDATE_TOKENS_IN] = 10;
  EXPECT_EQ(generate.process(job), "");
  EXPECT_EQ(job.verdict.status, KF_VERDICT_PASS) << job.verdict.message;
  EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_CODE], kReluKernel);
  EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_LANGUAGE], "triton");
  EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_MODEL], "deepseek-chat");
  // deepseek-chat preset: $0.25 / $0.50 per million tokens; costs add to what was there.
  EXPECT_DOUBLE_EQ(job.numbers[KF_KEY_CANDIDATE_COST], 0.5 + (1000 * 0.25 + 500 * 0.5) / 1e6);
  EXPECT_EQ(job.numbers[KF_KEY_CANDIDATE_TOKENS_IN], 1010);
  EXPECT_EQ(job.numbers[KF_KEY_CANDIDATE_TOKENS_OUT], 500);
  EXPECT_EQ(job.metric("tokens_in"), 1000);
  EXPECT_EQ(job.metric(KF_METRIC_RECORDED_SECONDS), 3.5);
  EXPECT_FALSE(std::isnan(job.metric("llm_seconds")));
  EXPECT_EQ(job.strings["llm.source"], dir.file("tape.jsonl") + ":1");
}

TEST(GenerateStage, AnAnswerWithoutCodeFailsWithNoCode) {
  TempDir dir;
  write_lines(dir.file("tape.jsonl"), {selector_line({{"task", "relu"}}, "  \n")});
  Stage generate("llm.generate",
                          {{"target", "cpp"}, {"backend", "replay"}, {"cassette", dir.file("tape.jsonl")},
                           {"model", "qwen2.5-coder-7b"}},
                          kPipelines);
  ASSERT_TRUE(generate.created()) << generate.create_error();
  TestJob job = relu_job();
  generate.process(job);
  EXPECT_EQ(job.verdict.status, KF_VERDICT_FAIL);
  EXPECT_EQ(job.verdict.error_class, "no_code");
  EXPECT_GT(job.numbers[KF_KEY_CANDIDATE_TOKENS_IN], 0) << "the call is paid for all the same";
}

TEST(GenerateStage, ACassetteMissIsAnErrorNamingTheTask) {
  TempDir dir;
  write_lines(dir.file("tape.jsonl"), {selector_line({{"task", "gelu"}}, "x = 1")});
  Stage generate("llm.generate",
                          {{"target", "triton"}, {"backend", "replay"}, {"cassette", dir.file("tape.jsonl")},
                           {"model", "deepseek-chat"}},
                          kPipelines);
  TestJob job = relu_job(2);
  generate.process(job);
  EXPECT_EQ(job.verdict.status, KF_VERDICT_ERROR);
  EXPECT_EQ(job.verdict.error_class, "cassette_miss");
  EXPECT_NE(job.verdict.message.find("'relu' (sample 2"), std::string::npos) << job.verdict.message;
}

TEST(GenerateStage, WithoutAnyModelTheJobErrs) {
  TempDir dir;
  write_lines(dir.file("tape.jsonl"), {});
  Stage generate("llm.generate",
                          {{"target", "triton"}, {"backend", "replay"}, {"cassette", dir.file("tape.jsonl")}},
                          kPipelines);
  TestJob job = relu_job();
  generate.process(job);
  EXPECT_EQ(job.verdict.error_class, "llm_error");
  EXPECT_NE(job.verdict.message.find("llm.select"), std::string::npos) << job.verdict.message;
}

// The API key belongs to the run's environment: creating (all `kforge validate` does) does
// not need it, the run-start check refuses the run without it, naming the variable.
TEST(GenerateStage, AFixedModelsKeyVariableIsCheckedAtPreflightNotAtCreation) {
  ::unsetenv("KFORGE_TEST_UNSET_KEY");
  for (const std::string kind : {"llm.generate", "llm.fix"}) {
    nlohmann::json params = {{"model", "deepseek-chat"}, {"api_key_env", "KFORGE_TEST_UNSET_KEY"}};
    if (kind == "llm.generate") params["target"] = "triton";
    Stage no_key(kind, params, kPipelines);
    ASSERT_TRUE(no_key.created()) << kind << ": " << no_key.create_error();
    const std::string refused = no_key.preflight();
    EXPECT_NE(refused.find("environment variable KFORGE_TEST_UNSET_KEY"), std::string::npos) << kind << ": " << refused;
    EXPECT_NE(refused.find("is not set"), std::string::npos) << refused;

    ::setenv("KFORGE_TEST_UNSET_KEY", "sk-test", 1);
    EXPECT_EQ(no_key.preflight(), "") << kind;
    ::unsetenv("KFORGE_TEST_UNSET_KEY");
  }
  // A model that is no preset and has no base_url does not depend on the environment: the
  // stage is refused when created, so validate reports it.
  Stage unknown("llm.generate", {{"target", "triton"}, {"model", "no-such-model"}}, kPipelines);
  EXPECT_FALSE(unknown.created());
  EXPECT_NE(unknown.create_error().find("no-such-model"), std::string::npos) << unknown.create_error();
  // Without a fixed model (llm.select chooses per job) there is nothing to check up front.
  Stage per_job("llm.generate", {{"target", "triton"}, {"api_key_env", "KFORGE_TEST_UNSET_KEY"}}, kPipelines);
  ASSERT_TRUE(per_job.created()) << per_job.create_error();
  EXPECT_EQ(per_job.preflight(), "");
}

// A strict replay answers from the cassette only: no key is needed. Record (and a replay
// that may fall through to the API) talks to the live API: its key is.
TEST(GenerateStage, StrictReplayNeedsNoKeyRecordDoes) {
  ::unsetenv("KFORGE_TEST_UNSET_KEY");
  TempDir dir;
  write_lines(dir.file("tape.jsonl"), {});
  nlohmann::json params = {{"target", "triton"},
                           {"model", "deepseek-chat"},
                           {"api_key_env", "KFORGE_TEST_UNSET_KEY"},
                           {"cassette", dir.file("tape.jsonl")}};
  params["backend"] = "replay";
  Stage replay("llm.generate", params, kPipelines);
  ASSERT_TRUE(replay.created()) << replay.create_error();
  EXPECT_EQ(replay.preflight(), "");
  params["strict"] = false;
  Stage loose("llm.generate", params, kPipelines);
  ASSERT_TRUE(loose.created()) << loose.create_error();
  EXPECT_NE(loose.preflight().find("KFORGE_TEST_UNSET_KEY"), std::string::npos);
  params.erase("strict");
  params["backend"] = "record";
  Stage record("llm.generate", params, kPipelines);
  ASSERT_TRUE(record.created()) << record.create_error();
  EXPECT_NE(record.preflight().find("KFORGE_TEST_UNSET_KEY"), std::string::npos);
}

TEST(GenerateStage, CreationFailsEarlyOnABadPromptOrTarget) {
  TempDir dir;
  std::ofstream(dir.file("p.md")) << "Write {{task_name}} in {{language}}";
  write_lines(dir.file("tape.jsonl"), {});
  Stage bad_prompt("llm.generate",
                            {{"target", "triton"}, {"backend", "replay"}, {"cassette", dir.file("tape.jsonl")},
                             {"prompt", dir.file("p.md")}},
                            kPipelines);
  EXPECT_FALSE(bad_prompt.created());
  EXPECT_NE(bad_prompt.create_error().find("{{language}}"), std::string::npos) << bad_prompt.create_error();

  Stage bad_target("llm.generate", {{"target", "rust"}}, kPipelines);
  EXPECT_FALSE(bad_target.created());
  EXPECT_NE(bad_target.create_error().find("parameter 'target' of stage 'llm.generate' must be 'cpp', 'triton' or 'cuda', got 'rust'"),
            std::string::npos)
      << bad_target.create_error();
}

// Choices, ranges and durations are the loader's: a bad value never reaches the plugin.
TEST(GenerateStage, ParametersAreCheckedAsInAPipeline) {
  TempDir dir;
  write_lines(dir.file("tape.jsonl"), {});
  const nlohmann::json replay = {{"target", "cpp"}, {"backend", "replay"}, {"cassette", dir.file("tape.jsonl")}};
  nlohmann::json durations = replay;
  durations["timeout"] = "2m";
  durations["backoff_initial"] = "500ms";
  Stage ok("llm.generate", durations, kPipelines);
  EXPECT_TRUE(ok.created()) << ok.create_error();

  nlohmann::json bad = replay;
  bad["code_block"] = "middle";
  bad["timeout"] = "soon";
  bad["max_tokens"] = 0;
  Stage refused("llm.generate", bad, kPipelines);
  EXPECT_FALSE(refused.created());
  for (const char* part : {"parameter 'code_block' of stage 'llm.generate' must be 'first' or 'last', got 'middle'",
                           "parameter 'timeout' of stage 'llm.generate' must be a duration", "got 'soon'",
                           "parameter 'max_tokens' of stage 'llm.generate' must be at least 1, got 0"}) {
    EXPECT_NE(refused.create_error().find(part), std::string::npos) << part << "\n" << refused.create_error();
  }
}

TEST(GenerateStage, TalksToALiveServerWithSeedPerSampleAndNoKeyInLogs) {
  const std::string key = "sk-plugin-test-KEY-42";
  ::setenv("KFORGE_TEST_LLM_KEY", key.c_str(), 1);
  std::atomic<int> calls{0};
  LoopbackServer server([&](const HttpRequest&) -> HttpReply {
    if (calls++ == 0) return {500, {}, error_body("warming up")};
    return {200, {}, chat_answer("```python\n" + kReluKernel + "```", 321, 123)};
  });
  Stage generate("llm.generate",
                          {{"target", "triton"}, {"model", "deepseek-chat"}, {"base_url", server.base_url()},
                           {"api_key_env", "KFORGE_TEST_LLM_KEY"}, {"seed", 100}, {"backoff_initial", 0.01}},
                          kPipelines);
  ASSERT_TRUE(generate.created()) << generate.create_error();
  TestJob job = relu_job(3);
  generate.process(job);
  ::unsetenv("KFORGE_TEST_LLM_KEY");

  EXPECT_EQ(job.verdict.status, KF_VERDICT_PASS) << job.verdict.message;
  EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_CODE], kReluKernel);
  EXPECT_EQ(job.metric("attempts"), 2);
  EXPECT_EQ(job.numbers[KF_KEY_CANDIDATE_TOKENS_OUT], 123);
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  auto body = nlohmann::json::parse(requests[1].body);
  EXPECT_EQ(body["seed"], 103) << "seed + candidate.sample";
  EXPECT_EQ(body["temperature"], 0.7) << "from the preset";
  EXPECT_EQ(body["model"], "deepseek-chat");
  std::string user = body["messages"][1]["content"];
  EXPECT_NE(user.find(kReluSource), std::string::npos) << "the prompt carries the task source";
  EXPECT_NE(user.find("(relu)"), std::string::npos);
  EXPECT_EQ(requests[1].headers["authorization"], "Bearer " + key);

  bool retry_logged = false;
  for (const std::string& line : kforge::testing::plugin_logs()) {
    EXPECT_EQ(line.find(key), std::string::npos) << line;
    retry_logged |= line.find("WARN llm: ") == 0 && line.find("warming up") != std::string::npos;
  }
  EXPECT_TRUE(retry_logged) << "the retry is logged as a warning";
}

TEST(GenerateStage, RecordsThenReplaysWithoutTheServer) {
  TempDir dir;
  std::atomic<int> calls{0};
  LoopbackServer server([&](const HttpRequest& request) -> HttpReply {
    ++calls;
    auto body = nlohmann::json::parse(request.body);
    return {200, {}, chat_answer("```python\n# seed " + std::to_string(body["seed"].get<int>()) + "\n```")};
  });
  nlohmann::json params = {{"target", "cpp"}, {"model", "vllm"}, {"base_url", server.base_url()},
                           {"cassette", dir.file("tape.jsonl")}};
  {
    params["backend"] = "record";
    Stage record("llm.generate", params, kPipelines);
    ASSERT_TRUE(record.created()) << record.create_error();
    for (int sample = 0; sample < 3; ++sample) {
      TestJob job = relu_job(sample);
      record.process(job);
      EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_CODE], "# seed " + std::to_string(sample) + "\n");
      EXPECT_EQ(job.strings["llm.source"], "api");
    }
  }
  EXPECT_EQ(calls, 3);
  server.stop();
  params["backend"] = "replay";
  Stage replay("llm.generate", params, kPipelines);
  ASSERT_TRUE(replay.created()) << replay.create_error();
  for (int sample = 2; sample >= 0; --sample) {
    TestJob job = relu_job(sample);
    replay.process(job);
    EXPECT_EQ(job.verdict.status, KF_VERDICT_PASS) << job.verdict.message;
    EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_CODE], "# seed " + std::to_string(sample) + "\n");
    EXPECT_EQ(job.strings["llm.source"].rfind("cassette key ", 0), 0u);
  }
}

// ---- llm.fix ----

TestJob failing_relu_job() {
  TestJob job = relu_job();
  job.strings[KF_KEY_CANDIDATE_CODE] = kReluKernel;
  job.strings[KF_KEY_CANDIDATE_LANGUAGE] = "triton";
  job.strings[KF_KEY_CANDIDATE_MODEL] = "qwen2.5-coder-7b";
  job.strings[KF_KEY_LAST_STAGE] = "l3_run";
  job.strings[KF_KEY_LAST_ERROR_CLASS] = "numerical_mismatch";
  job.strings[KF_KEY_LAST_MESSAGE] = "max_abs_diff 1.3 > 1e-4 (negative inputs pass through)";
  job.strings[KF_KEY_LAST_LOG_TAIL] = "trial 0: max_abs_diff 1.3";
  job.numbers[KF_KEY_CANDIDATE_ROUND] = 1;
  return job;
}

TEST(FixStage, AppliesTheJsonEditAndStoresTheDiff) {
  TempDir dir;
  nlohmann::json edit = {
      {"analysis", "the maximum is taken against the wrong value"},
      {"modifications", {{{"old_string", "tl.maximum(x, 0.0)"}, {"new_string", "tl.where(x > 0, x, 0.0)"}}}},
      {"summary", "clamp negatives with tl.where"}};
  write_lines(dir.file("tape.jsonl"),
              {selector_line({{"task", "relu"}, {"purpose", "fix"}, {"round", 1}}, "```json\n" + edit.dump(2) + "\n```")});
  Stage fix("llm.fix", {{"backend", "replay"}, {"cassette", dir.file("tape.jsonl")}, {"model", "deepseek-chat"}},
                     kPipelines);
  ASSERT_TRUE(fix.created()) << fix.create_error();
  TestJob job = failing_relu_job();
  EXPECT_EQ(fix.process(job), "");
  EXPECT_EQ(job.verdict.status, KF_VERDICT_PASS) << job.verdict.message;
  EXPECT_NE(job.strings[KF_KEY_CANDIDATE_CODE].find("tl.where(x > 0, x, 0.0)"), std::string::npos);
  EXPECT_EQ(job.strings["fix.levels"], "exact");
  EXPECT_EQ(job.strings["fix.summary"], "clamp negatives with tl.where");
  EXPECT_EQ(job.strings["fix.model"], "deepseek-chat");
  EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_MODEL], "qwen2.5-coder-7b") << "the generating model stays";
  const std::string& diff = job.strings[KF_KEY_CANDIDATE_DIFF];
  EXPECT_EQ(diff.rfind("--- a/candidate.py\n+++ b/candidate.py\n", 0), 0u) << diff;
  EXPECT_NE(diff.find("+    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=offs < n)"), std::string::npos);
  EXPECT_EQ(job.log_tail, diff);
  EXPECT_EQ(job.metric("edits"), 1);
}

TEST(FixStage, AnUnusableAnswerFailsWithFixFailedButIsPaidFor) {
  TempDir dir;
  write_lines(dir.file("tape.jsonl"),
              {selector_line({{"purpose", "fix"}}, R"({"modifications": [{"old_string": "no such code anywhere in it", "new_string": "x"}]})")});
  Stage fix("llm.fix", {{"backend", "replay"}, {"cassette", dir.file("tape.jsonl")}}, kPipelines);
  TestJob job = failing_relu_job();
  std::string before = job.strings[KF_KEY_CANDIDATE_CODE];
  fix.process(job);
  EXPECT_EQ(job.verdict.status, KF_VERDICT_FAIL);
  EXPECT_EQ(job.verdict.error_class, "fix_failed");
  EXPECT_NE(job.verdict.message.find("modification 1"), std::string::npos) << job.verdict.message;
  EXPECT_EQ(job.strings[KF_KEY_CANDIDATE_CODE], before);
  EXPECT_EQ(job.numbers[KF_KEY_CANDIDATE_TOKENS_IN], 1000);
  EXPECT_EQ(job.strings["fix.model"], "qwen2.5-coder-7b") << "no model parameter: candidate.model";
}

TEST(FixStage, ThePromptShowsTheCodeTheStageAndTheErrorLog) {
  std::string user;
  std::mutex mutex;
  LoopbackServer server([&](const HttpRequest& request) -> HttpReply {
    std::lock_guard lock(mutex);
    user = nlohmann::json::parse(request.body)["messages"][1]["content"];
    return {200, {}, chat_answer(R"json([{"old_string": "tl.maximum(x, 0.0)", "new_string": "tl.where(x > 0, x, 0.0)"}])json")};
  });
  Stage fix("llm.fix",
                     {{"model", "ollama"}, {"base_url", server.base_url()}, {"log_limit", 1000}},
                     kPipelines);
  ASSERT_TRUE(fix.created()) << fix.create_error();
  TestJob job = failing_relu_job();
  job.strings[KF_KEY_LAST_LOG_TAIL] = std::string(5000, '.') + "THE END OF THE LOG";
  fix.process(job);
  EXPECT_EQ(job.verdict.status, KF_VERDICT_PASS) << job.verdict.message;
  std::lock_guard lock(mutex);
  for (const std::string& part : {kReluKernel, kReluSource, std::string("`l3_run`"), std::string("`numerical_mismatch`"),
                                  std::string("max_abs_diff 1.3 > 1e-4"), std::string("THE END OF THE LOG"),
                                  std::string("bytes cut"), std::string("fix round 1")}) {
    EXPECT_NE(user.find(part), std::string::npos) << part;
  }
}

}  // namespace
}  // namespace kforge::llm::testing
