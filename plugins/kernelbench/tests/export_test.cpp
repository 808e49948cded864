// The kernelbench exporter (`kforge export --format kernelbench`): KernelBench's entries,
// its baseline file, problem ids and the refusals, from tasks as the host hands them to an
// exporter (kf_exporter_kind in kforge/abi.h).
#include "export.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;
namespace kb = kforge::kernelbench;

const json kH100 = {{"device", "cuda:0"}, {"gpu", "NVIDIA H100 80GB HBM3"}, {"driver", "570.86.15"}};

// A job as export_task_json writes it: passed on an H100 unless changed.
json job(int sample, json metrics = json::object()) {
  return {{"sample", sample},    {"round", 0},          {"status", "pass"},     {"outcome", "passed"},
          {"passed", true},      {"compiled", true},    {"stage", "run"},       {"error_class", ""},
          {"message", ""},       {"language", "cuda"},  {"model", "m"},         {"device", "cuda:0"},
          {"environment", kH100}, {"speedup", nullptr}, {"metrics", std::move(metrics)}};
}

json failed(int sample, const std::string& outcome, const std::string& error_class, const std::string& message,
            json metrics = json::object()) {
  json j = job(sample, std::move(metrics));
  j["status"] = "fail";
  j["outcome"] = outcome;
  j["passed"] = false;
  j["compiled"] = outcome != "compile error";
  j["error_class"] = error_class;
  j["message"] = message;
  j["environment"] = json::object();
  j["device"] = "";
  return j;
}

std::string task(const std::string& id, const std::string& name, int level, json jobs) {
  return json{{"strategy", "s"},   {"id", id},         {"name", name}, {"level", level}, {"category", ""},
              {"complexity", ""},  {"format", "kernelbench-torch"}, {"known", true}, {"jobs", std::move(jobs)}}
      .dump();
}

}  // namespace

TEST(KernelBenchExport, AnEntryHasKernelBenchsKeysInItsOrder) {
  const json measured = {{"trials", 5},          {"candidate_ms", 0.25},         {"candidate_ms_mean", 0.26},
                         {"candidate_ms_std", 0.01}, {"candidate_ms_min", 0.24}, {"candidate_ms_max", 0.3},
                         {"candidate_timing_trials", 100}, {"reference_ms_mean", 0.5}, {"reference_timing_trials", 100}};
  const ojson entry = kb::kernelbench_entry(job(2, measured));
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
  EXPECT_DOUBLE_EQ(entry["runtime_stats"]["std"].get<double>(), 0.01);
  EXPECT_EQ(entry["runtime_stats"]["num_trials"], 100);
  EXPECT_EQ(entry["runtime_stats"]["hardware"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(entry["runtime_stats"]["device"], "cuda:0");
}

TEST(KernelBenchExport, NoStatisticIsMadeUpWhereTheHarnessMeasuredNone) {
  // A store from before the harness measured statistics: a median only.
  const ojson entry = kb::kernelbench_entry(job(0, {{"trials", 5}, {"candidate_ms", 0.25}, {"reference_ms", 0.5}}));
  EXPECT_EQ(entry["runtime"], -1.0) << "KernelBench's value for a runtime not measured";
  EXPECT_TRUE(entry["runtime_stats"].empty());
  // A mean without the rest: only what was measured.
  const ojson partial = kb::kernelbench_entry(job(0, {{"candidate_ms", 0.25}, {"candidate_ms_mean", 0.26}}));
  EXPECT_DOUBLE_EQ(partial["runtime"].get<double>(), 0.26);
  for (const char* field : {"std", "min", "max", "num_trials"}) {
    EXPECT_FALSE(partial["runtime_stats"].contains(field)) << field;
  }
}

TEST(KernelBenchExport, FailedCandidatesCarryKernelBenchsErrorKeysAndNoRuntime) {
  const std::string message = "candidate.cu:3:1: error: expected ';'";
  const ojson compile = kb::kernelbench_entry(failed(0, "compile error", "compile_error", message));
  EXPECT_EQ(compile["compiled"], false);
  EXPECT_EQ(compile["correctness"], false);
  EXPECT_EQ(compile["runtime"], -1.0);
  EXPECT_TRUE(compile["runtime_stats"].empty());
  EXPECT_EQ(compile["metadata"]["compilation_error"], message);
  EXPECT_EQ(compile["metadata"]["compilation_error_name"], "compile_error");
  EXPECT_EQ(compile["metadata"]["kforge_status"], "compile error");
  EXPECT_EQ(compile["metadata"]["hardware"], "unknown");

  const ojson numerical = kb::kernelbench_entry(failed(1, "incorrect numerical", "numerical_mismatch", "max abs diff 0.03",
                                                       {{"max_abs_diff", 0.03125}, {"mean_abs_diff", 0.001}}));
  EXPECT_EQ(numerical["compiled"], true);
  EXPECT_EQ(numerical["metadata"]["correctness_issue"], "max abs diff 0.03");
  EXPECT_EQ(numerical["metadata"]["max_difference"], ojson::array({"0.031250"}));
  EXPECT_EQ(numerical["metadata"]["avg_difference"], ojson::array({"0.001000"}));

  const ojson crashed = kb::kernelbench_entry(failed(2, "runtime error", "crash", "signal 11"));
  EXPECT_EQ(crashed["metadata"]["runtime_error"], "signal 11");
  EXPECT_EQ(crashed["metadata"]["runtime_error_name"], "crash");
}

TEST(KernelBenchExport, TheBaselineFileCarriesTheReferencesStatistics) {
  kb::KernelBenchExport e("{}");
  e.task(task("level1/19_ReLU", "19_ReLU", 1,
              {job(0, {{"reference_ms", 0.5}, {"reference_ms_mean", 0.52}, {"reference_ms_std", 0.02},
                       {"reference_ms_min", 0.49}, {"reference_ms_max", 0.6}, {"reference_timing_trials", 100}})}));
  e.task(task("level1/20_Old", "20_Old", 1, {job(0, {{"reference_ms", 0.5}})}));  // no statistics measured
  const json baseline = json::parse(e.finish().second);
  const json& relu = baseline["level1"]["19_ReLU.py"];
  EXPECT_DOUBLE_EQ(relu["mean"].get<double>(), 0.52);
  EXPECT_DOUBLE_EQ(relu["std"].get<double>(), 0.02);
  EXPECT_DOUBLE_EQ(relu["min"].get<double>(), 0.49);
  EXPECT_DOUBLE_EQ(relu["max"].get<double>(), 0.6);
  EXPECT_EQ(relu["num_trials"], 100);
  EXPECT_EQ(relu["hardware"], "NVIDIA H100 80GB HBM3");
  EXPECT_FALSE(baseline["level1"].contains("20_Old.py")) << "a reference without a measured mean has no entry";
}

// The files are written in problem id order whatever the task order, as the dump of the
// whole documents.
TEST(KernelBenchExport, ProblemsComeInIdOrderWhateverTheTaskOrder) {
  kb::KernelBenchExport e("{}");
  e.task(task("level1/20_Old", "20_Old", 1, {job(0), job(1)}));
  e.task(task("level1/3_Small", "3_Small", 1, {job(0), job(1, {{"reference_ms_mean", 0.7}})}));
  e.task(task("level1/100_Big", "100_Big", 1, {job(0, {{"reference_ms_mean", 0.5}}), job(1)}));
  const auto [results_text, baseline_text] = e.finish();
  const ojson results = ojson::parse(results_text);
  EXPECT_EQ(results.dump(2) + "\n", results_text);
  std::vector<std::string> ids;
  for (const auto& [id, entries] : results.items()) ids.push_back(id);
  EXPECT_EQ(ids, (std::vector<std::string>{"3", "20", "100"}));
  EXPECT_EQ(results["3"].size(), 2u);
  EXPECT_EQ(results["3"][1]["sample_id"], 1);
  const ojson baseline = ojson::parse(baseline_text);
  EXPECT_EQ(baseline.dump(2) + "\n", baseline_text);
  std::vector<std::string> names;
  for (const auto& [name, stats] : baseline["level1"].items()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"3_Small.py", "100_Big.py"}));
  EXPECT_EQ(baseline["level1"]["3_Small.py"]["mean"], 0.7);

  // None at all: empty documents.
  const auto none = kb::KernelBenchExport("{}").finish();
  EXPECT_EQ(none.first, "{}\n");
  EXPECT_EQ(none.second, "{\n  \"level1\": {}\n}\n");
}

TEST(KernelBenchExport, ARunItCannotWriteIsRefusedSayingWhy) {
  auto refusal = [](kb::KernelBenchExport& e) -> std::string {
    try {
      e.finish();
    } catch (const std::exception& error) {
      return error.what();
    }
    return "";
  };
  kb::KernelBenchExport twice("{}");
  twice.task(task("level1/20_Old", "20_Old", 1, {job(0)}));
  twice.task(task("level1/20_Again", "20_Again", 1, {job(0)}));
  EXPECT_EQ(refusal(twice), "tasks 'level1/20_Old' and 'level1/20_Again' both have problem id 20 in level 1");

  kb::KernelBenchExport unnumbered("{}");
  unnumbered.task(task("relu", "relu", 1, {job(0)}));
  EXPECT_EQ(refusal(unnumbered), "task 'relu' is no KernelBench problem: its name 'relu' does not start with a problem id");

  kb::KernelBenchExport levels("{}");
  levels.task(task("level1/1_A", "1_A", 1, {job(0)}));
  levels.task(task("level2/1_B", "1_B", 2, {job(0)}));
  EXPECT_EQ(refusal(levels),
            "the run has tasks of levels 1, 2; KernelBench keeps one level per eval_results.json: pass --option level=L");
  kb::KernelBenchExport level2(R"({"level": 2})");
  level2.task(task("level1/1_A", "1_A", 1, {job(0)}));
  level2.task(task("level2/1_B", "1_B", 2, {job(0)}));
  level2.task(task("level1/relu", "relu", 1, {job(0)}));  // of another level: not its concern
  EXPECT_EQ(json::parse(level2.finish().first).size(), 1u);
  kb::KernelBenchExport level3(R"({"level": 3})");
  level3.task(task("level1/1_A", "1_A", 1, {job(0)}));
  EXPECT_EQ(refusal(level3), "the run has no task of level 3 (its levels: 1)");

  EXPECT_THROW(kb::KernelBenchExport(R"({"levle": 2})"), std::invalid_argument);
  EXPECT_THROW(kb::KernelBenchExport(R"({"level": "two"})"), std::invalid_argument);
}

TEST(KernelBenchExport, ProblemIdsComeFromTheTaskName) {
  EXPECT_EQ(kb::problem_id_of("19_ReLU"), 19);
  EXPECT_EQ(kb::problem_id_of("100_HingeLoss"), 100);
  EXPECT_FALSE(kb::problem_id_of("relu"));
}
