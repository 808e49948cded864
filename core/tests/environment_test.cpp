// Environments (run.environment) through the store, schema 3 and its upgrade path,
// reports and `kforge compare`'s check; and the exports' per-candidate mappings.
#include "report/environment.hpp"
#include "report/export.hpp"
#include "report/report.hpp"
#include "run/store/schema.hpp"
#include "run/store/store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "kforge_process.hpp"
#include "support/store_view.hpp"

namespace {

using kforge_test::Db;
using kforge_test::TempDir;
using nlohmann::json;

const std::string kH100 = R"({"device":"cuda:0","gpu":"NVIDIA H100 80GB HBM3","driver":"570.86.15","torch":"2.6.0"})";
const std::string kA100 = R"({"device":"cuda:0","gpu":"NVIDIA A100-SXM4-80GB","driver":"570.86.15","torch":"2.6.0"})";

kforge::JobOutcome job(const std::string& task, int sample, const std::string& environment) {
  kforge::JobOutcome o;
  o.task_id = task;
  o.sample = sample;
  o.job_index = static_cast<uint64_t>(sample);
  o.stage = "run";
  o.environment = environment;
  return o;
}

int64_t begin(kforge::Store& store) {
  kforge::RunRecord run;
  run.pipeline = "p";
  run.label = "p";
  run.pipeline_file = "/p.yaml";
  run.config = "{}";
  run.config_hash = "h";
  run.kforge_version = "test";
  run.host = "host";
  return store.begin_run(run);
}

kforge::Metrics metrics_with(const std::string& label, const std::vector<std::string>& environments) {
  kforge::Metrics m;
  m.label = label;
  std::vector<kforge::JobOutcome> jobs;
  for (const auto& e : environments) jobs.push_back(job("t", 0, e));
  m.environments = kforge::environments_of(jobs);
  return m;
}

}  // namespace

TEST(Environment, TheStoreKeepsEachJobsEnvironmentOncePerContent) {
  TempDir dir;
  {
    kforge::Store store((dir / "kforge.db").string());
    const int64_t run = begin(store);
    store.record_job(run, job("a", 0, kH100));
    store.record_job(run, job("a", 1, kH100));
    store.record_job(run, job("b", 0, kA100));
    store.record_job(run, job("b", 1, ""));  // no run stage judged it
    store.end_run(run, kforge::RunStatus::Finished);
  }
  Db db(dir / "kforge.db");
  EXPECT_EQ(db.number("PRAGMA user_version"), 3);
  EXPECT_EQ(db.number("SELECT count(*) FROM artifacts WHERE kind = 'environment'"), 2);
  EXPECT_EQ(db.number("SELECT count(*) FROM jobs WHERE environment_hash IS NULL"), 1);

  kforge::Store reader((dir / "kforge.db").string(), kforge::StoreMode::ReadOnly);
  const auto uses = kforge::environments_of(reader.load_dataset(reader.latest_run()->series).jobs);
  ASSERT_EQ(uses.size(), 2u);
  EXPECT_EQ(uses[0].facts.at("gpu"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(uses[0].jobs, 2u);
  EXPECT_EQ(uses[1].facts.at("gpu"), "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(uses[1].jobs, 1u);
}

// A store kforge wrote before environments existed: readable read-only as it is, and
// upgraded in place by the next run.
TEST(Environment, ASchema2StoreIsReadAsItIsAndUpgradedByARun) {
  TempDir dir;
  const auto path = dir / "kforge.db";
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    const auto& all = kforge::schema_migrations();
    kforge::migrate(raw, {all[0], all[1]}, path.string());
    const char* rows = R"sql(
INSERT INTO runs (id, series, pipeline, strategy, pipeline_file, config, config_hash, kforge_version, host, devices,
                  expected_jobs, started_at, ended_at, status)
  VALUES (1, 1, 'old', 'old', '/p.yaml', '{}', 'h', '0.2.0', 'host', '', 1, 'x', 'y', 'finished');
INSERT INTO jobs (run_id, task_id, sample, job_index, status, round, stage, error_class, message, attempts, seconds,
                  finished_at) VALUES (1, 't', 0, 0, 'pass', 0, 'run', '', '', 1, 0.1, 'x');
)sql";
    ASSERT_EQ(sqlite3_exec(raw, rows, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(raw);
    sqlite3_close(raw);
  }
  {
    const kforge::Report report = kforge::load_report(dir.path().string());
    EXPECT_EQ(report.metrics.tasks, 1u);
    EXPECT_TRUE(report.metrics.environments.empty());
    Db db(path);
    EXPECT_EQ(db.number("PRAGMA user_version"), 2) << "reading must not migrate";
  }
  { kforge::Store store(path.string()); }
  Db db(path);
  EXPECT_EQ(db.number("PRAGMA user_version"), 3);
  EXPECT_EQ(db.number("SELECT count(*) FROM jobs WHERE environment_hash IS NULL"), 1);
}

TEST(Environment, ReportsShowATableAndJsonOfTheEnvironments) {
  const kforge::Metrics m = metrics_with("s", {kH100, kH100});
  const auto tables = kforge::report_tables(m);
  const auto table = std::find_if(tables.begin(), tables.end(), [](const auto& t) { return t.title == "Environment"; });
  ASSERT_NE(table, tables.end());
  ASSERT_EQ(table->rows.size(), 1u);
  EXPECT_NE(std::find(table->rows[0].begin(), table->rows[0].end(), "NVIDIA H100 80GB HBM3"), table->rows[0].end());
  EXPECT_EQ(table->rows[0].back(), "2");
  EXPECT_EQ(kforge::environment_table({}).rows.size(), 0u);
  const auto no_env = kforge::report_tables(metrics_with("s", {}));
  EXPECT_TRUE(std::none_of(no_env.begin(), no_env.end(), [](const auto& t) { return t.title == "Environment"; }));
}

TEST(Environment, CompareWarnsOnlyWhenHardwareOrSoftwareDiffers) {
  EXPECT_TRUE(kforge::environment_mismatches({metrics_with("a", {kH100}), metrics_with("b", {kH100})}).empty());
  const auto gpu = kforge::environment_mismatches({metrics_with("a", {kH100}), metrics_with("b", {kA100})});
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_NE(gpu[0].find("different gpu"), std::string::npos) << gpu[0];
  EXPECT_NE(gpu[0].find("NVIDIA A100"), std::string::npos) << gpu[0];
  json newer_torch = json::parse(kH100);
  newer_torch["torch"] = "2.7.0";
  newer_torch["host"] = "another-host";  // the host's name alone is no difference
  const auto torch = kforge::environment_mismatches({metrics_with("a", {kH100}), metrics_with("b", {newer_torch.dump()})});
  ASSERT_EQ(torch.size(), 1u);
  EXPECT_NE(torch[0].find("different torch: 2.6.0 vs 2.7.0"), std::string::npos) << torch[0];
  const auto unknown = kforge::environment_mismatches({metrics_with("a", {kH100}), metrics_with("b", {})});
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_NE(unknown[0].find("'b' recorded no environment"), std::string::npos) << unknown[0];
  // Which card of a model judged (a cluster's GPUs) is where the job ran, not what it ran on.
  json other_card = json::parse(kH100);
  other_card["gpu_uuid"] = "GPU-2";
  json card = json::parse(kH100);
  card["gpu_uuid"] = "GPU-1";
  EXPECT_TRUE(kforge::environment_mismatches({metrics_with("a", {card.dump()}), metrics_with("b", {other_card.dump()})})
                  .empty());
  const kforge::Table cards = kforge::environment_table(metrics_with("s", {card.dump(), other_card.dump()}).environments);
  ASSERT_EQ(cards.rows.size(), 2u) << "a row per card";
  EXPECT_EQ(cards.columns[cards.columns.size() - 2], "GPU UUID");
  EXPECT_EQ(cards.rows[0][cards.columns.size() - 2], "GPU-1");
  // A run that used two kinds of GPU differs from one that used only one of them.
  EXPECT_EQ(kforge::environment_mismatches({metrics_with("a", {kH100, kA100}), metrics_with("b", {kH100})}).size(), 1u);
}

// A run stage the engine has never heard of reports facts of its own (an NPU's model, its
// toolkit): the table shows them, and `kforge compare` warns when they differ, as it does
// for the bundled harness's GPU; where a job ran (host, device) and the OS string are no
// difference.
TEST(Environment, AForeignRunStagesOwnFactsAreShownAndCompared) {
  const std::string a910 = R"({"device":"npu:0","host":"a","os":"Linux-6.1","npu":"Ascend 910B","cann":"8.0"})";
  const std::string elsewhere = R"({"device":"npu:3","host":"b","os":"Linux-6.8","npu":"Ascend 910B","cann":"8.0"})";
  const std::string a310 = R"({"device":"npu:0","host":"a","os":"Linux-6.1","npu":"Ascend 310P","cann":"8.0"})";
  const kforge::Table table = kforge::environment_table(metrics_with("s", {a910}).environments);
  const auto column = [&](const std::string& title) {
    const auto it = std::find(table.columns.begin(), table.columns.end(), title);
    return it == table.columns.end() ? std::string("(no column)")
                                     : table.rows.at(0).at(static_cast<size_t>(it - table.columns.begin()));
  };
  EXPECT_EQ(column("npu"), "Ascend 910B");
  EXPECT_EQ(column("cann"), "8.0");
  EXPECT_EQ(column("Device"), "npu:0");
  EXPECT_EQ(column("os"), "(no column)") << "placement facts are not extra columns";
  EXPECT_EQ(table.columns.back(), "Jobs");

  EXPECT_TRUE(kforge::environment_mismatches({metrics_with("a", {a910}), metrics_with("b", {elsewhere})}).empty());
  const auto npu = kforge::environment_mismatches({metrics_with("a", {a910}), metrics_with("b", {a310})});
  ASSERT_EQ(npu.size(), 1u);
  EXPECT_NE(npu[0].find("different npu: Ascend 910B vs Ascend 310P"), std::string::npos) << npu[0];
}

// ---- the exports' mappings

TEST(Export, EveryErrorClassHasItsCommonStatus) {
  auto status = [](kforge::VerdictStatus s, const std::string& error_class) {
    kforge::JobOutcome o = job("t", 0, "");
    o.status = s;
    o.error_class = error_class;
    return kforge::common_status(o);
  };
  using S = kforge::VerdictStatus;
  EXPECT_EQ(status(S::Pass, ""), "passed");
  EXPECT_EQ(status(S::Fail, "shape_mismatch"), "incorrect shape");
  EXPECT_EQ(status(S::Fail, "dtype_mismatch"), "incorrect dtype");
  EXPECT_EQ(status(S::Fail, "numerical_mismatch"), "incorrect numerical");
  for (const char* c : {"syntax_error", "compile_error"}) EXPECT_EQ(status(S::Fail, c), "compile error") << c;
  for (const char* c : {"init_error", "runtime_error", "device_error", "crash", "out_of_memory"}) {
    EXPECT_EQ(status(S::Fail, c), "runtime error") << c;
  }
  EXPECT_EQ(status(S::Fail, "timeout"), "timeout");
  EXPECT_EQ(status(S::Error, "stage_timeout"), "timeout");
  EXPECT_EQ(status(S::Fail, "checker_rejected"), "rejected");
  EXPECT_EQ(status(S::Fail, "cheat_detected"), "rejected");
  EXPECT_EQ(status(S::Fail, "no_candidate"), "no candidate");
  for (const char* c : {"harness_error", "task_error", "host_error", "plugin_error", "something_new"}) {
    EXPECT_EQ(status(S::Error, c), "evaluation error") << c;
  }
  EXPECT_EQ(status(S::Fail, "something_new"), "failed");
}

TEST(Export, AKernelBenchEntryHasKernelBenchsKeysInItsOrder) {
  kforge::JobOutcome passed = job("level1/19_ReLU", 2, kH100);
  passed.device = "cuda:0";
  const json measured_metrics = {{"trials", 5},
                                 {"candidate_ms", 0.25},
                                 {"candidate_ms_mean", 0.26},
                                 {"candidate_ms_std", 0.01},
                                 {"candidate_ms_min", 0.24},
                                 {"candidate_ms_max", 0.3},
                                 {"candidate_timing_trials", 100},
                                 {"reference_ms_mean", 0.5},
                                 {"reference_timing_trials", 100}};
  const auto entry = kforge::kernelbench_entry(passed, measured_metrics);
  std::vector<std::string> keys;
  for (const auto& [key, value] : entry.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"sample_id", "compiled", "correctness", "metadata", "runtime", "runtime_stats"}));
  EXPECT_EQ(entry["sample_id"], 2);
  EXPECT_EQ(entry["compiled"], true);
  EXPECT_EQ(entry["correctness"], true);
  EXPECT_EQ(entry["metadata"]["correctness_trials"], "(5 / 5)");
  // runtime is the mean, as KernelBench's; the median (candidate_ms) is not it.
  EXPECT_DOUBLE_EQ(entry["runtime"].get<double>(), 0.26);
  std::vector<std::string> stats;
  for (const auto& [key, value] : entry["runtime_stats"].items()) stats.push_back(key);
  EXPECT_EQ(stats, (std::vector<std::string>{"mean", "std", "min", "max", "num_trials", "hardware", "device"}));
  EXPECT_DOUBLE_EQ(entry["runtime_stats"]["mean"].get<double>(), 0.26);
  EXPECT_DOUBLE_EQ(entry["runtime_stats"]["std"].get<double>(), 0.01);
  EXPECT_DOUBLE_EQ(entry["runtime_stats"]["min"].get<double>(), 0.24);
  EXPECT_DOUBLE_EQ(entry["runtime_stats"]["max"].get<double>(), 0.3);
  EXPECT_EQ(entry["runtime_stats"]["num_trials"], 100);
  EXPECT_EQ(entry["runtime_stats"]["hardware"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(entry["runtime_stats"]["device"], "cuda:0");
}

TEST(Export, NoStatisticIsMadeUpWhereTheHarnessMeasuredNone) {
  kforge::JobOutcome passed = job("level1/19_ReLU", 0, kH100);
  // A store from before the harness measured statistics: a median only.
  const json median_only = {{"trials", 5}, {"candidate_ms", 0.25}, {"reference_ms", 0.5}};
  const auto entry = kforge::kernelbench_entry(passed, median_only);
  EXPECT_EQ(entry["runtime"], -1.0) << "KernelBench's value for a runtime not measured";
  EXPECT_TRUE(entry["runtime_stats"].empty());
  // A mean without the rest: only what was measured.
  const auto partial = kforge::kernelbench_entry(passed, {{"candidate_ms", 0.25}, {"candidate_ms_mean", 0.26}});
  EXPECT_DOUBLE_EQ(partial["runtime"].get<double>(), 0.26);
  for (const char* field : {"std", "min", "max", "num_trials"}) {
    EXPECT_FALSE(partial["runtime_stats"].contains(field)) << field;
  }
}

TEST(Export, TheBaselineFileCarriesTheReferencesStatistics) {
  kforge::Dataset data;
  data.tasks["level1/19_ReLU"] = kforge::TaskInfo{"level1/19_ReLU", "19_ReLU", "", "", "kernelbench-torch", 1};
  data.tasks["level1/20_Old"] = kforge::TaskInfo{"level1/20_Old", "20_Old", "", "", "kernelbench-torch", 1};
  data.jobs = {job("level1/19_ReLU", 0, kH100), job("level1/20_Old", 0, kH100)};
  std::map<std::pair<std::string, int>, json> run_metrics;
  run_metrics[{"level1/19_ReLU", 0}] = {{"reference_ms", 0.5},      {"reference_ms_mean", 0.52},
                                        {"reference_ms_std", 0.02}, {"reference_ms_min", 0.49},
                                        {"reference_ms_max", 0.6},  {"reference_timing_trials", 100}};
  run_metrics[{"level1/20_Old", 0}] = {{"reference_ms", 0.5}};  // no statistics measured
  const auto input = kforge::export_input_of(data, run_metrics);
  const auto files = kforge::export_files(input, kforge::ExportFormat::KernelBench, {});
  ASSERT_EQ(files.size(), 2u);
  ASSERT_EQ(files[1].name, "baseline_time_torch.json");
  const json baseline = json::parse(files[1].content);
  const json& relu = baseline["level1"]["19_ReLU.py"];
  EXPECT_DOUBLE_EQ(relu["mean"].get<double>(), 0.52);
  EXPECT_DOUBLE_EQ(relu["std"].get<double>(), 0.02);
  EXPECT_DOUBLE_EQ(relu["min"].get<double>(), 0.49);
  EXPECT_DOUBLE_EQ(relu["max"].get<double>(), 0.6);
  EXPECT_EQ(relu["num_trials"], 100);
  EXPECT_EQ(relu["hardware"], "NVIDIA H100 80GB HBM3");
  EXPECT_FALSE(baseline["level1"].contains("20_Old.py")) << "a reference without a measured mean has no entry";
}

// The KernelBench files are written in problem id order whatever the task order, as the
// dump of the whole documents, and a level whose problems cannot be told apart is refused
// before anything is written.
TEST(Export, KernelBenchProblemsComeInIdOrderWhateverTheTaskOrder) {
  kforge::Dataset data;
  for (const char* id : {"level1/20_Old", "level1/3_Small", "level1/100_Big"}) {
    data.tasks[id] = kforge::TaskInfo{id, std::string(id).substr(7), "", "", "kernelbench-torch", 1};
    data.jobs.push_back(job(id, 0, kH100));
    data.jobs.push_back(job(id, 1, kH100));
  }
  std::map<std::pair<std::string, int>, json> run_metrics;
  run_metrics[{"level1/100_Big", 0}] = {{"reference_ms_mean", 0.5}};
  run_metrics[{"level1/3_Small", 1}] = {{"reference_ms_mean", 0.7}};
  const auto files = kforge::export_files(kforge::export_input_of(data, run_metrics), kforge::ExportFormat::KernelBench, {});
  ASSERT_EQ(files.size(), 2u);
  const auto results = nlohmann::ordered_json::parse(files[0].content);
  EXPECT_EQ(results.dump(2) + "\n", files[0].content);
  std::vector<std::string> ids;
  for (const auto& [id, entries] : results.items()) ids.push_back(id);
  EXPECT_EQ(ids, (std::vector<std::string>{"3", "20", "100"}));
  EXPECT_EQ(results["3"].size(), 2u);
  EXPECT_EQ(results["3"][1]["sample_id"], 1);
  const auto baseline = nlohmann::ordered_json::parse(files[1].content);
  EXPECT_EQ(baseline.dump(2) + "\n", files[1].content);
  std::vector<std::string> names;
  for (const auto& [name, stats] : baseline["level1"].items()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"3_Small.py", "100_Big.py"}));
  EXPECT_EQ(baseline["level1"]["3_Small.py"]["mean"], 0.7);

  // None at all: empty documents.
  const auto none = kforge::export_files(kforge::export_input_of({}, {}), kforge::ExportFormat::KernelBench, {});
  ASSERT_EQ(none.size(), 2u);
  EXPECT_EQ(none[0].content, "{}\n");
  EXPECT_EQ(none[1].content, "{\n  \"level1\": {}\n}\n");

  kforge::Dataset twice = data;
  twice.tasks["level1/20_Again"] = kforge::TaskInfo{"level1/20_Again", "20_Again", "", "", "kernelbench-torch", 1};
  twice.jobs.push_back(job("level1/20_Again", 0, kH100));
  std::vector<std::string> opened;
  try {
    kforge::write_export(kforge::export_input_of(twice, {}), kforge::ExportFormat::KernelBench, {},
                         [&](const std::string& name) -> std::ostream& {
                           opened.push_back(name);
                           static std::ostringstream sink;
                           return sink;
                         });
    FAIL() << "two tasks with problem id 20 were exported";
  } catch (const kforge::ExportError& e) {
    EXPECT_EQ(std::string(e.what()), "tasks 'level1/20_Old' and 'level1/20_Again' both have problem id 20 in level 1");
  }
  EXPECT_TRUE(opened.empty()) << "a file was opened before the export was refused";
}

TEST(Export, FailedCandidatesCarryKernelBenchsErrorKeysAndNoRuntime) {
  kforge::JobOutcome broken = job("t", 0, "");
  broken.status = kforge::VerdictStatus::Fail;
  broken.error_class = "compile_error";
  broken.message = "candidate.cu:3:1: error: expected ';'";
  const auto compile = kforge::kernelbench_entry(broken, json::object());
  EXPECT_EQ(compile["compiled"], false);
  EXPECT_EQ(compile["correctness"], false);
  EXPECT_EQ(compile["runtime"], -1.0);
  EXPECT_TRUE(compile["runtime_stats"].empty());
  EXPECT_EQ(compile["metadata"]["compilation_error"], broken.message);
  EXPECT_EQ(compile["metadata"]["compilation_error_name"], "compile_error");
  EXPECT_EQ(compile["metadata"]["kforge_status"], "compile error");

  kforge::JobOutcome wrong = job("t", 1, "");
  wrong.status = kforge::VerdictStatus::Fail;
  wrong.error_class = "numerical_mismatch";
  wrong.message = "max abs diff 0.03";
  wrong.compiled_in_round = {1};
  wrong.compile_evidence = true;
  const auto numerical = kforge::kernelbench_entry(wrong, {{"max_abs_diff", 0.03125}, {"mean_abs_diff", 0.001}});
  EXPECT_EQ(numerical["compiled"], true);
  EXPECT_EQ(numerical["metadata"]["correctness_issue"], wrong.message);
  EXPECT_EQ(numerical["metadata"]["max_difference"], nlohmann::ordered_json::array({"0.031250"}));
  EXPECT_EQ(numerical["metadata"]["avg_difference"], nlohmann::ordered_json::array({"0.001000"}));
}

TEST(Export, ARecordHasEveryFieldNullWhereUnmeasured) {
  const kforge::TaskInfo task{"t", "19_ReLU", "Activation", "C1", "kernelbench-torch", 1};
  kforge::JobOutcome o = job("t", 0, kH100);
  o.speedup = 2.0;
  const auto r = kforge::export_record("s", &task, o, {{"candidate_ms", 0.25}, {"reference_ms", 0.5}, {"max_abs_diff", 1e-6}});
  EXPECT_EQ(r["status"], "passed");
  EXPECT_EQ(r["task_name"], "19_ReLU");
  EXPECT_DOUBLE_EQ(r["latency_ms"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(r["reference_latency_ms"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(r["speedup"].get<double>(), 2.0);
  EXPECT_TRUE(r["max_rel_error"].is_null());
  EXPECT_TRUE(r["latency_stats"].is_null()) << "a median alone makes no statistics";
  EXPECT_TRUE(r["reference_latency_stats"].is_null());
  EXPECT_EQ(r["environment"]["gpu"], "NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(kforge::export_record("s", &task, job("t", 1, ""), json::object())["environment"].is_null());

  const auto timed = kforge::export_record(
      "s", &task, o,
      {{"candidate_ms", 0.25}, {"candidate_ms_mean", 0.26}, {"candidate_ms_std", 0.01}, {"candidate_ms_min", 0.24},
       {"candidate_ms_max", 0.3}, {"candidate_timing_trials", 20}, {"reference_ms_mean", 0.5}});
  EXPECT_EQ(timed["latency_stats"],
            (nlohmann::ordered_json{{"mean", 0.26}, {"std", 0.01}, {"min", 0.24}, {"max", 0.3}, {"num_trials", 20}}));
  EXPECT_EQ(timed["reference_latency_stats"], (nlohmann::ordered_json{{"mean", 0.5}}));
}

TEST(Export, ProblemIdsComeFromTheTaskName) {
  EXPECT_EQ(kforge::problem_id_of("19_ReLU"), 19);
  EXPECT_EQ(kforge::problem_id_of("100_HingeLoss"), 100);
  EXPECT_FALSE(kforge::problem_id_of("relu"));
}
