// docs/extending.md's recipe 4, done: an L1 rule of a pipeline's own
// (examples/extending/rules/single-thread.yaml), given to eval.check with `rules:`, through
// the built plugin and the real harness, as a pipeline run gives it.
#include "test_env.hpp"

#include <gtest/gtest.h>
#include <kforge/testing.hpp>

#include <regex>

namespace kforge::eval::testing {
namespace {

using kforge::testing::StageHarness;
using kforge::testing::TestJob;

const std::string kRulesDir = KFORGE_EVAL_REPO_DIR "/examples/extending";

std::string check_params(const std::string& extra) {
  return "{python: '" + test_python() + "', harness_dir: '" + harness_dir() + "', max_children: 1" + extra + "}";
}

TestJob relu_candidate(const std::string& code) {
  kforge::testing::load_plugin(KFORGE_EVAL_PLUGIN_FILE);
  TestJob job;
  job.strings[KF_KEY_TASK_ID] = "001_relu";
  job.strings[KF_KEY_TASK_PATH] = examples_dir() + "/tasks/001_relu.py";
  job.strings[KF_KEY_CANDIDATE_CODE] = code;
  job.strings[KF_KEY_CANDIDATE_LANGUAGE] = "cpp";
  return job;
}

TEST(ExtendingRecipe, AnL1RuleOfThePipelinesOwnRejectsWhatItNames) {
  KFORGE_REQUIRE_TORCH();
  const std::string relu = read_file(examples_dir() + "/candidates/cpp/001_relu.py");
  ASSERT_NE(relu.find("#pragma omp"), std::string::npos) << "the bundled candidate the test relies on changed";

  // Without the rule, the bundled candidate passes L1 (OpenMP is allowed by default).
  TestJob plain = relu_candidate(relu);
  StageHarness default_rules("eval.check", check_params(""));
  ASSERT_TRUE(default_rules.created()) << default_rules.create_error();
  ASSERT_EQ(default_rules.process(plain), "");
  EXPECT_EQ(plain.verdict.status, KF_VERDICT_PASS) << plain.verdict.message << "\n" << plain.log_tail;

  // With it, the candidate is rejected, naming the rule, the place and the hint.
  StageHarness check("eval.check", check_params(", rules: rules/single-thread.yaml"), kRulesDir);
  ASSERT_TRUE(check.created()) << check.create_error();
  TestJob job = relu_candidate(relu);
  ASSERT_EQ(check.process(job), "");
  EXPECT_EQ(job.verdict.status, KF_VERDICT_FAIL);
  EXPECT_EQ(job.verdict.error_class, KF_ERROR_CHECKER_REJECTED);
  EXPECT_TRUE(std::regex_search(job.verdict.message,
                                std::regex(R"(^line \d+:\d+: \[single-thread-openmp\] the native code uses OpenMP \(#pragma omp\); )"
                                           R"(this benchmark times single-threaded kernels$)")))
      << job.verdict.message;
  EXPECT_NE(job.log_tail.find("fix: remove the #pragma omp lines"), std::string::npos) << job.log_tail;

  // Following the hint passes.
  const std::string single_threaded = std::regex_replace(relu, std::regex(R"(\n[ \t]*#pragma omp[^\n]*)"), "");
  ASSERT_EQ(single_threaded.find("omp"), std::string::npos);
  TestJob fixed = relu_candidate(single_threaded);
  ASSERT_EQ(check.process(fixed), "");
  EXPECT_EQ(fixed.verdict.status, KF_VERDICT_PASS) << fixed.verdict.message << "\n" << fixed.log_tail;
}

TEST(ExtendingRecipe, AMistakeInTheRulesFileIsRefusedAtItsPlaceBeforeAnythingRuns) {
  const std::string dir = fresh_temp_dir("extending-rule");
  std::string rules = read_file(kRulesDir + "/rules/single-thread.yaml");
  const size_t kind = rules.find("kind: string_pattern");
  ASSERT_NE(kind, std::string::npos);
  rules.replace(kind, 20, "kind: string_patern");
  write_file(dir + "/rules.yaml", rules);
  kforge::testing::load_plugin(KFORGE_EVAL_PLUGIN_FILE);
  StageHarness check("eval.check", check_params(", rules: rules.yaml"), dir);
  EXPECT_FALSE(check.created());
  EXPECT_NE(check.create_error().find("rules.yaml:6:5: rule #1 (single-thread-openmp): unknown kind 'string_patern'"),
            std::string::npos)
      << check.create_error();
}

}  // namespace
}  // namespace kforge::eval::testing
