// Every metric of docs/metrics.md on a small hand-computed example: 4 tasks x 2 candidates
// from two models. The expected numbers are worked out in the comments.
#include "report/metrics.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace {

using kforge::Dataset;
using kforge::JobOutcome;
using kforge::Metrics;
using kforge::Verdict;
using kforge::VerdictStatus;

constexpr VerdictStatus kPass = VerdictStatus::Pass;
constexpr VerdictStatus kFail = VerdictStatus::Fail;
constexpr VerdictStatus kError = VerdictStatus::Error;

// Seconds by role, so that the time sums are easy to check: generate and fix 1 s, the
// others 0.5 s, cached verdicts 0 s.
Verdict attempt(kf_stage_role role, VerdictStatus status, int round, std::string error_class = "", bool cached = false) {
  Verdict v;
  v.role = role;
  v.status = status;
  v.round = round;
  v.error_class = std::move(error_class);
  v.cached = cached;
  v.seconds = cached ? 0.0 : (role == KF_ROLE_GENERATE || role == KF_ROLE_FIX ? 1.0 : 0.5);
  return v;
}

JobOutcome job(std::string task, int sample, std::string model, VerdictStatus status, int round, std::string error_class,
               std::optional<double> speedup, double cost, std::vector<Verdict> attempts) {
  JobOutcome j;
  j.task_id = std::move(task);
  j.sample = sample;
  j.model = std::move(model);
  j.status = status;
  j.round = round;
  j.error_class = std::move(error_class);
  j.message = j.error_class.empty() ? "" : "details of " + j.error_class;
  j.speedup = speedup;
  j.cost = cost;
  j.tokens_in = 100;
  j.tokens_out = 50;
  for (const auto& a : attempts) kforge::add_visit(j, a);
  return j;
}

Dataset example() {
  Dataset d;
  d.label = "example";
  d.tasks["t1"] = {"t1", "t1", "Activation", "C1", "kernelbench-torch", 1};
  d.tasks["t2"] = {"t2", "t2", "Activation", "C1", "kernelbench-torch", 1};
  d.tasks["t3"] = {"t3", "t3", "Reduce", "C2", "kernelbench-torch", 1};
  d.tasks["t4"] = {"t4", "t4", "MatrixMultiply", "C3", "kernelbench-torch", 1};
  const auto gen = KF_ROLE_GENERATE, fix = KF_ROLE_FIX, compile = KF_ROLE_COMPILE, run = KF_ROLE_RUN;
  d.jobs = {
      // 1: passes at once, 2.0x.
      job("t1", 0, "A", kPass, 0, "", 2.0, 0.01,
          {attempt(gen, kPass, 0), attempt(compile, kPass, 0), attempt(run, kPass, 0)}),
      // 2: compiles in both rounds, wrong numbers in both.
      job("t1", 1, "B", kFail, 1, "numerical_mismatch", std::nullopt, 0.02,
          {attempt(gen, kPass, 0), attempt(compile, kPass, 0), attempt(run, kFail, 0, "numerical_mismatch"),
           attempt(fix, kPass, 1), attempt(compile, kPass, 1), attempt(run, kFail, 1, "numerical_mismatch")}),
      // 3: compile error, fixed in round 1, 0.9x.
      job("t2", 0, "A", kPass, 1, "", 0.9, 0.01,
          {attempt(gen, kPass, 0), attempt(compile, kFail, 0, "compile_error"), attempt(fix, kPass, 1),
           attempt(compile, kPass, 1), attempt(run, kPass, 1)}),
      // 4: compile error, no fix.
      job("t2", 1, "A", kFail, 0, "compile_error", std::nullopt, 0.01,
          {attempt(gen, kPass, 0), attempt(compile, kFail, 0, "compile_error")}),
      // 5: the LLM call errs: no compile evidence at all.
      job("t3", 0, "B", kError, 0, "llm_error", std::nullopt, 0.0, {attempt(gen, kError, 0, "llm_error")}),
      // 6: never compiles, two fix rounds.
      job("t3", 1, "B", kFail, 2, "compile_error", std::nullopt, 0.03,
          {attempt(gen, kPass, 0), attempt(compile, kFail, 0, "compile_error"), attempt(fix, kPass, 1),
           attempt(compile, kFail, 1, "compile_error"), attempt(fix, kPass, 2),
           attempt(compile, kFail, 2, "compile_error")}),
      // 7: passes from the verdict cache, 1.2x.
      job("t4", 0, "A", kPass, 0, "", 1.2, 0.01,
          {attempt(gen, kPass, 0), attempt(compile, kPass, 0, "", true), attempt(run, kPass, 0, "", true)}),
      // 8: passes at once, 3.0x: the best of t4.
      job("t4", 1, "B", kPass, 0, "", 3.0, 0.02,
          {attempt(gen, kPass, 0), attempt(compile, kPass, 0), attempt(run, kPass, 0)}),
  };
  return d;
}

// Every task's row in task order, as a report reads them.
std::vector<kforge::TaskResult> task_rows(const Dataset& d) {
  std::vector<kforge::TaskResult> rows;
  kforge::for_each_task(d, [&](const kforge::TaskInfo& task, const std::vector<JobOutcome>& jobs) {
    rows.push_back(kforge::task_result(task, jobs));
  });
  return rows;
}

void expect_share(const kforge::Share& s, uint64_t count, uint64_t total) {
  EXPECT_EQ(s.count, count);
  EXPECT_EQ(s.total, total);
}

TEST(PassAtK, MatchesTheBinomialFormula) {
  // 1 - C(3,2)/C(5,2) = 1 - 3/10
  EXPECT_NEAR(kforge::pass_at_k(5, 2, 2), 0.7, 1e-12);
  // 1 - C(8,1)/C(10,1) = 0.2: pass@1 is c/n
  EXPECT_NEAR(kforge::pass_at_k(10, 2, 1), 0.2, 1e-12);
  EXPECT_EQ(kforge::pass_at_k(10, 0, 3), 0.0);
  EXPECT_EQ(kforge::pass_at_k(10, 10, 1), 1.0);
  EXPECT_EQ(kforge::pass_at_k(3, 1, 3), 1.0);  // n - c < k: every draw of 3 holds the pass
}

TEST(PassAtK, StableWhereBinomialsOverflow) {
  // C(1000, 500) overflows a double; the product form does not. 1 - C(990,500)/C(1000,500)
  // = 1 - prod_{i=991..1000} (1 - 500/i), close to 1 - 2^-10.
  const double value = kforge::pass_at_k(1000, 10, 500);
  EXPECT_TRUE(std::isfinite(value));
  EXPECT_NEAR(value, 1.0 - std::pow(0.5, 10), 2e-3);
}

TEST(AddVisit, RunStagesProveCompilationUnlessTheyReportCompileErrors) {
  JobOutcome j;
  kforge::add_visit(j, attempt(KF_ROLE_RUN, kFail, 0, "runtime_error"));
  kforge::add_visit(j, attempt(KF_ROLE_RUN, kFail, 1, "compile_error"));
  kforge::add_visit(j, attempt(KF_ROLE_CHECK, kPass, 2));
  EXPECT_TRUE(j.compile_evidence);
  ASSERT_EQ(j.compiled_in_round.size(), 1u);
  EXPECT_EQ(j.compiled_in_round[0], 1);
  EXPECT_EQ(j.attempts, 3);
  EXPECT_DOUBLE_EQ(j.eval_seconds, 1.5);
  EXPECT_DOUBLE_EQ(j.gen_seconds, 0.0);
}

TEST(AddVisit, ReplayedAnswersCountTheirRecordedDurationAsGenerationTime) {
  JobOutcome j;
  Verdict replayed = attempt(KF_ROLE_GENERATE, kPass, 0);
  replayed.seconds = 0.001;
  replayed.metrics = {{KF_METRIC_RECORDED_SECONDS, 12.5}};
  kforge::add_visit(j, replayed);
  kforge::add_visit(j, attempt(KF_ROLE_FIX, kPass, 1));  // live: 1 s
  EXPECT_DOUBLE_EQ(j.gen_seconds, 13.5);
  EXPECT_DOUBLE_EQ(j.seconds, 1.001);  // wall time stays what the run took
}

// Roles decide, whatever the kinds are called: a stage of role other (model selection)
// is neither evaluation nor generation time, and a check proves nothing about building.
TEST(AddVisit, OnlyRolesCount) {
  JobOutcome j;
  Verdict select = attempt(KF_ROLE_OTHER, kPass, 0);
  select.kind = "eval.compile.cpp";  // a name that once meant "compile": it means nothing now
  kforge::add_visit(j, select);
  kforge::add_visit(j, attempt(KF_ROLE_CHECK, kFail, 0, "syntax_error"));
  EXPECT_FALSE(j.compile_evidence);
  EXPECT_DOUBLE_EQ(j.eval_seconds, 0.5);
  EXPECT_DOUBLE_EQ(j.gen_seconds, 0.0);
  EXPECT_DOUBLE_EQ(j.seconds, 1.0);
}

TEST(Metrics, HeadlineNumbers) {
  const Metrics m = kforge::compute_metrics(example());
  EXPECT_EQ(m.label, "example");
  EXPECT_EQ(m.tasks, 4u);
  expect_share(m.solved, 3, 4);      // t1, t2, t4
  expect_share(m.candidates, 4, 8);  // jobs 1, 3, 7, 8
  EXPECT_EQ(m.first_pass, 2u);       // t1 (job 1), t4 (jobs 7, 8)
  EXPECT_EQ(m.solved_by_fix, 1u);    // t2 (job 3, round 1)
  EXPECT_EQ(m.fix_rounds, 4u);       // rounds 0+1+1+0+0+2+0+0
  EXPECT_TRUE(m.compile_known);
  expect_share(m.compiled, 3, 4);  // t3 never compiled
}

TEST(Metrics, PerModel) {
  const Metrics m = kforge::compute_metrics(example());
  ASSERT_EQ(m.models.size(), 2u);
  const auto& a = m.models[0];  // best first
  EXPECT_EQ(a.model, "A");
  expect_share(a.solved, 3, 3);      // t1, t2, t4
  expect_share(a.candidates, 3, 4);  // jobs 1, 3, 7 of 1, 3, 4, 7
  EXPECT_EQ(a.first_pass, 2u);       // t1, t4
  EXPECT_EQ(a.solved_by_fix, 1u);    // t2
  EXPECT_EQ(a.fix_rounds, 1u);
  expect_share(a.by_complexity.at("C1"), 2, 2);
  expect_share(a.by_complexity.at("C3"), 1, 1);
  EXPECT_EQ(a.by_complexity.count("C2"), 0u);
  const auto& b = m.models[1];
  EXPECT_EQ(b.model, "B");
  expect_share(b.solved, 1, 3);  // t4 of t1, t3, t4
  expect_share(b.candidates, 1, 4);
  EXPECT_EQ(b.first_pass, 1u);
  EXPECT_EQ(b.solved_by_fix, 0u);
  EXPECT_EQ(b.fix_rounds, 3u);  // 1 + 0 + 2 + 0
  expect_share(b.by_complexity.at("C1"), 0, 1);
  expect_share(b.by_complexity.at("C2"), 0, 1);
}

TEST(Metrics, ComplexityAndCategoryWithCompileRate) {
  const Metrics m = kforge::compute_metrics(example());
  EXPECT_EQ(m.complexity_classes, (std::vector<std::string>{"C1", "C2", "C3"}));
  ASSERT_EQ(m.by_complexity.size(), 3u);
  expect_share(m.by_complexity[0].solved, 2, 2);
  expect_share(m.by_complexity[0].compiled, 2, 2);
  EXPECT_NEAR(*m.by_complexity[0].mean_speedup, (2.0 + 0.9) / 2, 1e-12);
  expect_share(m.by_complexity[1].solved, 0, 1);
  expect_share(m.by_complexity[1].compiled, 0, 1);
  EXPECT_FALSE(m.by_complexity[1].mean_speedup);
  EXPECT_NEAR(*m.by_complexity[2].mean_speedup, 3.0, 1e-12);
  ASSERT_EQ(m.by_category.size(), 3u);  // sorted by name
  EXPECT_EQ(m.by_category[0].name, "Activation");
  expect_share(m.by_category[0].solved, 2, 2);
  EXPECT_EQ(m.by_category[1].name, "MatrixMultiply");
  EXPECT_EQ(m.by_category[2].name, "Reduce");
  expect_share(m.by_category[2].compiled, 0, 1);
}

TEST(Metrics, ErrorSharesOfFailedCandidates) {
  const Metrics m = kforge::compute_metrics(example());
  // Jobs 2, 4 and 6 failed as candidates; job 5's LLM gave no candidate (an error: not
  // judged), counted apart.
  EXPECT_EQ(m.failed_candidates, 3u);
  ASSERT_EQ(m.errors.size(), 2u);
  EXPECT_EQ(m.errors[0].error_class, "compile_error");
  EXPECT_EQ(m.errors[0].count, 2u);
  EXPECT_DOUBLE_EQ(m.errors[0].share, 2.0 / 3.0);
  EXPECT_EQ(m.errors[1].error_class, "numerical_mismatch");
  EXPECT_EQ(m.not_judged_candidates, 1u);
  ASSERT_EQ(m.not_judged.size(), 1u);
  EXPECT_EQ(m.not_judged[0].error_class, "llm_error");
  EXPECT_DOUBLE_EQ(m.not_judged[0].share, 1.0);
}

TEST(Metrics, PerRoundCurves) {
  const Metrics m = kforge::compute_metrics(example());
  ASSERT_EQ(m.rounds.size(), 3u);
  // Round 0: passed 1, 7, 8; compiled 1, 2, 7, 8; speedups 2.0, 1.2, 3.0.
  EXPECT_EQ(m.rounds[0].reached, 8u);
  expect_share(m.rounds[0].passed, 3, 8);
  expect_share(m.rounds[0].compiled, 4, 8);
  EXPECT_NEAR(*m.rounds[0].mean_speedup, 6.2 / 3, 1e-12);
  // Round 1: job 3 is fixed (0.9x); job 2 compiled again; job 6 still does not.
  EXPECT_EQ(m.rounds[1].reached, 3u);  // jobs 2, 3, 6
  expect_share(m.rounds[1].passed, 4, 8);
  expect_share(m.rounds[1].compiled, 5, 8);
  EXPECT_NEAR(*m.rounds[1].mean_speedup, 7.1 / 4, 1e-12);
  // Round 2: only job 6 goes on, and fails again.
  EXPECT_EQ(m.rounds[2].reached, 1u);
  expect_share(m.rounds[2].passed, 4, 8);
  expect_share(m.rounds[2].compiled, 5, 8);
}

TEST(Metrics, FastPAndGeometricMean) {
  const Metrics m = kforge::compute_metrics(example());
  // Best correct speedups: t1 2.0, t2 0.9, t4 3.0 (sample 1); t3 unsolved.
  ASSERT_EQ(m.fast_p.size(), 6u);
  const uint64_t expected[] = {3, 3, 3, 2, 2, 1};  // p = 0, 0.5, 0.8, 1, 1.5, 2 (2.0 is not > 2)
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(m.fast_p[i].p, kforge::kFastPThresholds[i]);
    expect_share(m.fast_p[i].tasks, expected[i], 4);
  }
  EXPECT_EQ(m.speedup_tasks, 3u);
  EXPECT_NEAR(*m.geomean_speedup, std::cbrt(2.0 * 0.9 * 3.0), 1e-12);
}

TEST(Metrics, PassAtKAndBestOfK) {
  const Metrics m = kforge::compute_metrics(example());
  ASSERT_EQ(m.pass_at_k.size(), 2u);  // every task has n = 2
  EXPECT_NEAR(m.pass_at_k[0].value, (0.5 + 0.5 + 0 + 1) / 4, 1e-12);
  EXPECT_NEAR(m.pass_at_k[1].value, 3.0 / 4, 1e-12);
  const std::vector<kforge::TaskResult> per_task = task_rows(example());
  ASSERT_EQ(per_task.size(), 4u);
  EXPECT_EQ(per_task[0].task_id, "t1");
  EXPECT_EQ(*per_task[0].best_sample, 0);
  EXPECT_EQ(*per_task[3].best_sample, 1);  // 3.0x beats 1.2x
  EXPECT_DOUBLE_EQ(*per_task[3].best_speedup, 3.0);
  const auto& t3 = per_task[2];
  EXPECT_FALSE(t3.solved);
  EXPECT_FALSE(t3.best_sample);
  ASSERT_EQ(t3.failures.size(), 2u);
  EXPECT_EQ(t3.failures[0].describe(), "sample 0 round 0: llm_error: details of llm_error");
  EXPECT_EQ(t3.failures[1].error_class, "compile_error");
  EXPECT_FALSE(t3.only_errors);  // job 6 failed, it did not err
  EXPECT_TRUE(per_task[0].failures.empty());  // solved tasks list no failures
}

TEST(Metrics, TimeTokensCostAndCache) {
  const Metrics m = kforge::compute_metrics(example());
  EXPECT_DOUBLE_EQ(m.gen_seconds, 12.0);  // 12 llm.* verdicts
  EXPECT_DOUBLE_EQ(m.eval_seconds, 7.5);  // 15 uncached eval.* verdicts
  EXPECT_EQ(m.attempts, 29u);
  EXPECT_EQ(m.cache_hits, 2u);
  EXPECT_DOUBLE_EQ(m.tokens_in, 800);
  EXPECT_DOUBLE_EQ(m.tokens_out, 400);
  EXPECT_NEAR(m.cost, 0.11, 1e-12);
  EXPECT_NEAR(*m.cost_per_pass, 0.11 / 3, 1e-12);
}

TEST(Metrics, ModelSelection) {
  const Metrics m = kforge::compute_metrics(example());
  ASSERT_EQ(m.selection.size(), 2u);
  EXPECT_EQ(m.selection[0].model, "A");
  EXPECT_EQ(m.selection[0].chosen, 4u);
  EXPECT_DOUBLE_EQ(m.selection[0].share, 0.5);
  expect_share(m.selection[0].passed, 3, 4);
  expect_share(m.selection[1].passed, 1, 4);
}

TEST(Metrics, TaskWhoseCandidatesAllErredIsAnError) {
  Dataset d;
  d.jobs = {job("x", 0, "", kError, 0, "harness_error", std::nullopt, 0, {attempt(KF_ROLE_RUN, kError, 0, "harness_error")})};
  const Metrics m = kforge::compute_metrics(d);
  const std::vector<kforge::TaskResult> per_task = task_rows(d);
  ASSERT_EQ(per_task.size(), 1u);
  EXPECT_TRUE(per_task[0].only_errors);
  EXPECT_EQ(m.error_tasks, 1u);
  EXPECT_TRUE(m.selection.empty());  // no model named
  ASSERT_EQ(m.models.size(), 1u);
  EXPECT_EQ(m.models[0].model, "(none)");
  EXPECT_FALSE(m.cost_per_pass);
}

TEST(Metrics, NoJobsGiveEmptyMetrics) {
  const Metrics m = kforge::compute_metrics(Dataset{});
  EXPECT_EQ(m.tasks, 0u);
  EXPECT_TRUE(m.rounds.empty());
  EXPECT_TRUE(m.pass_at_k.empty());
  EXPECT_FALSE(m.geomean_speedup);
  EXPECT_EQ(m.solved.rate(), 0.0);
}

TEST(Metrics, WithoutCompileOrRunStagesCompileRateIsUnknown) {
  Dataset d;
  d.jobs = {job("x", 0, "", kPass, 0, "", std::nullopt, 0, {attempt(KF_ROLE_OTHER, kPass, 0)})};
  const Metrics m = kforge::compute_metrics(d);
  EXPECT_FALSE(m.compile_known);
  EXPECT_EQ(m.rounds[0].compiled.total, 0u);  // not counted when unknown
}

}  // namespace
