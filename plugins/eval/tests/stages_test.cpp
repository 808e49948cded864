// The evaluation ladder on real candidates: L1 check -> L2 compile -> L3 run, through the
// real harness with the test interpreter, on the bundled tasks' small profile.
#include "harness_stages.hpp"
#include "native_compile.hpp"
#include "process.hpp"
#include "python_env.hpp"
#include "test_env.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <regex>

namespace kforge::eval {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::bundled_task_job;
using testing::examples_dir;
using testing::read_file;

// Where a candidate's evaluation stopped, and the verdict there.
struct Outcome {
  std::string stage;
  StageResult result;
};

// One set of stages, as a CPU C++ pipeline wires them. Shared by the tests of this file:
// the harness server starts once.
class Ladder {
 public:
  Ladder()
      : pool_(std::make_shared<HarnessPool>(testing::test_harness_settings(2))),
        check_(pool_, {"", "", ChildLimits{60, 4096, 120}}),
        compile_(compile_options(), pool_),
        run_(pool_, run_options()) {}

  Outcome evaluate(EvalJob job) const {
    StageResult checked = check_.process(job);
    if (checked.status != KF_VERDICT_PASS) return {"eval.check", checked};
    absorb(job, checked);
    if (job.language == "cpp") {
      StageResult compiled = compile_.process(job);
      if (compiled.status != KF_VERDICT_PASS) return {"eval.compile.cpp", compiled};
      absorb(job, compiled);
    }
    return {"eval.run", run_.process(job)};
  }
  const RunStage& run() const { return run_; }

 private:
  static void absorb(EvalJob& job, const StageResult& result) {
    for (const auto& [key, value] : result.attributes) job.attributes[key] = value;
  }
  static CppCompileStage::Options compile_options() {
    CppCompileStage::Options options;
    options.cache_dir = testing::fresh_temp_dir("ladder-cache");
    return options;
  }
  static RunStage::Options run_options() {
    RunStage::Options options;
    options.limits = ChildLimits{8, 4096, 60};  // the endless candidate costs 8 s
    return options;
  }

  std::shared_ptr<HarnessPool> pool_;
  CheckStage check_;
  CppCompileStage compile_;
  RunStage run_;
};

const Ladder& ladder() {
  static const Ladder instance;
  return instance;
}

std::string describe(const Outcome& outcome) {
  return outcome.stage + ": " + outcome.result.error_class + ": " + outcome.result.message + "\n--- log tail ---\n" +
         outcome.result.log_tail;
}

// The server the ladder's pool uses (the registry hands out the same one for the same key).
pid_t ladder_server_pid() {
  HarnessServerSpec spec;
  spec.python = resolve_python(testing::test_python());
  spec.harness_dir = locate_harness_dir(testing::harness_dir());
  spec.arena_allocator = locate_arena_allocator();  // as the stages' pool names it: the same server
  spec.device = "cpu";
  spec.mode = "fork";
  spec.max_children = 2;
  return shared_harness_server(spec)->pid();
}

// Evaluates (task id, code) pairs two at a time, as a pipeline stage with concurrency 2 would.
std::vector<Outcome> evaluate_all(const std::vector<std::pair<std::string, std::string>>& candidates) {
  std::vector<std::future<Outcome>> running;
  for (const auto& [task, code] : candidates) {
    running.push_back(std::async(std::launch::async, [task = task, code = code] {
      return ladder().evaluate(bundled_task_job(task, code, "cpp"));
    }));
  }
  std::vector<Outcome> outcomes;
  for (auto& outcome : running) outcomes.push_back(outcome.get());
  return outcomes;
}

TEST(Ladder, CorrectCppCandidatesPass) {
  KFORGE_REQUIRE_TORCH();
  const std::vector<std::string> files = {"001_relu.py", "001_relu.1.py", "015_sum_over_dim.py", "019_softmax.py",
                                          "032_square_matmul.py", "043_conv2d.py", "058_numpy_relu.py"};
  std::vector<std::pair<std::string, std::string>> candidates;
  for (const std::string& file : files) {
    candidates.emplace_back(file.substr(0, file.find('.')), read_file(examples_dir() + "/candidates/cpp/" + file));
  }
  const std::vector<Outcome> outcomes = evaluate_all(candidates);
  for (size_t i = 0; i < files.size(); ++i) {
    const Outcome& outcome = outcomes[i];
    EXPECT_EQ(outcome.result.status, KF_VERDICT_PASS) << files[i] << " -> " << describe(outcome);
    EXPECT_EQ(outcome.stage, "eval.run") << files[i];
    EXPECT_LE(outcome.result.metric("max_abs_diff"), 1e-3) << files[i];
    EXPECT_FALSE(std::isnan(outcome.result.metric("mean_abs_diff"))) << files[i];
  }
}

// Every file in candidates/broken names its expected class on its first line
// (`# expect: crash`); each must land there, and the harness server must come out of
// all of them alive and still judging good code correctly.
TEST(Ladder, BrokenCandidatesLandInTheirClassAndTheServerSurvives) {
  KFORGE_REQUIRE_TORCH();
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(examples_dir() + "/candidates/broken")) {
    if (entry.path().extension() == ".py") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 12u);
  static const std::regex expect_line(R"(^# expect: (\w+))");
  std::vector<std::pair<std::string, std::string>> candidates;
  std::vector<std::string> expected;
  for (const std::string& file : files) {
    const std::string code = read_file(examples_dir() + "/candidates/broken/" + file);
    std::smatch match;
    ASSERT_TRUE(std::regex_search(code, match, expect_line)) << file << " has no '# expect: CLASS' first line";
    expected.push_back(match[1]);
    const size_t tag_end = file.find("__");
    candidates.emplace_back(file.substr(tag_end + 2, file.size() - tag_end - 2 - 3), code);
  }
  const std::string good = read_file(examples_dir() + "/candidates/cpp/001_relu.py");
  ASSERT_EQ(ladder().evaluate(bundled_task_job("001_relu", good, "cpp")).result.status, KF_VERDICT_PASS);
  const pid_t server = ladder_server_pid();
  ASSERT_GT(server, 0);

  const std::vector<Outcome> outcomes = evaluate_all(candidates);
  for (size_t i = 0; i < files.size(); ++i) {
    const Outcome& outcome = outcomes[i];
    // task_error (027's zeros: the task cannot judge anyone) is the harness's status error.
    EXPECT_EQ(outcome.result.status, expected[i] == "task_error" ? KF_VERDICT_ERROR : KF_VERDICT_FAIL)
        << files[i] << " -> " << describe(outcome);
    EXPECT_EQ(outcome.result.error_class, expected[i]) << files[i] << " -> " << describe(outcome);
    EXPECT_FALSE(outcome.result.message.empty()) << files[i];
    if (expected[i] == "compile_error") {
      EXPECT_NE(outcome.result.message.find("candidate.cpp:"), std::string::npos) << describe(outcome);
    }
    if (expected[i] == "crash") {
      EXPECT_NE(outcome.result.message.find("SIG"), std::string::npos) << describe(outcome);
    }
  }
  const Outcome after = ladder().evaluate(bundled_task_job("001_relu", good, "cpp"));
  EXPECT_EQ(after.result.status, KF_VERDICT_PASS) << describe(after);
  EXPECT_EQ(ladder_server_pid(), server) << "the harness server was restarted: a candidate took it down";
}

// ---- the reference of every bundled task, as its own candidate ----

TEST(ReferenceAsCandidate, PassesOnEveryBundledTask) {
  KFORGE_REQUIRE_TORCH();
  const auto& tasks = testing::bundled_tasks();
  std::vector<std::future<std::string>> failures;
  for (const TaskEntry& task : tasks) {
    failures.push_back(std::async(std::launch::async, [&task] {
      // A task that cannot judge anyone says so on its first line (027: `# expect: task_error`).
      std::smatch declared;
      const std::string text = read_file(task.path);
      const std::string first = text.substr(0, text.find('\n'));
      static const std::regex expect_line(R"(^# expect: (\w+))");
      const std::string expected = std::regex_search(first, declared, expect_line) ? declared[1].str() : "pass";
      const StageResult result = ladder().run().process(bundled_task_job(task.id));
      const std::string got = result.status == KF_VERDICT_PASS ? "pass" : result.error_class;
      return got == expected ? std::string()
                             : task.id + ": " + result.error_class + ": " + result.message + "\n";
    }));
  }
  std::string failed;
  for (auto& failure : failures) failed += failure.get();
  EXPECT_EQ(failed, "") << "of " << tasks.size() << " tasks";
}

// ---- verdict mapping, rules, budgets ----

TEST(ResultFromResponse, MapsStatusMetricsFlagsAndFindings) {
  HarnessResponse response;
  response.status = "fail";
  response.error_class = "checker_rejected";
  response.findings = json::array({{{"line", 12}, {"rule", "torch-compute-in-forward"}, {"message", "torch.relu does the work"},
                                    {"hint", "write the kernel"}}});
  response.metrics = {{"speedup", 14.0}, {"max_abs_diff", nullptr}};
  response.flags = {"speedup_over_10x", "network_not_isolated"};
  response.log_tail = "child output";
  const StageResult result = result_from_response(response);
  EXPECT_EQ(result.status, KF_VERDICT_FAIL);
  EXPECT_EQ(result.error_class, "checker_rejected");
  EXPECT_EQ(result.message, "line 12 [torch-compute-in-forward]: torch.relu does the work");
  EXPECT_EQ(result.metric("speedup"), 14.0);
  EXPECT_EQ(result.metric("suspicious_speedup"), 1.0);
  EXPECT_TRUE(std::isnan(result.metric("max_abs_diff")));
  for (const char* part : {"fix: write the kernel", "metric max_abs_diff: not finite", "flag speedup_over_10x",
                           "flag network_not_isolated", "child output"}) {
    EXPECT_NE(result.log_tail.find(part), std::string::npos) << part << " in:\n" << result.log_tail;
  }
  response.status = "error";
  response.error_class.clear();
  EXPECT_EQ(result_from_response(response).error_class, "harness_error");
  EXPECT_EQ(result_from_response(response).status, KF_VERDICT_ERROR);
}

TEST(ResultFromResponse, APassKeepsWhatTheHarnessSaysOfItInItsLog) {
  HarnessResponse response;
  response.status = "pass";
  response.message = "not timed: no call of the function by the task's test code can be timed";
  response.flags = {"timing_refused"};
  const StageResult result = result_from_response(response);
  EXPECT_EQ(result.status, KF_VERDICT_PASS);
  for (const char* part : {"flag timing_refused", "harness: not timed: no call of the function"}) {
    EXPECT_NE(result.log_tail.find(part), std::string::npos) << part << " in:\n" << result.log_tail;
  }
}

TEST(ToleranceRule, PresetsAndValidation) {
  EXPECT_EQ(tolerance_rule("default")["atol"]["float32"], 1e-4);
  EXPECT_EQ(tolerance_rule("default")["rtol"]["float16"], 1e-2);
  EXPECT_EQ(tolerance_rule("seed000"), (json{{"kind", "max_abs_diff"}, {"limit", 1e-3}}));
  EXPECT_EQ(tolerance_rule("kernelbench-v0")["atol"]["float32"], 1e-2);
  EXPECT_EQ(tolerance_rule("kernelbenchx")["atol"]["float32"], 1e-5);
  EXPECT_EQ(tolerance_rule("kernelbenchx")["rtol"]["float64"], 1e-5);
  EXPECT_EQ(tolerance_rule("kernelbenchx")["atol"]["bfloat16"], 5e-3);
  EXPECT_EQ(tolerance_rule("kernelbenchx")["rtol"]["float16"], 5e-3);
  EXPECT_THROW(tolerance_rule("loose"), std::invalid_argument);
  EXPECT_NO_THROW(validate_rule({{"kind", "allclose"}, {"atol", 1e-3}, {"rtol", {{"float32", 1e-3}}}}));
  EXPECT_NO_THROW(validate_rule({{"kind", "share_over_limit"}, {"rtol", 1e-2}, {"max_share", 0.01}}));
  EXPECT_THROW(validate_rule({{"kind", "max_abs_diff"}, {"limt", 1e-3}}), std::invalid_argument);
  EXPECT_THROW(validate_rule({{"kind", "close_enough"}}), std::invalid_argument);
  EXPECT_THROW(validate_rule(json::array()), std::invalid_argument);
  // The whole-output checks: in the default preset, and allowed in every kind's rule.
  EXPECT_EQ(tolerance_rule("default")["max_rel_l2"]["float32"], 5e-4);
  EXPECT_EQ(tolerance_rule("default")["max_coarse_share"], 0.01);
  EXPECT_FALSE(tolerance_rule("kernelbench-v0").contains("max_rel_l2"));
  EXPECT_NO_THROW(validate_rule({{"kind", "max_abs_diff"}, {"limit", 1e-3}, {"max_rel_l2", {{"float32", 1e-3}}},
                                 {"max_coarse_share", 0.01}, {"coarse_atol", 1e-5}, {"coarse_rtol", 1e-2},
                                 {"max_centered_rel_error", 0.5}}));
  EXPECT_THROW(validate_rule({{"kind", "allclose"}, {"max_rel_l2", {{"float32", "tight"}}}}), std::invalid_argument);
}

TEST(ToleranceRule, TheDefaultPresetIsTheHarnessDefaultRule) {
  // Two copies of the same numbers (the stage sends the preset; the harness defaults to
  // its DEFAULT_RULE): the harness's is read from its own module.
  const CommandResult printed =
      run_command({{testing::test_python(), "-c",
                    "import json, sys; sys.path.insert(0, sys.argv[1]); from kforge_harness import protocol; "
                    "print(json.dumps(protocol.DEFAULT_RULE))",
                    testing::harness_dir()},
                   {},
                   {}},
                  RunLimits::within(60));
  ASSERT_TRUE(printed.ok()) << printed.output;
  EXPECT_EQ(json::parse(printed.output), tolerance_rule("default"));
}

TEST(RequestBudget, FitsTheChildIntoTheStageTimeout) {
  const auto unlimited = request_budget(60, std::numeric_limits<double>::infinity());
  ASSERT_TRUE(unlimited);
  EXPECT_EQ(unlimited->child_timeout_seconds, 60);
  EXPECT_GT(unlimited->wait_seconds, 60);
  const auto tight = request_budget(60, 20);
  ASSERT_TRUE(tight);
  EXPECT_LT(tight->child_timeout_seconds, 20);
  EXPECT_LE(tight->wait_seconds, 20);
  // A short stage keeps a fifth of its time for the answer, and still runs its child.
  const auto short_stage = request_budget(60, 1);
  ASSERT_TRUE(short_stage);
  EXPECT_DOUBLE_EQ(short_stage->child_timeout_seconds, 0.8);
  EXPECT_LE(short_stage->wait_seconds, 1);
  EXPECT_FALSE(request_budget(60, 0.1));
}

// A rule object is checked by the stage: its kind and fields are no parameter's schema. The
// options that are (trials, baseline, the limits) eval.run's schema refuses at their place in
// the pipeline (plugin_test), before a RunStage is made.
TEST(RunStage, RejectsABadRule) {
  auto pool = std::make_shared<HarnessPool>(testing::test_harness_settings());
  RunStage::Options options;
  options.rule = {{"kind", "nope"}};
  EXPECT_THROW(RunStage(pool, options), std::invalid_argument);
}

TEST(RunStage, ReportsTimingMetricsWhenAsked) {
  KFORGE_REQUIRE_TORCH();
  RunStage::Options options;
  options.timing = true;
  options.timing_trials = 5;
  options.warmup = 1;
  const RunStage stage(std::make_shared<HarnessPool>(testing::test_harness_settings()), options);
  const StageResult result = stage.process(bundled_task_job("001_relu"));
  ASSERT_EQ(result.status, KF_VERDICT_PASS) << result.message;
  for (const char* metric : {"candidate_ms", "reference_ms", "speedup", "max_abs_diff", "mean_abs_diff"}) {
    EXPECT_FALSE(std::isnan(result.metric(metric))) << metric;
  }
  // The per-call statistics of both parties' timed calls (KernelBench's runtime_stats).
  for (const std::string party : {"candidate", "reference"}) {
    EXPECT_EQ(result.metric(party + "_timing_trials"), 5) << party;
    const double low = result.metric(party + "_ms_min"), high = result.metric(party + "_ms_max");
    EXPECT_LE(low, result.metric(party + "_ms_mean")) << party;
    EXPECT_LE(result.metric(party + "_ms_mean"), high) << party;
    EXPECT_LE(low, result.metric(party + "_ms")) << party;
    EXPECT_GE(result.metric(party + "_ms_std"), 0) << party;
  }
  ASSERT_NE(result.attribute(kAttrRunDevice), nullptr);
  EXPECT_EQ(*result.attribute(kAttrRunDevice), "cpu");
}

TEST(RunStage, TheRunsSecretSeedReachesTheRequest) {
  auto pool = std::make_shared<HarnessPool>(testing::test_harness_settings());
  const RunStage stage(pool, {});
  EvalJob job = bundled_task_job("001_relu");
  job.run_seed = 0xFEDCBA9876543210ULL;
  const json request = stage.request(job);
  EXPECT_EQ(request["options"]["seed"].get<uint64_t>(), 0xFEDCBA9876543210ULL);
  EXPECT_EQ(request["task"]["id"], "001_relu");  // the harness derives per-task seeds from it

  RunStage::Options pinned;  // a pipeline's `seed` reproduces a recorded run
  pinned.seed = 0xFEDCBA9876543210ULL;
  EvalJob other_run = job;
  other_run.run_seed = 7;
  EXPECT_EQ(RunStage(pool, pinned).request(other_run)["options"]["seed"].get<uint64_t>(), 0xFEDCBA9876543210ULL);

  // Outside a run: one seed drawn per stage, shared by its jobs, never a public constant.
  EvalJob outside = bundled_task_job("001_relu");
  const auto seed = stage.request(outside)["options"]["seed"].get<uint64_t>();
  EXPECT_EQ(stage.request(bundled_task_job("002_gelu"))["options"]["seed"].get<uint64_t>(), seed);
  EXPECT_NE(RunStage(pool, {}).request(outside)["options"]["seed"].get<uint64_t>(), seed);
}

// What the candidate's inputs were, as the digest candidate prints them.
std::string input_digests(const StageResult& result) {
  std::string found;
  const std::regex digest("input-digest \\S+ \\S+");
  for (auto it = std::sregex_iterator(result.log_tail.begin(), result.log_tail.end(), digest);
       it != std::sregex_iterator(); ++it) {
    found += it->str() + "\n";
  }
  return found;
}

TEST(RunStage, TheRunSeedDecidesTheInputs) {
  KFORGE_REQUIRE_TORCH();
  const RunStage stage(std::make_shared<HarnessPool>(testing::test_harness_settings()), {});
  const std::string code =
      read_file(testing::harness_dir() + "/tests/data/candidates/correct/input_digest_relu.py");
  auto run = [&](uint64_t seed) {
    EvalJob job = bundled_task_job("001_relu", code, "python");
    job.run_seed = seed;
    const StageResult result = stage.process(job);
    EXPECT_EQ(result.status, KF_VERDICT_PASS) << result.message << result.log_tail;
    return input_digests(result);
  };
  const std::string first = run(11), again = run(11), other = run(12);
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other);
}

}  // namespace
}  // namespace kforge::eval
