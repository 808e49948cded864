// The built plugin's task source kernelbench.suite and stage kernelbench.candidate_files,
// driven through the C ABI by the SDK's test kit (kforge/testing.hpp): the real host and
// parameter loader, as a pipeline run drives them.
#include "test_files.hpp"

#include <gtest/gtest.h>
#include <kforge/eval/vocabulary.hpp>
#include <kforge/testing.hpp>

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace kforge::kernelbench::testing {
namespace {

using nlohmann::json;
using kforge::testing::TestJob;
using kforge::testing::TestTask;

const kf_plugin_descriptor* kernelbench_plugin() {
  static const kf_plugin_descriptor* descriptor = kforge::testing::load_plugin(KERNELBENCH_PLUGIN_FILE);
  return descriptor;
}

// The kind's name, once the plugin under test is loaded.
const std::string& loaded(const std::string& kind) {
  kernelbench_plugin();
  return kind;
}

// The kit's harnesses with the parameters written as JSON, which is YAML too.
struct StageUnderTest : kforge::testing::StageHarness {
  StageUnderTest(const std::string& kind, const json& params, const std::string& base_dir = ".")
      : StageHarness(loaded(kind), params.dump(), base_dir) {}
};
struct SourceUnderTest : kforge::testing::SourceHarness {
  SourceUnderTest(const std::string& kind, const json& params, const std::string& base_dir = ".")
      : SourceHarness(loaded(kind), params.dump(), base_dir) {}
};

// Every kind is named kernelbench.<name> (a bundled plugin's kinds carry its folder's name);
// the two that came from plugins/eval keep their former names for this release.
TEST(KernelBenchPlugin, DeclaresItsKindsWithTheirFormerNames) {
  const kf_plugin_descriptor* plugin = kernelbench_plugin();
  EXPECT_STREQ(plugin->name, "kernelbench");
  std::map<std::string, std::vector<std::string>> kinds;
  for (uint32_t i = 0; i < plugin->source_count; ++i) {
    auto& former = kinds[plugin->sources[i]->name];
    for (uint32_t f = 0; f < plugin->sources[i]->former_name_count; ++f) former.push_back(plugin->sources[i]->former_names[f]);
  }
  for (uint32_t i = 0; i < plugin->stage_count; ++i) {
    auto& former = kinds[plugin->stages[i]->name];
    for (uint32_t f = 0; f < plugin->stages[i]->former_name_count; ++f) former.push_back(plugin->stages[i]->former_names[f]);
  }
  EXPECT_EQ(kinds, (std::map<std::string, std::vector<std::string>>{{"kernelbench.suite", {"tasks.kernelbench"}},
                                                                     {"kernelbench.tasks", {}},
                                                                     {"kernelbench.candidate_files", {"candidates.files"}},
                                                                     {"kernelbench.candidates", {}}}));
}

TEST(KernelBenchPlugin, TaskSourceEmitsTheBundledSuite) {
  SourceUnderTest source("kernelbench.suite", {{"path", "kernelbench-mini"}}, repo_dir() + "/examples");
  ASSERT_EQ(source.create_error(), "");
  const std::optional<uint64_t> count = source.count();
  const auto tasks = source.drain();
  EXPECT_EQ(count, std::optional<uint64_t>(tasks.size()));
  ASSERT_GE(tasks.size(), 40u);
  const TestTask& relu = tasks.front();
  EXPECT_EQ(relu.strings.at(KF_KEY_TASK_ID), "001_relu");
  EXPECT_EQ(relu.strings.at(KF_KEY_TASK_COMPLEXITY), "C1");
  EXPECT_EQ(relu.strings.at(KF_KEY_TASK_CATEGORY), "Activation");
  EXPECT_EQ(relu.strings.at(KF_KEY_TASK_FORMAT), "kernelbench-torch");
  EXPECT_NE(relu.strings.at(KF_KEY_TASK_SOURCE).find("class Model"), std::string::npos);
  EXPECT_EQ(json::parse(relu.strings.at(eval::kTaskSizes)), (json{{"batch_size", 16}, {"dim", 4096}}));
  EXPECT_EQ(relu.numbers.at(KF_KEY_TASK_LEVEL), 1);
  EXPECT_EQ(relu.numbers.at(eval::kTaskSizeScale), 1.0);
  EXPECT_GT(relu.numbers.at(eval::kTaskComplexityScore), 0);
  EXPECT_EQ(relu.strings.at(KF_KEY_TASK_PATH).front(), '/');

  SourceUnderTest limited("kernelbench.suite", {{"path", examples_dir()}, {"include", {"04*"}}, {"limit", 3}});
  EXPECT_EQ(limited.count(), std::optional<uint64_t>(3));
  SourceUnderTest missing("kernelbench.suite", {{"path", "no-such-dir"}}, repo_dir());
  EXPECT_NE(missing.create_error().find("no-such-dir"), std::string::npos) << missing.create_error();
}

TEST(KernelBenchPlugin, TaskSourceSetsTheFitBudgetWhereTheProfileGivesNoSizes) {
  SourceUnderTest fitted("kernelbench.suite", {{"path", "harness/tests/data/tasks/fit"}, {"fit_memory_mb", 256}},
                         repo_dir() + "/plugins/eval");
  ASSERT_EQ(fitted.create_error(), "");
  const auto tasks = fitted.drain();
  ASSERT_FALSE(tasks.empty());
  for (const TestTask& task : tasks) EXPECT_EQ(task.numbers.at(eval::kTaskFitMemoryMb), 256);
  SourceUnderTest profiled("kernelbench.suite", {{"path", "kernelbench-mini"}, {"fit_memory_mb", 256}},
                           repo_dir() + "/examples");
  EXPECT_EQ(profiled.drain().front().numbers.at(eval::kTaskFitMemoryMb), 0);  // 001_relu has small sizes
}

TestJob job_for_task(const std::string& id, int sample = 0) {
  for (const TaskEntry& task : bundled_tasks()) {
    if (task.id != id) continue;
    TestJob job;
    job.strings[KF_KEY_TASK_ID] = task.id;
    job.strings[KF_KEY_TASK_PATH] = task.path;
    job.strings[KF_KEY_TASK_FORMAT] = task.format;
    job.strings[eval::kTaskSizes] = task.sizes.dump();
    job.numbers[eval::kTaskSizeScale] = task.size_scale;
    job.numbers[KF_KEY_CANDIDATE_SAMPLE] = sample;
    return job;
  }
  throw std::invalid_argument(id);
}

TEST(KernelBenchPlugin, FileCandidatesSetCodeOrFailWithNoCandidate) {
  StageUnderTest files("kernelbench.candidate_files", {{"dir", "candidates/cpp"}, {"language", "cpp"}}, examples_dir());
  ASSERT_EQ(files.create_error(), "");
  TestJob second = job_for_task("001_relu", 1);
  EXPECT_EQ(files.process(second), "");
  EXPECT_EQ(second.verdict.status, KF_VERDICT_PASS);
  EXPECT_EQ(second.strings.at(KF_KEY_CANDIDATE_LANGUAGE), "cpp");
  EXPECT_EQ(second.strings.at(eval::kCandidateFile), examples_dir() + "/candidates/cpp/001_relu.1.py");
  EXPECT_EQ(second.strings.at(KF_KEY_CANDIDATE_CODE), read_file(examples_dir() + "/candidates/cpp/001_relu.1.py"));

  TestJob missing = job_for_task("001_relu", 7);
  EXPECT_EQ(files.process(missing), "");
  EXPECT_EQ(missing.verdict.status, KF_VERDICT_FAIL);
  EXPECT_EQ(missing.verdict.error_class, KF_ERROR_NO_CANDIDATE);
  EXPECT_EQ(missing.strings.count(KF_KEY_CANDIDATE_CODE), 0u);

  StageUnderTest broken("kernelbench.candidate_files", {{"dir", "candidates/broken"}, {"language", "cpp"}}, examples_dir());
  TestJob tagged = job_for_task("001_relu", 0);
  broken.process(tagged);
  EXPECT_EQ(tagged.strings.at(eval::kCandidateTag), "compile_error");

  StageUnderTest bad("kernelbench.candidate_files", {{"dir", "x"}, {"language", "fortran"}});
  EXPECT_NE(bad.create_error().find("fortran"), std::string::npos);
}

}  // namespace
}  // namespace kforge::kernelbench::testing
