// The run-end agreement check (run/agreement.hpp) in process: results.jsonl is read back
// whole at the end of a run and held to the store job by job, so a line someone else wrote,
// changed or removed while the run went is found, says where and what, and fails the run;
// --resume makes the file agree with the store again. The tampering is done by an observer
// that runs after the run's own recorder, at a chosen finished job: deterministic.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/pipeline/load.hpp"
#include "engine/registry.hpp"
#include "kforge_process.hpp"
#include "engine/outcome.hpp"
#include "run/agreement.hpp"
#include "run/results.hpp"
#include "run/session.hpp"
#include "store/store.hpp"

namespace {

namespace fs = std::filesystem;
using kforge_test::TempDir;
using Json = nlohmann::json;

const std::string kPipeline = std::string(KFORGE_TEST_DATA_DIR) + "/session/agreement.yaml";

std::vector<std::string> read_lines(const fs::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void write_lines(const fs::path& path, const std::vector<std::string>& lines) {
  std::ofstream out(path, std::ios::trunc);
  for (const std::string& line : lines) out << line << '\n';
}

void append(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::app) << text; }

// The index of the line of (task, sample).
size_t line_of(const std::vector<std::string>& lines, const std::string& task, int sample) {
  for (size_t i = 0; i < lines.size(); ++i) {
    const Json line = Json::parse(lines[i]);
    if (line["task"] == task && line["sample"] == sample) return i;
  }
  ADD_FAILURE() << "no line for " << task << " sample " << sample;
  return 0;
}

// Acts on results.jsonl when the run's `at`-th job has finished (its line is written: the
// run's recorder comes first), as another process writing into the output directory would.
class Tamper : public kforge::RunObserver {
 public:
  Tamper(fs::path results, uint64_t at, std::function<void(const fs::path&)> act)
      : results_(std::move(results)), at_(at), act_(std::move(act)) {}
  void job_finished(const kforge::Job&, const kforge::JobOutcome&) override {
    if (++finished_ == at_) act_(results_);
  }

 private:
  fs::path results_;
  uint64_t at_;
  std::function<void(const fs::path&)> act_;
  uint64_t finished_ = 0;
};

constexpr uint64_t kJobs = 6;  // 3 tasks x 2 candidates; npu-1's two fail to compile

class AgreementTest : public ::testing::Test {
 protected:
  void SetUp() override { registry.load(std::string(KFORGE_TEST_EXTRA_PLUGIN_DIR) + "/libtest_npu.so"); }

  kforge::SessionResult run(kforge::RunObserver* observer = nullptr, bool resume = false,
                            bool cancel_at_third = false) {
    const kforge::Plan plan = kforge::load_pipeline(kPipeline, registry);
    kforge::SessionOptions options;
    options.out_dir = out().string();
    options.resume = resume;
    options.kforge_version = "test";
    if (cancel_at_third) options.max_in_flight = 1;  // the jobs after the third are not all in flight
    kforge::RunSession session(plan, options);
    Tamper cancel(results(), 3, [&session](const fs::path&) { session.cancel_token().request(); });
    return session.run(cancel_at_third ? &cancel : observer);
  }

  kforge::SessionResult tampered_at_end(std::function<void(const fs::path&)> act) {
    Tamper tamper(results(), kJobs, std::move(act));
    return run(&tamper);
  }

  fs::path out() const { return dir / "out"; }
  fs::path results() const { return out() / "results.jsonl"; }

  // A change made at the last job is caught either by the watch that looks at the files every
  // 250 ms during the run (the run stops with a write failure) or by the run-end check,
  // whichever sees it first. Either way the run fails; the run-end check, asked here when the
  // watch was first, must name what changed.
  void expect_caught(const kforge::SessionResult& result, const std::vector<std::string>& words) {
    EXPECT_EQ(result.status, kforge::RunStatus::Failed);
    std::string found = result.disagreement;
    if (found.empty()) {
      EXPECT_NE(result.write_failure.find("while the run was writing it"), std::string::npos) << result.write_failure;
      kforge::Store store((out() / kforge::kStoreFileName).string());
      found = kforge::check_results(results().string(), store, result.run_id).describe();
    }
    EXPECT_NE(found.find("results.jsonl disagrees with the store (kforge.db)"), std::string::npos) << found;
    for (const std::string& w : words) EXPECT_NE(found.find(w), std::string::npos) << found;
  }

  kforge::Registry registry;
  TempDir dir;
};

TEST_F(AgreementTest, ANormalRunAgrees) {
  const auto result = run();
  EXPECT_EQ(result.status, kforge::RunStatus::Finished);
  EXPECT_EQ(result.disagreement, "");
  EXPECT_EQ(result.summary.passed, 4u);
  EXPECT_EQ(result.summary.failed, 2u);
  kforge::Store store((out() / kforge::kStoreFileName).string());
  const auto check = kforge::check_results(results().string(), store, result.run_id);
  EXPECT_TRUE(check.agrees()) << check.describe();
  EXPECT_EQ(check.lines, kJobs);
}

TEST_F(AgreementTest, AResumedRunAgreesWithTheLinesOfTheRunItContinues) {
  const auto cut = run(nullptr, false, /*cancel_at_third=*/true);
  ASSERT_EQ(cut.status, kforge::RunStatus::Interrupted) << cut.disagreement;
  EXPECT_EQ(cut.disagreement, "");
  ASSERT_LT(read_lines(results()).size(), kJobs);
  const auto resumed = run(nullptr, /*resume=*/true);
  EXPECT_EQ(resumed.status, kforge::RunStatus::Finished);
  EXPECT_EQ(resumed.disagreement, "");
  EXPECT_EQ(read_lines(results()).size(), kJobs);
  kforge::Store store((out() / kforge::kStoreFileName).string());
  const auto check = kforge::check_results(results().string(), store, cut.run_id);
  EXPECT_TRUE(check.agrees()) << check.describe();
}

// Someone else appends a line after the run's last own line: a job that is not the run's.
TEST_F(AgreementTest, AForeignLineAppendedDuringTheRunIsCaught) {
  const auto result = tampered_at_end([](const fs::path& path) {
    Json forged = Json::parse(read_lines(path).front());
    forged["task"] = "npu-9";
    forged["status"] = "pass";
    append(path, forged.dump() + "\n");
  });
  // The forged line copies the first line written, whose sample (0 or 1) is whichever job
  // ended first.
  expect_caught(result, {"results.jsonl:7: job (task 'npu-9', sample ", ") is not a job the store finished",
                         "1 of its 7 lines disagrees"});
}

// A line appended in the middle of the run: results.jsonl is written by appending, so the
// run's next lines do not go over it; the run finds the file grown by bytes it did not
// write before its next write, stops, and leaves the other line whole.
TEST_F(AgreementTest, AForeignLineWrittenMidRunStopsTheRunAndIsKeptWhole) {
  std::string foreign;
  Tamper tamper(results(), 2, [&foreign](const fs::path& path) {
    Json forged = Json::parse(read_lines(path).front());
    forged["task"] = "npu-9";
    forged["message"] = std::string(8000, 'x');
    foreign = forged.dump();
    append(path, foreign + "\n");
  });
  const auto result = run(&tamper);
  EXPECT_EQ(result.status, kforge::RunStatus::Failed);
  EXPECT_NE(result.write_failure.find("this run did not write (another process appended to it)"), std::string::npos)
      << result.write_failure;
  const auto lines = read_lines(results());
  EXPECT_EQ(lines.size(), 3u) << "two of the run's, the other one, none after it";
  EXPECT_EQ(std::count(lines.begin(), lines.end(), foreign), 1);
}

TEST_F(AgreementTest, AForgedPassForAFailedJobIsCaughtWithWhatTheStoreSays) {
  size_t forged_at = 0;
  const auto result = tampered_at_end([&forged_at](const fs::path& path) {
    auto lines = read_lines(path);
    forged_at = line_of(lines, "npu-1", 1);
    Json forged = Json::parse(lines[forged_at]);
    forged["status"] = "pass";
    forged["error_class"] = "";
    forged["message"] = "";
    lines[forged_at] = forged.dump();
    write_lines(path, lines);
  });
  expect_caught(result, {"results.jsonl:" + std::to_string(forged_at + 1) +
                             ": job (task 'npu-1', sample 1), which the store has as fail (compile_error): status: "
                             "the line says \"pass\", the store says \"fail\"",
                         "1 of its 6 lines disagrees, 1 job the store finished has no line that agrees"});
}

// The status agrees; a stage's metric (the speedup reports read) does not.
TEST_F(AgreementTest, AForgedSpeedupIsCaughtAtTheMetric) {
  const auto result = tampered_at_end([](const fs::path& path) {
    auto lines = read_lines(path);
    const size_t at = line_of(lines, "npu-2", 0);
    Json forged = Json::parse(lines[at]);
    forged["stages"].back()["metrics"]["speedup"] = 42.0;
    lines[at] = forged.dump();
    write_lines(path, lines);
  });
  expect_caught(result, {"job (task 'npu-2', sample 0), which the store has as pass: stages[2].metrics.speedup: the "
                         "line says 42.0, the store says 2.5"});
}

TEST_F(AgreementTest, ADeletedLineIsCaughtNamingTheJob) {
  const auto result = tampered_at_end([](const fs::path& path) {
    auto lines = read_lines(path);
    lines.erase(lines.begin() + static_cast<long>(line_of(lines, "npu-1", 0)));
    write_lines(path, lines);
  });
  expect_caught(result, {"no line for job (task 'npu-1', sample 0), which the store finished as fail (compile_error)",
                         "0 of its 5 lines disagree, 1 job the store finished has no line that agrees"});
}

TEST_F(AgreementTest, AGarbageLineAndARepeatedLineAreCaught) {
  Json third;
  const auto result = tampered_at_end([&third](const fs::path& path) {
    const auto lines = read_lines(path);
    third = Json::parse(lines[2]);
    append(path, "{\"status\": \"pass\"\n" + lines[2] + "\n");
  });
  expect_caught(result, {"results.jsonl:7: not a JSON object: {\"status\": \"pass\"",
                         "results.jsonl:8: job (task '" + third["task"].get<std::string>() + "', sample " +
                             std::to_string(third["sample"].get<int>()) + ") again (line 3 is its line)",
                         "2 of its 8 lines disagree, 0 jobs"});
}

// A flood written into the file is skipped past, not held in memory, and named.
TEST_F(AgreementTest, AFloodLineIsCaughtWithoutBeingHeld) {
  const auto result = tampered_at_end([](const fs::path& path) { append(path, std::string(17 << 20, 'x') + "\n"); });
  expect_caught(result, {"results.jsonl:7: longer than 16 MiB: not a line kforge writes"});
}

// --resume holds the lines of the run it continues to the store too: a forged line is
// dropped, its job runs again, and the resumed run ends in agreement.
TEST_F(AgreementTest, ResumeDropsALineThatDisagreesAndRunsItsJobAgain) {
  const auto forged = tampered_at_end([](const fs::path& path) {
    auto lines = read_lines(path);
    const size_t at = line_of(lines, "npu-1", 0);
    Json line = Json::parse(lines[at]);
    line["status"] = "pass";
    lines[at] = line.dump();
    write_lines(path, lines);
  });
  ASSERT_EQ(forged.status, kforge::RunStatus::Failed);
  const auto resumed = run(nullptr, /*resume=*/true);
  EXPECT_EQ(resumed.status, kforge::RunStatus::Finished) << resumed.disagreement;
  EXPECT_EQ(resumed.summary.jobs, 1u) << "the job whose line was forged runs again";
  const auto lines = read_lines(results());
  ASSERT_EQ(lines.size(), kJobs);
  EXPECT_EQ(Json::parse(lines[line_of(lines, "npu-1", 0)])["status"], "fail");
}

// An honest line agrees whatever it holds: an environment, invalid UTF-8 (the line has it
// replaced), non-finite metrics (null in both), a named route, a cached
// verdict, attributes the store does not keep, and a job without any candidate fields.
TEST(AgreementFacts, AnHonestLineAgreesWhateverItHoldsAndAChangedEnvironmentDoesNot) {
  TempDir dir;
  kforge::Store store((dir / "kforge.db").string());
  kforge::RunRecord record;
  record.pipeline = record.label = "facts";
  const int64_t run = store.begin_run(record);
  std::string lines;
  for (int sample = 0; sample < 2; ++sample) {
    auto task = std::make_shared<kforge::Task>();
    task->strings[KF_KEY_TASK_ID] = "t";
    task->index = 4;
    kforge::Job job;
    job.task = task;
    job.sample = sample;
    job.index = 8 + static_cast<uint64_t>(sample);
    if (sample == 0) {
      job.strings[KF_KEY_CANDIDATE_CODE] = "code";
      job.strings[KF_KEY_CANDIDATE_MODEL] = "m";
      job.strings["candidate.file"] = "kernel.py";  // the line's alone
      job.strings[KF_KEY_RUN_ENVIRONMENT] = R"({"gpu":"H100","torch":"2.11"})";
      job.numbers[KF_KEY_CANDIDATE_TOKENS_IN] = 120;
    }
    kforge::Verdict v;
    v.stage = "run";
    v.kind = "eval.run";
    v.role = KF_ROLE_RUN;
    v.status = kforge::VerdictStatus::Fail;
    v.route = "retry";
    v.error_class = "numerical_mismatch";
    v.message = "max diff \xff\xfe too large";
    v.cached = sample == 0;
    v.seconds = 0.1 * (sample + 1);
    v.metrics = {{"max_abs_diff", std::numeric_limits<double>::infinity()},
                 {"mean_abs_diff", std::numeric_limits<double>::quiet_NaN()},
                 {"trials", 5}};
    store.record_attempt(run, job, v);
    job.verdicts.push_back(v);
    const kforge::JobOutcome outcome = kforge::outcome_of(job);
    store.record_job(run, outcome);
    lines += kforge::result_line(outcome) + "\n";
  }
  const fs::path results = dir / "results.jsonl";
  std::ofstream(results) << lines;
  const auto honest = kforge::check_results(results.string(), store, run);
  EXPECT_TRUE(honest.agrees()) << honest.describe() << "\n" << lines;
  EXPECT_EQ(honest.lines, 2u);

  Json first = Json::parse(lines.substr(0, lines.find('\n')));
  first["environment"]["gpu"] = "H200";
  std::ofstream(results, std::ios::trunc) << first.dump() << "\n" << lines.substr(lines.find('\n') + 1);
  const auto changed = kforge::check_results(results.string(), store, run);
  EXPECT_NE(changed.describe().find(":1: job (task 't', sample 0), which the store has as fail (numerical_mismatch): "
                                    "environment.gpu: the line says \"H200\", the store says \"H100\""),
            std::string::npos)
      << changed.describe();
}

// What --resume does first: keeps the lines that agree, in their order, and returns the
// jobs left without one.
TEST_F(AgreementTest, ReconcileKeepsTheLinesThatAgreeOnceAndReturnsTheJobsWithoutOne) {
  const auto result = run();
  ASSERT_EQ(result.status, kforge::RunStatus::Finished) << result.disagreement;
  const auto lines = read_lines(results());
  Json foreign = Json::parse(lines[0]);
  foreign["task"] = "npu-9";
  Json forged = Json::parse(lines[4]);
  forged["round"] = 3;
  // lines[1] twice, a foreign job, garbage, a forged line instead of lines[4], lines[5]
  // lost, and a torn last line.
  std::ofstream(results(), std::ios::trunc) << lines[0] << "\n" << lines[1] << "\n" << lines[1] << "\n"
                                            << foreign.dump() << "\n" << "not json\n" << lines[2] << "\n"
                                            << lines[3] << "\n" << forged.dump() << "\n"
                                            << lines[5].substr(0, 20);
  kforge::Store store((out() / kforge::kStoreFileName).string());
  const auto kept = kforge::reconcile_results(results().string(), store, result.run_id);
  EXPECT_EQ(read_lines(results()), std::vector<std::string>(lines.begin(), lines.begin() + 4));
  EXPECT_EQ(kept.disagreeing, 5u);
  std::vector<std::pair<std::string, int>> expected;
  for (const size_t i : {4, 5}) {
    const Json line = Json::parse(lines[i]);
    expected.emplace_back(line["task"], line["sample"]);
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(kept.unmatched, expected);
  EXPECT_NE(kept.describe().find(": torn: it has no newline at its end"), std::string::npos) << kept.describe();
  EXPECT_NE(kept.describe().find("round: the line says 3, the store says 0"), std::string::npos) << kept.describe();
  // No file at all: every finished job is without a line.
  fs::remove(results());
  EXPECT_EQ(kforge::reconcile_results(results().string(), store, result.run_id).unmatched.size(), kJobs);
  EXPECT_EQ(kforge_test::slurp(results()), "");
}

}  // namespace
