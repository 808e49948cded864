// A run as a library call (RunSession), in process: the reports of a plugin the engine
// knows nothing about, the run's secret seed, cancellation and resume, and the verdict cache
// with measurements and stage key material.
#include "run/session.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "engine/pipeline/load.hpp"
#include "engine/registry.hpp"
#include "kforge_process.hpp"
#include "support/store_view.hpp"
#include "report/export.hpp"
#include "report/report.hpp"

namespace {

namespace fs = std::filesystem;
using kforge_test::TempDir;
using Json = nlohmann::json;

const std::string kLadder = std::string(KFORGE_TEST_DATA_DIR) + "/session/ladder.yaml";

// The same pipeline under the bundled kinds' names (the lookalike build of the npu plugin).
kforge::Overrides bundled_names() {
  return {{{"tasks_kind", "kernelbench.suite"},
           {"generate_kind", "llm.generate"},
           {"compile_kind", "eval.compile.cpp"},
           {"run_kind", "eval.run"},
           {"fix_kind", "llm.fix"}}};
}

std::vector<std::vector<std::string>> rows(const fs::path& db_path, const std::string& sql) {
  return kforge_test::Db(db_path).rows(sql);
}

// Collects what stages left in each finished job.
class Seen : public kforge::RunObserver {
 public:
  void job_finished(const kforge::Job& job, const kforge::JobOutcome&) override {
    if (const std::string* seed = job.find_string("npu.seed")) seeds.insert(*seed);
    if (const std::string* warm_ups = job.find_string("npu.warm_ups")) warm_ups_seen.insert(*warm_ups);
  }
  std::set<std::string> seeds;
  std::set<std::string> warm_ups_seen;
};

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry.load(std::string(KFORGE_TEST_EXTRA_PLUGIN_DIR) + "/libtest_npu.so");
    registry.load(std::string(KFORGE_TEST_EXTRA_PLUGIN_DIR) + "/libtest_lookalike.so");
    ::unsetenv("NPU_TEST_DEVICE_MODEL");
  }

  kforge::SessionResult run(const fs::path& out, const kforge::Overrides& overrides = {}, bool resume = false,
                            bool replay_measurements = false, kforge::RunObserver* observer = nullptr) {
    const kforge::Plan plan = kforge::load_pipeline(kLadder, registry, overrides);
    kforge::SessionOptions options;
    options.out_dir = out.string();
    options.resume = resume;
    options.replay_measurements = replay_measurements;
    options.kforge_version = "test";
    kforge::RunSession session(plan, options);
    return session.run(observer);
  }

  static Json report_json(const fs::path& out) {
    return Json::parse(kforge::render_json(kforge::load_report(out.string())));
  }

  kforge::Registry registry;
  TempDir dir;
};

// Compile evidence, evaluation and generation time, speedups, the stored diff and the
// device: every report row comes from roles and well-known names, none from kind names.
TEST_F(SessionTest, APluginWithUnknownKindNamesGetsEveryReportRow) {
  const auto result = run(dir / "npu");
  ASSERT_EQ(result.status, kforge::RunStatus::Finished);
  EXPECT_EQ(result.summary.jobs, 6u);
  EXPECT_EQ(result.summary.passed, 6u);
  const Json report = report_json(dir / "npu");
  const Json& summary = report["summary"];
  EXPECT_EQ(summary["compile_known"], true);
  EXPECT_EQ(summary["compiled"]["count"], 3);
  // Recorded answers: 2 s per generation, 1 s per fix (npu-1's two candidates were fixed).
  EXPECT_DOUBLE_EQ(summary["gen_seconds"].get<double>(), 6 * 2.0 + 2 * 1.0);
  EXPECT_GT(summary["eval_seconds"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(summary["geomean_speedup"].get<double>(), 2.5);
  EXPECT_EQ(summary["cost"], 3.0);
  // Round 0: npu-1's candidates did not build; after round 1 all did.
  EXPECT_EQ(report["rounds"][0]["compiled"]["count"], 4);
  EXPECT_EQ(report["rounds"][1]["compiled"]["count"], 6);
  EXPECT_EQ(report["models"][0]["model"], "vllm-7b");

  const fs::path db = dir / "npu" / "kforge.db";
  EXPECT_EQ(rows(db, "SELECT count(*) FROM artifacts WHERE kind = 'diff'")[0][0], "1");
  EXPECT_EQ(rows(db, "SELECT DISTINCT device FROM jobs"), (std::vector<std::vector<std::string>>{{"npu:3"}}));
  EXPECT_EQ(rows(db, "SELECT DISTINCT role FROM attempts ORDER BY role"),
            (std::vector<std::vector<std::string>>{{"compile"}, {"fix"}, {"generate"}, {"run"}}));
  const std::string results = kforge_test::slurp(dir / "npu" / "results.jsonl");
  EXPECT_NE(results.find("\"device\":\"npu:3\""), std::string::npos);
  EXPECT_EQ(results.find("\"diff\""), std::string::npos) << "the diff is stored, not written to results.jsonl";
}

// A stage that offers warm_up is asked once when the run starts, before its first job: its
// servers start while the first candidates are generated.
TEST_F(SessionTest, EveryStageWarmsUpOnceBeforeItsFirstJob) {
  Seen seen;
  ASSERT_EQ(run(dir / "npu", {}, false, false, &seen).status, kforge::RunStatus::Finished);
  EXPECT_EQ(seen.warm_ups_seen, (std::set<std::string>{"1"}));
}

// Work a run stage lost to the infrastructure and redid (KF_METRIC_INFRA_RETRIES) is
// counted in the summary, apart from every verdict: the job passed.
TEST_F(SessionTest, InfrastructureRetriesAreCountedInTheReport) {
  const auto result = run(dir / "npu", kforge::Overrides{{{"run.lost", "[npu-0, npu-2]"}}});
  ASSERT_EQ(result.status, kforge::RunStatus::Finished);
  EXPECT_EQ(result.summary.passed, 6u);
  const Json report = report_json(dir / "npu");
  EXPECT_EQ(report["summary"]["infra_retries"], 4) << "two tasks, two candidates each, one retry apiece";
  const auto tables = kforge::report_tables(kforge::load_report((dir / "npu").string()).metrics);
  const auto& summary = tables.front();
  const auto row = std::find_if(summary.rows.begin(), summary.rows.end(),
                                [](const auto& r) { return r.front() == "Infrastructure retries"; });
  ASSERT_NE(row, summary.rows.end());
  EXPECT_EQ(row->back(), "4 (work of 4 verdicts lost with its server and redone elsewhere)");
  EXPECT_EQ(report_json(dir / "npu")["kforge_report"], 5);
}

// What a run stage reports through the ABI's well-known names (KF_KEY_RUN_ENVIRONMENT,
// KF_TIMING_*, KF_METRIC_*, KF_ERROR_*) reaches every report and export of a plugin the
// engine has never heard of: its environment, its timing table, its correctness evidence,
// and, through a bundled plugin's report section, its comparison failures in KernelBenchX's
// category rates.
TEST_F(SessionTest, AForeignRunStagesWellKnownMetricsReachEveryReportAndExport) {
  const kforge::Overrides overrides{
      {{"tasks.format", "kernelbenchx"}, {"tasks.category", "Activation"}, {"run.mismatched", "[npu-2]"}}};
  const auto result = run(dir / "npu", overrides);
  ASSERT_EQ(result.status, kforge::RunStatus::Finished);
  EXPECT_EQ(result.summary.passed, 4u);
  kforge::Registry sections;  // beside the lookalike's kinds, which take the bundled plugins' names
  sections.load(std::string(KFORGE_TEST_PLUGIN_DIR) + "/libkforge_kernelbench.so");
  const Json report = Json::parse(kforge::render_json(kforge::load_report((dir / "npu").string(), &sections)));

  ASSERT_EQ(report["environments"].size(), 1u);
  EXPECT_EQ(report["environments"][0]["facts"]["npu"], "Ascend 910B");
  EXPECT_EQ(report["environments"][0]["jobs"], 6);

  // npu-2's candidates ran to the end and their outputs were compared: called, not correct.
  ASSERT_EQ(report["tables"].size(), 1u) << report["tables"];
  EXPECT_EQ(report["tables"][0]["section"], "kernelbench.categories");
  ASSERT_EQ(report["tables"][0]["data"].size(), 1u) << report["tables"];
  const Json& rates = report["tables"][0]["data"][0];
  EXPECT_EQ(rates["name"], "Activation");
  EXPECT_EQ(rates["called"]["count"], 6);
  EXPECT_EQ(rates["correct"]["count"], 4);
  EXPECT_EQ(rates["faster"]["count"], 4);

  const Json& timing = report["tasks"][0]["best_timing"];
  ASSERT_TRUE(timing.is_object()) << report["tasks"][0];
  EXPECT_EQ(timing["reference"]["median"], 5.0);
  EXPECT_EQ(timing["candidate"]["median"], 2.0);
  EXPECT_EQ(timing["candidate"]["p90"], 2.5);
  EXPECT_EQ(timing["candidate"]["trials"], 10);

  const kforge::ExportInput input = kforge::load_export_input((dir / "npu").string());
  std::map<std::string, Json> records;
  for (const auto& file : kforge::export_files(input, nullptr)) {
    std::istringstream lines(file.content);
    for (std::string line; std::getline(lines, line);) {
      const Json record = Json::parse(line);
      records[record["task"].get<std::string>() + "/" + std::to_string(record["sample"].get<int>())] = record;
    }
  }
  ASSERT_EQ(records.size(), 6u);
  const Json& passed = records.at("npu-0/0");
  EXPECT_EQ(passed["status"], "passed");
  EXPECT_EQ(passed["latency_ms"], 2.0);
  EXPECT_EQ(passed["reference_latency_p90_ms"], 5.5);
  EXPECT_EQ(passed["latency_stats"]["num_trials"], 10);
  EXPECT_EQ(passed["correctness_trials"], 5);
  EXPECT_EQ(passed["environment"]["npu"], "Ascend 910B");
  const Json& mismatched = records.at("npu-2/1");
  EXPECT_EQ(mismatched["status"], "incorrect numerical");
  EXPECT_EQ(mismatched["max_abs_error"], 0.5);
}

TEST_F(SessionTest, TheSameStagesUnderTheBundledNamesGiveTheSameReport) {
  run(dir / "npu");
  run(dir / "lookalike", bundled_names());
  Json ours = report_json(dir / "npu");
  Json theirs = report_json(dir / "lookalike");
  for (Json* report : {&ours, &theirs}) {
    report->erase("runs");
    (*report)["summary"].erase("eval_seconds");  // wall time of the calls
    for (auto& task : (*report)["tasks"]) task.erase("seconds");
  }
  EXPECT_EQ(ours, theirs);
}

// The seed is drawn fresh for a run, kept in the store, handed to stages, and the same for
// --resume; another fresh run draws another.
TEST_F(SessionTest, TheSecretSeedIsTheRunSeriesOwn) {
  Seen first;
  run(dir / "out", {}, false, false, &first);
  ASSERT_EQ(first.seeds.size(), 1u);
  const std::string seed = *first.seeds.begin();
  EXPECT_NE(seed, "none");
  const auto stored = rows(dir / "out" / "kforge.db", "SELECT secret_seed FROM runs");
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(std::stoull(stored[0][0], nullptr, 16), std::stoull(seed));

  Seen resumed;
  run(dir / "out", {}, true, false, &resumed);  // nothing left to do, but the same series
  EXPECT_EQ(rows(dir / "out" / "kforge.db", "SELECT count(DISTINCT secret_seed) FROM runs")[0][0], "1");

  Seen fresh;
  run(dir / "out", {}, false, false, &fresh);
  ASSERT_EQ(fresh.seeds.size(), 1u);
  EXPECT_NE(*fresh.seeds.begin(), seed);
}

// Cancellation is the session's own: a cancelled run leaves its jobs for --resume, which
// finishes them with the same seed, and the result equals an uninterrupted run's.
TEST_F(SessionTest, ACancelledRunResumesInProcess) {
  const kforge::Plan plan = kforge::load_pipeline(kLadder, registry);
  {
    kforge::SessionOptions options;
    options.out_dir = (dir / "cut").string();
    kforge::RunSession session(plan, options);
    session.cancel_token().request();
    const auto result = session.run();
    EXPECT_EQ(result.status, kforge::RunStatus::Interrupted);
    EXPECT_EQ(result.summary.jobs, 0u);
  }
  kforge::SessionOptions options;
  options.out_dir = (dir / "cut").string();
  options.resume = true;
  kforge::RunSession resumed(plan, options);
  const auto result = resumed.run();
  EXPECT_EQ(result.status, kforge::RunStatus::Finished);
  EXPECT_EQ(result.summary.jobs, 6u);
  run(dir / "clean");
  Json cut = report_json(dir / "cut");
  Json clean = report_json(dir / "clean");
  for (Json* report : {&cut, &clean}) {
    report->erase("runs");
    (*report)["summary"].erase("eval_seconds");
    for (auto& task : (*report)["tasks"]) task.erase("seconds");
  }
  EXPECT_EQ(cut, clean);
}

// npu.run is cacheable and its timed verdicts are measured: a second run answers it from
// the cache only when asked to replay measurements; an untimed verdict replays anyway. The
// device model the stage adds to the key keeps another NPU's verdicts out.
TEST_F(SessionTest, MeasuredVerdictsReplayOnlyWhenAskedAndStageKeyMaterialCounts) {
  const fs::path db = dir / "out" / "kforge.db";
  auto cached_runs = [&](int run) {
    return rows(db, "SELECT count(*) FROM attempts WHERE stage = 'run' AND cached = 1 AND run_id = " + std::to_string(run))[0][0];
  };
  ::setenv("NPU_TEST_DEVICE_MODEL", "ascend-910b", 1);
  run(dir / "out");  // run 1 fills the cache
  run(dir / "out");
  EXPECT_EQ(cached_runs(2), "0") << "measured verdicts are measured again";
  run(dir / "out", {}, false, /*replay_measurements=*/true);
  EXPECT_EQ(cached_runs(3), "6");
  EXPECT_EQ(rows(db, "SELECT count(*) FROM attempts WHERE stage = 'run' AND measured = 1 AND run_id = 2")[0][0], "6");

  kforge::Overrides untimed{{{"timing", "false"}}};
  run(dir / "out", untimed);  // run 4: untimed verdicts, cached unmeasured
  run(dir / "out", untimed);
  EXPECT_EQ(cached_runs(5), "6") << "a verdict without measurements replays";

  // Within a run, a task's second candidate may find the first one's verdict (the same
  // code): only the first of each task is sure to be judged afresh.
  ::setenv("NPU_TEST_DEVICE_MODEL", "ascend-310p", 1);
  run(dir / "out", untimed);
  EXPECT_LE(std::stoi(cached_runs(6)), 3) << "another device model is another key";
}

}  // namespace
