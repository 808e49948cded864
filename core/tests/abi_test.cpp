// The ABI's growth promise, both ways: a plugin built before the tables grew and one built
// against a newer header both load and run (stages, sources, report sections); a plugin
// built with this SDK runs on a host that offers only the first release's functions.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "engine/executor.hpp"
#include "engine/host.hpp"
#include "engine/pipeline/load.hpp"
#include "engine/registry.hpp"
#include "report/sections.hpp"
#include "support/hand_built_pipeline.hpp"

namespace {

using kforge::testing::range_pipeline;
using kforge::testing::stage;

const std::string kPlugins = KFORGE_TEST_EXTRA_PLUGIN_DIR;

class Finished : public kforge::RunObserver {
 public:
  void job_finished(const kforge::Job& job, const kforge::JobOutcome& outcome) override {
    outcomes.push_back(outcome);
    jobs.push_back(job);
  }
  std::vector<kforge::JobOutcome> outcomes;
  std::vector<kforge::Job> jobs;
};

kforge::testing::PipelineSpec one_stage(const std::string& source, const std::string& kind) {
  kforge::testing::PipelineSpec p;
  p.name = "abi";
  p.source = source;
  p.stages = {stage("only", kind)};
  return p;
}

TEST(Abi, APluginWithTheFirstReleasesTablesLoadsAndRuns) {
  kforge::Registry registry;
  registry.load(kPlugins + "/libtest_short_table.so");
  const kforge::StageKind* kind = registry.stage("short.pass");
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(kind->role, KF_ROLE_OTHER);  // a field its table does not have: the default
  EXPECT_EQ(kind->cache_key, nullptr);
  EXPECT_EQ(kind->preflight, nullptr);
  EXPECT_EQ(kind->warm_up, nullptr);
  EXPECT_EQ(registry.source("short.tasks")->preflight, nullptr);
  EXPECT_TRUE(registry.exporters().empty()) << "its descriptor ends before the exporters";
  EXPECT_TRUE(registry.report_sections().empty()) << "its descriptor ends before the report sections";
  const kforge::Plan plan = kforge::testing::compile(registry, one_stage("short.tasks", "short.pass"));
  kforge::Executor executor(plan);
  executor.preflight();  // nothing to ask: the run starts
  Finished finished;
  const auto summary = executor.run(finished);
  EXPECT_EQ(summary.passed, 3u);
  ASSERT_EQ(finished.jobs.size(), 3u);
  // Each job saw its own task's id (jobs finish in any order: they run at once).
  std::set<std::string> seen;
  for (const kforge::Job& job : finished.jobs) {
    EXPECT_EQ(*job.find_string("short.seen"), job.task->id());
    seen.insert(*job.find_string("short.seen"));
  }
  EXPECT_EQ(seen, (std::set<std::string>{"old-0", "old-1", "old-2"}));
}

// A plugin built before parameters had former names: its constraints tables end at `max`.
// The host reads nothing past them (what lies there here would be refused as an empty
// former name), and the parameter has no former names.
TEST(Abi, ConstraintsOfTheirFirstReleaseHaveNoFormerNames) {
  struct ConstraintsV1 {  // kf_param_constraints as kforge 0.2 first declared it
    uint32_t struct_size;
    const char* const* choices;
    uint32_t choice_count;
    uint32_t range;
    double min;
    double max;
  };
  static_assert(sizeof(ConstraintsV1) == KF_PARAM_CONSTRAINTS_V1_SIZE, "the first release's constraints table");
  struct ConstraintsAndWhatFollows {
    ConstraintsV1 table;
    const char* const* not_former_names;
    uint32_t not_a_count;
  };
  static const char* const kNoName[] = {nullptr};
  static const ConstraintsAndWhatFollows kConstraints = {{sizeof(ConstraintsV1), nullptr, 0, KF_RANGE_MIN, 1, 0},
                                                         kNoName, 1};
  static const kf_param_constraints* const kTable[] = {
      reinterpret_cast<const kf_param_constraints*>(&kConstraints.table)};
  static const kf_param_spec kParams[] = {{"factor", KF_PARAM_INT, "3", 0, "A factor."}};

  kforge::Registry registry;
  const kf_plugin_descriptor* long_table = registry.load(kPlugins + "/libtest_long_table.so");
  kf_stage_kind kind = *long_table->stages[0];
  kind.struct_size = sizeof(kf_stage_kind);  // today's stage table, a constraints table of the first release
  kind.name = "older.run";
  kind.params = kParams;
  kind.param_count = 1;
  kind.param_constraints = kTable;
  const kf_stage_kind* stages[] = {&kind};
  kf_plugin_descriptor older = *long_table;
  older.struct_size = sizeof(kf_plugin_descriptor);
  older.name = "older";
  older.stages = stages;
  older.stage_count = 1;
  older.source_count = 0;
  older.exporter_count = 0;
  older.report_section_count = 0;
  registry.add(&older, "/elsewhere/libolder.so");
  const kforge::StageKind* read = registry.stage("older.run");
  ASSERT_NE(read, nullptr);
  ASSERT_EQ(read->params.size(), 1u);
  EXPECT_EQ(read->params[0].range, KF_RANGE_MIN);
  EXPECT_TRUE(read->params[0].former_names.empty());
}

TEST(Abi, APluginWithLongerTablesLoadsAndRunsOnWhatTheHostKnows) {
  kforge::Registry registry;
  registry.load(kPlugins + "/libtest_long_table.so");
  const kforge::StageKind* kind = registry.stage("long.run");
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(kind->role, KF_ROLE_RUN);
  ASSERT_EQ(kind->params.size(), 1u);
  EXPECT_EQ(kind->params[0].range, KF_RANGE_MIN);  // read from a longer constraints table
  ASSERT_NE(registry.source("long.tasks"), nullptr);
  EXPECT_NE(registry.source("long.tasks")->count, nullptr);

  auto draft = one_stage("long.tasks", "long.run");
  draft.stages[0].config = kforge::load_params(*kind, "{factor: 4}", ".");
  const kforge::Plan plan = kforge::testing::compile(registry, draft);
  kforge::Executor executor(plan);
  executor.preflight();  // the field this host knows is NULL there; what follows it is not read
  Finished finished;
  EXPECT_EQ(executor.run(finished).passed, 2u);
  ASSERT_EQ(finished.outcomes.size(), 2u);
  EXPECT_EQ(finished.outcomes[0].speedup, 4.0);

  try {
    kforge::load_params(*kind, "{factor: 0}", ".");
    ADD_FAILURE() << "factor 0 is below the declared minimum";
  } catch (const kforge::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("must be at least 1, got 0"), std::string::npos) << e.what();
  }
}

// A report section from a newer header: its table and the descriptor are longer than this
// host knows; the section is read for what the host knows and adds its table.
TEST(Abi, AReportSectionWithALongerTableAddsItsTable) {
  kforge::Registry registry;
  registry.load(kPlugins + "/libtest_long_table.so");
  const kforge::ReportSectionKind* section = registry.report_section("long.section");
  ASSERT_NE(section, nullptr);
  EXPECT_EQ(section->task_formats, std::vector<std::string>{"long-format"});
  kforge::Dataset data;
  data.tasks["a"] = kforge::TaskInfo{"a", "a", "", "", "long-format", 1};
  data.tasks["b"] = kforge::TaskInfo{"b", "b", "", "", "other-format", 1};
  for (const char* id : {"a", "b"}) {
    kforge::JobOutcome job;
    job.task_id = id;
    data.jobs.push_back(job);
  }
  kforge::SectionsFold fold({section}, "s");
  kforge::export_input_of(data, {}).tasks([&](const kforge::ExportTask& task) { fold.add(task); });
  const auto tables = fold.finish();
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].section, "long.section");
  EXPECT_EQ(tables[0].plugin, "long");
  EXPECT_EQ(tables[0].table.title, "Long tasks");
  EXPECT_EQ(tables[0].table.rows, (std::vector<std::vector<std::string>>{{"1"}})) << "only the task of its format";
  EXPECT_EQ(tables[0].data_json, "[1]");
}

// A host older than report sections never calls one; an SDK section that is handed such a
// host's table anyway says so instead of calling past its end.
TEST(Abi, AnSdkReportSectionOnAHostWithoutReportTablesSaysSo) {
  kforge::Registry registry;
  registry.load(std::string(KFORGE_TEST_EXPORTER_DIR) + "/libtest_tally.so");
  const kforge::ReportSectionKind& section = *registry.report_section("tally.outcomes");
  kf_host_api old_host = *kforge::host_api();
  old_host.struct_size = KF_END_OF(kf_host_api, export_write);
  void* instance = nullptr;
  char err[256] = {0};
  ASSERT_EQ(section.create(&old_host, &instance, err, sizeof err), KF_OK) << err;
  const std::string task = R"({"id":"t","jobs":[{"sample":0,"outcome":"passed"}]})";
  EXPECT_EQ(section.task(instance, task.data(), task.size(), err, sizeof err), KF_OK) << err;
  kforge::ReportOutput output;
  EXPECT_EQ(section.finish(instance, reinterpret_cast<kf_report_output*>(&output), err, sizeof err), KF_ERROR);
  EXPECT_EQ(std::string(err), "this kforge takes no report tables (it is older than 0.2)");
  EXPECT_TRUE(output.tables.empty());
  section.destroy(instance);
}

TEST(Abi, ATableShorterThanItsFirstReleaseIsRefused) {
  kforge::Registry registry;
  registry.load(kPlugins + "/libtest_short_table.so");  // the real thing loads
  const kf_plugin_descriptor* d = registry.load(kPlugins + "/libtest_short_table.so");
  kf_stage_kind truncated{};
  std::memcpy(&truncated, d->stages[0], KF_STAGE_KIND_V1_SIZE);
  truncated.struct_size = KF_STAGE_KIND_V1_SIZE - sizeof(void*);
  truncated.name = "short.truncated";
  const kf_stage_kind* stages[] = {&truncated};
  kf_plugin_descriptor broken = *d;
  broken.stages = stages;
  broken.source_count = 0;
  try {
    registry.add(&broken, "truncated");
    ADD_FAILURE() << "a table shorter than any version must be refused";
  } catch (const kforge::PluginAbiMismatch& e) {
    EXPECT_NE(std::string(e.what()).find("smaller than any version of it"), std::string::npos) << e.what();
  }
}

// A host of the first release: the SDK must not touch job_cancelled, job_run_seed or
// job_measured, and fall back where there is something to fall back to.
TEST(Abi, AnSdkPluginRunsOnAHostWithTheFirstReleasesTable) {
  kforge::Registry registry;
  registry.load(kPlugins + "/libtest_npu.so");
  registry.load(std::string(KFORGE_TEST_PLUGIN_DIR) + "/libkforge_demo.so");
  kf_host_api old_host = *kforge::host_api();
  old_host.struct_size = KF_HOST_API_V1_SIZE;

  auto call = [&](const kforge::StageKind& kind, const std::string& params, kforge::Job& job,
                  const kforge::CancelToken& cancel) {
    const kforge::StageConfig config = kforge::load_params(kind, params, ".");
    void* instance = nullptr;
    char err[256] = {0};
    EXPECT_EQ(kind.create(&old_host, reinterpret_cast<const kf_config*>(&config), &instance, err, sizeof err), KF_OK);
    kforge::Verdict verdict;
    kforge::JobCall c;
    c.job = &job;
    c.verdict = &verdict;
    c.routes = &kind.routes;
    c.cancel = &cancel;
    c.run_seed = 1234;
    {
      const kforge::CurrentRun current(cancel);
      EXPECT_EQ(kind.process(instance, reinterpret_cast<kf_job*>(&c), err, sizeof err), KF_OK) << err;
    }
    kind.destroy(instance);
    return verdict;
  };
  kforge::Job job;
  job.task = std::make_shared<kforge::Task>();
  const kforge::CancelToken running;
  const kforge::Verdict generated = call(*registry.stage("vllm.generate"), "{}", job, running);
  EXPECT_EQ(generated.status, kforge::VerdictStatus::Pass);
  EXPECT_EQ(*job.find_string("npu.seed"), "none") << "the old host offers no seed";

  const kforge::Verdict timed = call(*registry.stage("npu.run"), "{}", job, running);
  EXPECT_FALSE(timed.measured) << "the old host cannot take the mark";

  kforge::CancelToken cancelled;
  cancelled.request();
  const kforge::Verdict slept = call(*registry.stage("demo.sleep"), "{seconds: 30}", job, cancelled);
  EXPECT_EQ(slept.error_class, "cancelled") << "cancelled() falls back to run_cancelled()";
}

}  // namespace
