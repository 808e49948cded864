#include "fix_agent.hpp"

#include <gtest/gtest.h>

namespace kforge::llm {
namespace {

const std::string kCode = "def f(x):\n    return x + 1\n";

TEST(ApplyFixAnswer, AppliesTheEditAndDiffsTheRound) {
  FixApplication fix = apply_fix_answer(
      kCode, R"({"analysis": "wrong op", "modifications": [{"old_string": "x + 1", "new_string": "x * 2"}], "summary": "use *"})", ExtractOptions{});
  EXPECT_EQ(fix.code, "def f(x):\n    return x * 2\n");
  EXPECT_EQ(fix.levels(), "exact");
  EXPECT_EQ(fix.summary, "use *");
  EXPECT_EQ(fix.analysis, "wrong op");
  EXPECT_EQ(fix.diff,
            "--- a/candidate.py\n+++ b/candidate.py\n@@ -1,2 +1,2 @@\n def f(x):\n"
            "-    return x + 1\n+    return x * 2\n");
}

TEST(ApplyFixAnswer, ReportsEachEditsLevel) {
  FixApplication fix = apply_fix_answer(
      kCode, R"([{"old_string": "def f(x):", "new_string": "def f(x, y=0):"},
                 {"old_string": "return x + 1", "new_string": "return x + y"}])", ExtractOptions{});
  EXPECT_EQ(fix.levels(), "exact,exact");
  fix = apply_fix_answer(kCode, R"([{"old_string": "return  x +  1", "new_string": "return x - 1"}])",
                         ExtractOptions{});
  EXPECT_EQ(fix.levels(), "whitespace");
}

TEST(ApplyFixAnswer, TakesACodeBlockAsARewrite) {
  FixApplication fix = apply_fix_answer(kCode, "```python\ndef f(x):\n    return 2 * x\n```", ExtractOptions{});
  EXPECT_TRUE(fix.rewrite);
  EXPECT_EQ(fix.levels(), "rewrite");
  EXPECT_EQ(fix.code, "def f(x):\n    return 2 * x\n");
}

TEST(ApplyFixAnswer, RefusesAFixThatChangesNothing) {
  EXPECT_THROW(apply_fix_answer(kCode, R"([{"old_string": "x + 1", "new_string": "x + 1"}])", ExtractOptions{}),
               std::runtime_error);
  EXPECT_THROW(apply_fix_answer(kCode, "```python\n" + kCode + "```", ExtractOptions{}), std::runtime_error);
}

TEST(ApplyFixAnswer, PassesParseAndApplyErrorsOn) {
  EXPECT_THROW(apply_fix_answer(kCode, "no idea", ExtractOptions{}), std::runtime_error);
  EXPECT_THROW(apply_fix_answer(kCode, R"([{"old_string": "not there at all, nothing like it", "new_string": "y"}])",
                                ExtractOptions{}),
               ApplyError);
}

}  // namespace
}  // namespace kforge::llm
