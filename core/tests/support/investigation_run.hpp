// One small run with everything the detail views show: a candidate fixed once (a diff, a
// failing then a passing run with every timing statistic), one whose fix failed (code
// unchanged in its last round), a first-time pass timed as a store before the statistics
// recorded it (medians and p90s only), one measured for correctness but not timed, and a
// hostile candidate whose code, message, log and model name carry markup and terminal
// escapes that must stay text everywhere.
#pragma once

#include <string>
#include <tuple>
#include <utility>
#include <vector>

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

// A run verdict with every timing statistic eval.run records for both parties. Each
// statistic has its own value (mean 1.05x the median, std 0.04x, min 0.9x, p90 1.1x,
// max 1.5x; 100 timed reference calls, 50 candidate calls), so that a column or row shown
// in the wrong place reads wrong.
inline StepSpec timed_run(double reference_ms, double candidate_ms) {
  std::vector<std::pair<std::string, double>> metrics = {{"max_abs_diff", 1e-6}, {"mean_abs_diff", 2e-7}, {"trials", 5}};
  for (const auto& [party, median, trials] :
       {std::tuple{"reference", reference_ms, 100.0}, std::tuple{"candidate", candidate_ms, 50.0}}) {
    const std::string name = party;
    metrics.insert(metrics.end(), {{name + "_ms", median},
                                   {name + "_ms_p90", median * 1.1},
                                   {name + "_ms_mean", median * 1.05},
                                   {name + "_ms_std", median * 0.04},
                                   {name + "_ms_min", median * 0.9},
                                   {name + "_ms_max", median * 1.5},
                                   {name + "_timing_trials", trials}});
  }
  metrics.emplace_back("speedup", reference_ms / candidate_ms);
  return {"run", KF_ROLE_RUN, kforge::VerdictStatus::Pass, "", "", "timing: 10 trials", metrics};
}

// A run verdict of a store written before eval.run recorded more than the medians and
// p90s: the other statistics were never measured.
inline StepSpec medians_only_run(double reference_ms, double candidate_ms) {
  return {"run", KF_ROLE_RUN, kforge::VerdictStatus::Pass, "", "", "",
          {{"max_abs_diff", 1e-6}, {"trials", 5}, {"reference_ms", reference_ms},
           {"reference_ms_p90", reference_ms * 1.1}, {"candidate_ms", candidate_ms},
           {"candidate_ms_p90", candidate_ms * 1.1}, {"speedup", reference_ms / candidate_ms}}};
}

// A run verdict with correctness statistics and no timing (eval.run with timing: false).
inline StepSpec untimed_run() {
  return {"run", KF_ROLE_RUN, kforge::VerdictStatus::Pass, "", "", "", {{"max_abs_diff", 2e-6}, {"trials", 5}}};
}

// Writes the run into `store` and returns its id.
inline int64_t write_investigation_run(kforge::Store& store) {
  std::vector<TaskSpec> tasks = {{"001_relu", "Activation", "C1"},
                                 {"019_softmax", "Activation", "C2"},
                                 {"666_hostile", "<b>Evil</b>", "C4"}};
  CandidateSpec relu{"001_relu", 0, "deepseek-chat", "cpp", 100, 50, 0.001, generated("float relu(float x);\n")};
  relu.steps.push_back(medians_only_run(1.0, 0.8));
  CandidateSpec untimed{"001_relu", 1, "deepseek-chat", "cpp", 100, 50, 0.001, generated("float relu(float x);\n")};
  untimed.steps.push_back(untimed_run());

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
  return write_run(store, tasks, {relu, untimed, fixed, failed, hostile}, "investigate", 2);
}

}  // namespace kforge_test
