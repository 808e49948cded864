// Environments (run.environment) through the store, schema 3 and its upgrade path,
// reports and `kforge compare`'s check; the records export's mappings, the task an exporter
// reads, and a plugin's exporter and report sections through the ABI.
#include "engine/host.hpp"
#include "engine/registry.hpp"
#include "report/environment.hpp"
#include "report/export.hpp"
#include "report/report.hpp"
#include "report/sections.hpp"
#include "store/schema.hpp"
#include "store/store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kforge_process.hpp"
#include "support/store_view.hpp"

namespace {

using kforge_test::Db;
using kforge_test::TempDir;
using nlohmann::json;
namespace fs = std::filesystem;

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
  // Which card of a model judged (a cluster's GPUs) is where the job ran, not what it ran on,
  // when the run stage says so (KF_ENV_PLACEMENT); a fact it does not list decides timings.
  json other_card = json::parse(kH100);
  other_card["gpu_uuid"] = "GPU-2";
  json card = json::parse(kH100);
  card["gpu_uuid"] = "GPU-1";
  EXPECT_EQ(kforge::environment_mismatches({metrics_with("a", {card.dump()}), metrics_with("b", {other_card.dump()})})
                .size(),
            1u);
  card[KF_ENV_PLACEMENT] = {"gpu_uuid"};
  other_card[KF_ENV_PLACEMENT] = {"gpu_uuid"};
  EXPECT_TRUE(kforge::environment_mismatches({metrics_with("a", {card.dump()}), metrics_with("b", {other_card.dump()})})
                  .empty());
  const kforge::Table cards = kforge::environment_table(metrics_with("s", {card.dump(), other_card.dump()}).environments);
  ASSERT_EQ(cards.rows.size(), 2u) << "a row per card";
  EXPECT_EQ(cards.columns, (std::vector<std::string>{"driver", "gpu", "torch", "device", "gpu_uuid", "jobs"}))
      << "the facts that decide timings in the order given (json sorts them), then where the jobs ran";
  EXPECT_EQ(cards.rows[0][4], "GPU-1");
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
  EXPECT_EQ(table.columns, (std::vector<std::string>{"npu", "cann", "device", "host", "os", "jobs"}))
      << "the stage's facts in its order, then where the job ran";
  EXPECT_EQ(column("npu"), "Ascend 910B");
  EXPECT_EQ(column("cann"), "8.0");
  EXPECT_EQ(column("device"), "npu:0");
  EXPECT_EQ(column("os"), "Linux-6.1");

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

// ---- a plugin's exporter (kf_exporter_kind): the out-of-tree test plugin `tally`

namespace {

const std::string kTallyPlugin = std::string(KFORGE_TEST_EXPORTER_DIR) + "/libtest_tally.so";

kforge::ExportInput two_tasks() {
  kforge::Dataset data;
  data.tasks["a"] = kforge::TaskInfo{"a", "19_ReLU", "", "", "npu-graph", 1};
  data.tasks["b"] = kforge::TaskInfo{"b", "20_Tanh", "", "", "npu-graph", 1};
  kforge::JobOutcome failed = job("b", 1, "");
  failed.status = kforge::VerdictStatus::Fail;
  failed.error_class = KF_ERROR_NUMERICAL_MISMATCH;
  data.jobs = {job("a", 0, kH100), job("b", 0, kH100), failed};
  return kforge::export_input_of(data, {});
}

}  // namespace

TEST(PluginExport, TheRegistryFindsAnExporterAndItReadsEveryTask) {
  kforge::Registry registry;
  registry.load(kTallyPlugin);
  ASSERT_EQ(registry.exporters().size(), 1u);
  const kforge::ExporterKind* tally = registry.exporter("tally");
  ASSERT_NE(tally, nullptr);
  EXPECT_EQ(tally->plugin, "tally");
  EXPECT_EQ(tally->doc, "tally.csv: jobs and passes per task");
  EXPECT_EQ(registry.exporter("kernelbench"), nullptr);

  const auto files = kforge::export_files(two_tasks(), tally, {{"title", "run 1"}});
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].name, "tally.csv");
  EXPECT_EQ(files[0].content,
            "task,format,jobs,passed,outcomes\n"
            "a,npu-graph,1,1,passed\n"
            "b,npu-graph,2,1,passed|incorrect numerical\n");
  EXPECT_EQ(files[1].name, "options.json");
  EXPECT_EQ(files[1].content, R"({"title":"run 1"})");
}

TEST(PluginExport, AnExportersRefusalNamesItAndItsPlugin) {
  kforge::Registry registry;
  registry.load(kTallyPlugin);
  const kforge::ExporterKind& tally = *registry.exporter("tally");
  try {
    kforge::export_files(two_tasks(), &tally, {{"unknown", 1}});
    FAIL() << "an unknown option was taken";
  } catch (const kforge::ExportError& e) {
    EXPECT_EQ(std::string(e.what()), "exporter 'tally' (plugin tally, " + kTallyPlugin +
                                         ") refused its options: unknown option 'unknown': tally takes title, refuse "
                                         "and escape");
  }
  try {
    kforge::export_files(two_tasks(), &tally, {{"refuse", "level 3 has no tasks"}});
    FAIL() << "the refusal was lost";
  } catch (const kforge::ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("failed: level 3 has no tasks"), std::string::npos) << e.what();
  }
  // A file outside the export's directory is refused by the host: the exporter's write throws.
  try {
    kforge::export_files(two_tasks(), &tally, {{"escape", true}});
    FAIL() << "the host wrote ../escaped.txt";
  } catch (const kforge::ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("'../escaped.txt'"), std::string::npos) << e.what();
  }
}

// The real CLI: the formats listed with their plugins, an unknown one named with what
// exists, a refused export leaves no file, a good one writes its files.
TEST(PluginExport, KforgeExportListsFindsAndRunsAPluginsExporter) {
  TempDir dir;
  int calls = 0;
  auto call = [&](std::vector<std::string> args) {
    return kforge_test::run_kforge(args, dir.path() / ("call" + std::to_string(++calls)));
  };
  const std::string out = (dir.path() / "out").string();
  const auto run = call({"run", std::string(KFORGE_TEST_DATA_DIR) + "/store/resume.yaml", "--out", out, "--set",
                         "tasks=3", "--set", "sleep=0", "--progress", "off"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string plugins = KFORGE_TEST_EXPORTER_DIR;

  const auto listed = call({"--plugin-dir", plugins, "export", out});
  EXPECT_EQ(listed.exit_code, 2);
  EXPECT_NE(listed.out.find("records "), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("tally"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find(kTallyPlugin), std::string::npos) << listed.out;
  EXPECT_NE(listed.err.find("name a format with --format"), std::string::npos) << listed.err;

  const auto unknown = call({"--plugin-dir", plugins, "export", out, "--format", "talley"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no export format named 'talley'"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("tally"), std::string::npos) << unknown.err;

  const fs::path to = dir.path() / "export";
  const auto refused =
      call({"--plugin-dir", plugins, "export", out, "--format", "tally", "--to", to.string(), "--option", "refuse=no"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("exporter 'tally' (plugin tally"), std::string::npos) << refused.err;
  EXPECT_TRUE(fs::is_empty(to)) << "a refused export left files behind";

  const auto written =
      call({"--plugin-dir", plugins, "export", out, "--format", "tally", "--to", to.string(), "--option", "title=3"});
  ASSERT_EQ(written.exit_code, 0) << written.err;
  EXPECT_EQ(written.out, (to / "tally.csv").string() + "\n" + (to / "options.json").string() + "\n");
  const std::string csv = kforge_test::slurp(to / "tally.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4) << csv;
  EXPECT_EQ(kforge_test::slurp(to / "options.json"), R"({"title":3})");

  const auto records_option = call({"export", out, "--format", "records", "--to", to.string(), "--option", "a=1"});
  EXPECT_EQ(records_option.exit_code, 2);
  EXPECT_NE(records_option.err.find("the records format takes no --option"), std::string::npos) << records_option.err;
}

// ---- a plugin's report sections (kf_report_section_kind): the out-of-tree test plugin `tally`

namespace {

// The sections of `registry` for two_tasks(), folded.
std::vector<kforge::SectionTable> section_tables(const kforge::Registry& registry, const kforge::ExportInput& input,
                                                 const std::set<std::string>& formats) {
  kforge::SectionsFold fold(
      kforge::sections_for_run(registry, [&](const std::string& f) { return formats.count(f) != 0; }), "s");
  input.tasks([&](const kforge::ExportTask& task) { fold.add(task); });
  return fold.finish();
}

}  // namespace

TEST(ReportSections, TheRegistryReadsThemWithTheirTaskFormats) {
  kforge::Registry registry;
  registry.load(kTallyPlugin);
  ASSERT_EQ(registry.report_sections().size(), 2u);
  const kforge::ReportSectionKind* outcomes = registry.report_section("tally.outcomes");
  ASSERT_NE(outcomes, nullptr);
  EXPECT_EQ(outcomes->plugin, "tally");
  EXPECT_EQ(outcomes->doc, "Tally: candidates per outcome");
  EXPECT_TRUE(outcomes->task_formats.empty());
  EXPECT_EQ(registry.report_section("tally.graph")->task_formats, std::vector<std::string>{"npu-graph"});
  EXPECT_TRUE(outcomes->reports_on("anything"));
  EXPECT_FALSE(registry.report_section("tally.graph")->reports_on("kernelbench-torch"));
}

TEST(ReportSections, EachAddsItsTablesForTheRunsOfItsFormats) {
  kforge::Registry registry;
  registry.load(kTallyPlugin);
  const auto tables = section_tables(registry, two_tasks(), {"npu-graph"});
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_EQ(tables[0].section, "tally.outcomes");
  EXPECT_EQ(tables[0].table.title, "Tally: outcomes");
  EXPECT_EQ(tables[0].table.columns, (std::vector<std::string>{"Outcome", "Candidates"}));
  EXPECT_EQ(tables[0].table.rows, (std::vector<std::vector<std::string>>{{"passed", "2"}, {"incorrect numerical", "1"}}));
  EXPECT_EQ(json::parse(tables[0].data_json), (json{{"passed", 2}, {"incorrect numerical", 1}}));
  EXPECT_EQ(tables[1].section, "tally.graph");
  EXPECT_EQ(tables[1].table.rows, (std::vector<std::vector<std::string>>{{"a"}, {"b"}}));
  EXPECT_TRUE(tables[1].data_json.empty());

  // A run without npu-graph tasks: tally.graph is not even created.
  const auto without = section_tables(registry, two_tasks(), {"kernelbench-torch"});
  ASSERT_EQ(without.size(), 1u);
  EXPECT_EQ(without[0].section, "tally.outcomes");

  // Core's tables, then the sections', then the Environment table.
  kforge::Metrics m = metrics_with("s", {kH100});
  const auto all = kforge::report_tables(m, tables);
  ASSERT_GE(all.size(), 3u);
  EXPECT_EQ(all[all.size() - 3].title, "Tally: outcomes");
  EXPECT_EQ(all[all.size() - 2].title, "Tally: graph tasks");
  EXPECT_EQ(all.back().title, "Environment");
}

// A section that fails where it begins, reads or finishes is left out, and only it.
TEST(ReportSections, AFailingSectionIsLeftOutAndTheRestStands) {
  kforge::Registry registry;
  registry.load(kTallyPlugin);
  for (const char* step : {"create", "task", "finish"}) {
    ::setenv("TALLY_SECTION_FAILS", step, 1);
    const auto tables = section_tables(registry, two_tasks(), {"npu-graph"});
    ::unsetenv("TALLY_SECTION_FAILS");
    ASSERT_EQ(tables.size(), 1u) << step;
    EXPECT_EQ(tables[0].section, "tally.graph") << step;
  }
}

// The host refuses a table without a title or columns, a row of another width, and data
// that is not JSON; the SDK turns the refusal into the section's failure.
TEST(ReportSections, TheHostRefusesAMalformedTable) {
  const kf_host_api* host = kforge::host_api();
  kforge::ReportOutput output;
  auto* out = reinterpret_cast<kf_report_output*>(&output);
  const char* columns[] = {"A", "B"};
  const char* one[] = {"x"};
  const char* two[] = {"x", "y"};
  EXPECT_EQ(host->report_row(out, two, 2), KF_INVALID_ARGUMENT) << "a row before any table";
  EXPECT_EQ(host->report_table(out, "", nullptr, columns, 2, nullptr, 0), KF_INVALID_ARGUMENT);
  EXPECT_EQ(host->report_table(out, "T", nullptr, columns, 0, nullptr, 0), KF_INVALID_ARGUMENT);
  EXPECT_EQ(host->report_table(out, "T", nullptr, columns, 2, "{oops", 5), KF_INVALID_ARGUMENT);
  ASSERT_EQ(host->report_table(out, "T", "n", columns, 2, "{\"a\":1}", 7), KF_OK);
  EXPECT_EQ(host->report_row(out, one, 1), KF_INVALID_ARGUMENT);
  EXPECT_EQ(host->report_row(out, two, 2), KF_OK);
  ASSERT_EQ(output.tables.size(), 1u);
  EXPECT_EQ(output.tables[0].note, "n");
  EXPECT_EQ(output.tables[0].rows, (std::vector<std::vector<std::string>>{{"x", "y"}}));
  EXPECT_EQ(output.tables[0].data_json, "{\"a\":1}");
}

// The real CLI: `kforge run` and `kforge report` add the sections' tables to every format,
// `kforge plugins list` lists them, and a failing section leaves the rest of the report.
TEST(ReportSections, KforgeReportAddsAPluginsTablesToEveryFormat) {
  TempDir dir;
  int calls = 0;
  auto call = [&](std::vector<std::string> args) {
    return kforge_test::run_kforge(args, dir.path() / ("call" + std::to_string(++calls)));
  };
  const std::string out = (dir.path() / "out").string();
  const std::string plugins = KFORGE_TEST_EXPORTER_DIR;
  const auto run = call({"--plugin-dir", plugins, "run", std::string(KFORGE_TEST_DATA_DIR) + "/store/resume.yaml",
                         "--out", out, "--set", "tasks=3", "--set", "sleep=0", "--progress", "off"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("Tally: outcomes"), std::string::npos) << "the run's text report";
  EXPECT_EQ(run.out.find("Tally: graph tasks"), std::string::npos) << "no task of its format";

  const auto listed = call({"--plugin-dir", plugins, "plugins", "list"});
  EXPECT_NE(listed.out.find("tally.outcomes"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("report"), std::string::npos) << listed.out;

  fs::remove(fs::path(out) / "report.json");
  const auto report = call({"--plugin-dir", plugins, "report", out});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("Tally: outcomes"), std::string::npos) << report.out;
  const json written = json::parse(kforge_test::slurp(fs::path(out) / "report.json"));
  ASSERT_EQ(written["tables"].size(), 1u) << written["tables"];
  EXPECT_EQ(written["tables"][0]["section"], "tally.outcomes");
  EXPECT_EQ(written["tables"][0]["plugin"], "tally");
  EXPECT_EQ(written["tables"][0]["columns"], (json{"Outcome", "Candidates"}));
  EXPECT_TRUE(written["tables"][0]["data"].is_object()) << written["tables"][0];
  for (const char* file : {"report.md", "report.html"}) {
    EXPECT_NE(kforge_test::slurp(fs::path(out) / file).find("Tally: outcomes"), std::string::npos) << file;
  }

  // Without the plugin the report has no such table, and says nothing of it.
  const auto bare = call({"report", out, "--format", "text"});
  ASSERT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_EQ(bare.out.find("Tally"), std::string::npos);

  ::setenv("TALLY_SECTION_FAILS", "finish", 1);
  const auto failing = call({"--plugin-dir", plugins, "report", out, "--format", "text"});
  ::unsetenv("TALLY_SECTION_FAILS");
  EXPECT_EQ(failing.exit_code, 0) << failing.err;
  EXPECT_NE(failing.err.find("report section 'tally.outcomes' (plugin tally"), std::string::npos) << failing.err;
  EXPECT_NE(failing.err.find("told to fail at finish; its tables are left out of the report"), std::string::npos)
      << failing.err;
  EXPECT_NE(failing.out.find("Summary"), std::string::npos) << "the rest of the report stands";
}
