// One small run with everything the detail views show: a candidate fixed once (a diff, a
// failing then a passing run with timings), one whose fix failed (code unchanged in its
// last round), a first-time pass, and a hostile candidate whose code, message, log and
// model name carry markup and terminal escapes that must stay text everywhere.
#pragma once

#include <string>

#include "candidate_store.hpp"

namespace kforge_test {

inline const std::string kSoftmaxV0 = "// softmax, round 0\nfloat softmax(float x) {\n  return x;\n}\n";
inline const std::string kSoftmaxV1 = "// softmax, round 1\nfloat softmax(float x) {\n  return exp(x) / sum;\n}\n";
inline const std::string kSoftmaxDiff =
    "--- a/candidate.cpp\n+++ b/candidate.cpp\n@@ -1,4 +1,4 @@\n-// softmax, round 0\n+// softmax, round 1\n "
    "float softmax(float x) {\n-  return x;\n+  return exp(x) / sum;\n }\n";
inline const std::string kBrokenV1 = "// sample 1, round 1\nint broken() { return 0 }\n";
inline const std::string kBrokenDiff = "--- a/candidate.cpp\n+++ b/candidate.cpp\n@@ -1 +1 @@\n-// sample 1\n+// sample 1, round 1\n";
// Closes the page's script early, then tries three ways to run script; and retitles a terminal.
inline const std::string kHostileCode =
    "</script><script>window.__pwned = 'script';</script><img src=x onerror=\"window.__pwned = 'img'\">\n"
    "<!--<script>\n\x1b]0;pwned\x07\x1b[31mred\x1b[0m\n";
inline const std::string kHostileMessage = "<img src=x onerror=\"window.__pwned = 'message'\"> \x1b[2J";
inline const std::string kHostileModel = "<svg onload=\"window.__pwned = 'model'\">";

inline std::vector<StepSpec> generated(const std::string& code) {
  return {{"generate", KF_ROLE_GENERATE, kforge::VerdictStatus::Pass, "", "", "", {}, code},
          {"check", KF_ROLE_CHECK},
          {"compile", KF_ROLE_COMPILE}};
}

inline StepSpec timed_run(double reference_ms, double candidate_ms) {
  return {"run", KF_ROLE_RUN, kforge::VerdictStatus::Pass, "", "", "timing: 10 trials",
          {{"max_abs_diff", 1e-6}, {"mean_abs_diff", 2e-7}, {"trials", 5}, {"reference_ms", reference_ms},
           {"reference_ms_p90", reference_ms * 1.1}, {"candidate_ms", candidate_ms},
           {"candidate_ms_p90", candidate_ms * 1.1}, {"speedup", reference_ms / candidate_ms}}};
}

// Writes the run into `store` and returns its id.
inline int64_t write_investigation_run(kforge::Store& store) {
  std::vector<TaskSpec> tasks = {{"001_relu", "Activation", "C1"},
                                 {"019_softmax", "Activation", "C2"},
                                 {"666_hostile", "<b>Evil</b>", "C4"}};
  CandidateSpec relu{"001_relu", 0, "deepseek-chat", "cpp", 100, 50, 0.001, generated("float relu(float x);\n")};
  relu.steps.push_back(timed_run(1.0, 0.8));

  CandidateSpec fixed{"019_softmax", 0, "glm-5.1", "cpp", 3000, 1200, 0.012, generated(kSoftmaxV0)};
  fixed.steps.push_back({"run", KF_ROLE_RUN, kforge::VerdictStatus::Fail, "numerical_mismatch",
                         "max abs diff 0.03 at out[0][17]", "trial 1: max diff 0.03\ntrial 1: mismatch at [0, 17]",
                         {{"max_abs_diff", 0.03}, {"trials", 1}}, std::nullopt, std::nullopt, true});
  fixed.steps.push_back({"fix", KF_ROLE_FIX, kforge::VerdictStatus::Pass, "", "", "", {}, kSoftmaxV1, kSoftmaxDiff});
  fixed.steps.push_back({"check", KF_ROLE_CHECK});
  fixed.steps.push_back({"compile", KF_ROLE_COMPILE});
  fixed.steps.push_back(timed_run(2.0, 1.0));

  CandidateSpec failed{"019_softmax", 1, "glm-5.1", "cpp", 2000, 900, 0.009, generated("// sample 1\n")};
  failed.steps[2] = {"compile", KF_ROLE_COMPILE, kforge::VerdictStatus::Fail, "compile_error",
                     "candidate.cpp:1: expected ';'", "candidate.cpp:1:25: error: expected ';' before '}' token", {},
                     std::nullopt, std::nullopt, true};
  failed.steps.push_back({"fix", KF_ROLE_FIX, kforge::VerdictStatus::Pass, "", "", "", {}, kBrokenV1, kBrokenDiff});
  failed.steps.push_back({"check", KF_ROLE_CHECK});
  failed.steps.push_back({"compile", KF_ROLE_COMPILE, kforge::VerdictStatus::Fail, "compile_error",
                          "candidate.cpp:2: expected ';'", "candidate.cpp:2:24: error: expected ';'", {}, std::nullopt,
                          std::nullopt, true});
  failed.steps.push_back({"fix", KF_ROLE_FIX, kforge::VerdictStatus::Fail, "fix_failed", "the model returned no code"});

  CandidateSpec hostile{"666_hostile", 0, kHostileModel, "cpp", 10, 10, 0.0001, generated(kHostileCode)};
  hostile.steps.push_back({"run", KF_ROLE_RUN, kforge::VerdictStatus::Fail, "runtime_error", kHostileMessage,
                           "</script><!-- log \x1b[1mbold\n"});
  return write_run(store, tasks, {relu, fixed, failed, hostile}, "investigate", 2);
}

}  // namespace kforge_test
