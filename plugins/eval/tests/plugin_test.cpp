// The built plugin, driven through its C ABI by the SDK's test kit (kforge/testing.hpp):
// the real host and parameter loader, as a pipeline run drives it.
#include "process.hpp"
#include "test_env.hpp"

#include <gtest/gtest.h>
#include <kforge/testing.hpp>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <set>

namespace kforge::eval::testing {
namespace {

using nlohmann::json;
using kforge::testing::TestJob;
using kforge::testing::TestTask;

const kf_plugin_descriptor* eval_plugin() {
  static const kf_plugin_descriptor* descriptor = kforge::testing::load_plugin(KFORGE_EVAL_PLUGIN_FILE);
  return descriptor;
}

// The kind's name, once the plugin under test is loaded.
const std::string& loaded(const std::string& kind) {
  eval_plugin();
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

json harness_params() { return {{"python", test_python()}, {"harness_dir", harness_dir()}, {"max_children", 2}}; }

json with(json base, const json& extra) {
  base.update(extra);
  return base;
}

TEST(Plugin, DeclaresItsKinds) {
  const kf_plugin_descriptor* plugin = eval_plugin();
  EXPECT_EQ(plugin->abi_version, KF_ABI_VERSION);
  EXPECT_STREQ(plugin->name, "eval");
  std::set<std::string> stages;
  for (uint32_t i = 0; i < plugin->stage_count; ++i) {
    stages.insert(plugin->stages[i]->name);
    if (std::string(plugin->stages[i]->name).rfind("eval.", 0) == 0) {
      EXPECT_EQ(plugin->stages[i]->flags, KF_STAGE_WAITS | KF_STAGE_CACHEABLE) << plugin->stages[i]->name;
    }
  }
  EXPECT_EQ(stages, (std::set<std::string>{"eval.check", "eval.compile.cpp", "eval.compile.cuda", "eval.compile.triton",
                                           "eval.run"}));
  EXPECT_EQ(plugin->source_count, 0u) << "the tasks it judges are other plugins' (plugins/kernelbench)";
}

TestJob job_for_task(const std::string& id, int sample = 0) {
  for (const TaskEntry& task : bundled_tasks()) {
    if (task.id != id) continue;
    TestJob job;
    job.strings[KF_KEY_TASK_ID] = task.id;
    job.strings[KF_KEY_TASK_PATH] = task.path;
    job.strings[KF_KEY_TASK_FORMAT] = task.format;
    job.strings[kTaskSizes] = task.sizes.dump();
    job.numbers[kTaskSizeScale] = task.size_scale;
    job.numbers[KF_KEY_CANDIDATE_SAMPLE] = sample;
    return job;
  }
  throw std::invalid_argument(id);
}

TEST(Plugin, CppLadderThroughTheAbi) {
  KFORGE_REQUIRE_TORCH();
  StageUnderTest check("eval.check", harness_params());
  json compile_params = harness_params();
  compile_params.erase("max_children");  // compile.cpp runs no device server of its own
  compile_params["cache_dir"] = fresh_temp_dir("plugin-cache");
  StageUnderTest compile("eval.compile.cpp", compile_params);
  StageUnderTest run("eval.run", with(harness_params(), {{"tolerance", "seed000"}, {"timing", true}, {"timing_trials", 3}}));
  for (StageUnderTest* stage : {&check, &compile, &run}) ASSERT_EQ(stage->create_error(), "");

  TestJob job = job_for_task("019_softmax");
  job.strings[KF_KEY_CANDIDATE_CODE] = read_file(examples_dir() + "/candidates/cpp/019_softmax.py");
  job.strings[KF_KEY_CANDIDATE_LANGUAGE] = kLanguageCpp;
  for (StageUnderTest* stage : {&check, &compile, &run}) {
    job.next_stage();
    ASSERT_EQ(stage->process(job), "");
    ASSERT_TRUE(job.verdict.given);
    ASSERT_EQ(job.verdict.status, KF_VERDICT_PASS) << job.verdict.error_class << ": " << job.verdict.message << "\n" << job.log_tail;
  }
  EXPECT_NE(job.strings.at("check.cpp_source").find("extern \"C\""), std::string::npos);
  EXPECT_EQ(job.strings.at("compile.artifact").substr(job.strings.at("compile.artifact").size() - 3), ".so");
  // Under the ABI's well-known names, which the reports and exports read.
  EXPECT_LE(job.metric(KF_METRIC_MAX_ABS_DIFF), 1e-3);
  EXPECT_GE(job.metric(KF_METRIC_TRIALS), 1);
  EXPECT_GT(job.metric(KF_TIMING_CANDIDATE KF_TIMING_MS), 0);
  EXPECT_GT(job.metric(KF_METRIC_SPEEDUP), 0);
  EXPECT_NE(job.strings.count(KF_KEY_RUN_ENVIRONMENT), 0u);
  // The timing's per-call statistics reach the job through the ABI, both parties'.
  for (const std::string party : {KF_TIMING_CANDIDATE, KF_TIMING_REFERENCE}) {
    EXPECT_GT(job.metric(party + KF_TIMING_MS_MEAN), 0) << party;
    EXPECT_GE(job.metric(party + KF_TIMING_MS_MAX), job.metric(party + KF_TIMING_MS_MIN)) << party;
    EXPECT_GE(job.metric(party + KF_TIMING_MS_P90), job.metric(party + KF_TIMING_MS)) << party;
    EXPECT_GE(job.metric(party + KF_TIMING_MS_STD), 0) << party;
    EXPECT_EQ(job.metric(party + KF_TIMING_TRIALS), 3) << party;
  }
  // Timings belong to this run's machine and moment: the verdict cache replays them only
  // when asked (job_measured). An untimed verdict carries no timing and may be replayed.
  EXPECT_TRUE(job.verdict.measured);
  StageUnderTest untimed("eval.run", with(harness_params(), {{"tolerance", "seed000"}}));
  ASSERT_EQ(untimed.create_error(), "");
  job.next_stage();
  ASSERT_EQ(untimed.process(job), "");
  ASSERT_EQ(job.verdict.status, KF_VERDICT_PASS) << job.verdict.error_class << ": " << job.verdict.message;
  EXPECT_FALSE(job.verdict.measured);
  for (const auto& [name, value] : job.metrics) {
    EXPECT_TRUE(name.find("_ms") == std::string::npos && name.find("_timing_") == std::string::npos &&
                name != KF_METRIC_SPEEDUP)
        << "an untimed verdict that may be replayed reports the timing " << name << " = " << value;
  }
}

TEST(Plugin, RunCacheKeyNamesTheJudgesSoftwareAndDevice) {
  KFORGE_REQUIRE_TORCH();
  StageUnderTest run("eval.run", harness_params());
  ASSERT_EQ(run.create_error(), "");
  const std::optional<std::string> key = run.cache_key(job_for_task("002_gelu"));
  ASSERT_TRUE(key.has_value());
  const json ready = json::parse(key->substr(0, key->find('\n')));
  EXPECT_EQ(ready.at("device"), "cpu");
  EXPECT_FALSE(ready.at("torch").get<std::string>().empty());
  EXPECT_FALSE(ready.at("harness_version").get<std::string>().empty());
  // The device's model (the CPU's here; the GPU's on cuda:N), not only its name.
  EXPECT_FALSE(ready.at("environment").at("cpu").get<std::string>().empty());
  EXPECT_FALSE(ready.at("environment").contains("host")) << "machines alike but for their names judge alike";
  EXPECT_FALSE(ready.contains("pid"));  // the same software on the same machine keys alike
  EXPECT_EQ(run.cache_key(job_for_task("001_relu")), key);
}

TEST(Plugin, BadParametersFailCreation) {
  StageUnderTest preset("eval.run", with(harness_params(), {{"tolerance", "loose"}}));
  EXPECT_NE(preset.create_error().find("loose"), std::string::npos);
  StageUnderTest rule("eval.run", with(harness_params(), {{"rule", {{"kind", "max_abs_diff"}, {"limt", 1}}}}));
  EXPECT_NE(rule.create_error().find("limt"), std::string::npos);
  StageUnderTest device("eval.run", with(harness_params(), {{"devices", {"cuda:0", "gpu1"}}}));
  EXPECT_NE(device.create_error().find("gpu1"), std::string::npos);
  StageUnderTest mode("eval.check", with(harness_params(), {{"mode", "thread"}}));
  EXPECT_NE(mode.create_error().find("thread"), std::string::npos);
  StageUnderTest prelude("eval.compile.cuda", {{"prelude", "pybind"}});
  EXPECT_NE(prelude.create_error().find("pybind"), std::string::npos);
  StageUnderTest limits("eval.run", with(harness_params(), {{"timeout", 0}}));
  EXPECT_NE(limits.create_error().find("parameter 'timeout'"), std::string::npos) << limits.create_error();
  EXPECT_NE(limits.create_error().find("greater than 0 s"), std::string::npos) << limits.create_error();
  StageUnderTest options("eval.run", with(harness_params(), {{"trials", 0}, {"baseline", "jit"}}));
  EXPECT_NE(options.create_error().find("parameter 'trials'"), std::string::npos) << options.create_error();
  EXPECT_NE(options.create_error().find("got 'jit'"), std::string::npos) << options.create_error();
  // The former names of the durations are accepted for this release, bare numbers as seconds.
  StageUnderTest former("eval.run", with(harness_params(), {{"timeout_s", 30}, {"cpu_s", 10},
                                                             {"reference_max_age_s", 60}, {"start_timeout_s", 5}}));
  EXPECT_TRUE(former.created()) << former.create_error();
  StageUnderTest twice("eval.run", with(harness_params(), {{"timeout_s", 30}, {"timeout", "30s"}}));
  EXPECT_NE(twice.create_error().find("'timeout_s' is its former name"), std::string::npos) << twice.create_error();
}

// A launcher's parameters belong to it: the other launcher refuses them when the pipeline
// is validated, and launcher slurm needs Slurm's client commands when the run starts.
TEST(Plugin, LauncherParametersAreCheckedAndSlurmNeedsItsCommands) {
  StageUnderTest partition("eval.run", with(harness_params(), {{"slurm_partition", "gpu"}}));
  EXPECT_NE(partition.create_error().find("slurm_partition is for launcher: slurm"), std::string::npos)
      << partition.create_error();
  StageUnderTest servers("eval.check", with(harness_params(), {{"servers", 4}}));
  EXPECT_NE(servers.create_error().find("servers: 4 is for launcher slurm"), std::string::npos) << servers.create_error();
  StageUnderTest devices("eval.run", with(harness_params(), {{"launcher", "slurm"}, {"devices", {"cuda:0", "cuda:1"}}}));
  EXPECT_NE(devices.create_error().find("with launcher slurm give device"), std::string::npos) << devices.create_error();
  StageUnderTest launcher("eval.run", with(harness_params(), {{"launcher", "kubernetes"}}));
  EXPECT_NE(launcher.create_error().find("kubernetes"), std::string::npos) << launcher.create_error();

  StageUnderTest slurm("eval.run", with(harness_params(), {{"launcher", "slurm"}, {"servers", 4}, {"gpus_per_server", 2},
                                                           {"slurm_partition", "gpu"}, {"slurm_args", {"--mem=8G"}}}));
  ASSERT_EQ(slurm.create_error(), "") << "creating starts nothing and asks Slurm nothing";
  const char* path = std::getenv("PATH");
  const std::string saved = path ? path : "";
  ::setenv("PATH", fresh_temp_dir("no-slurm").c_str(), 1);
  const std::string refused = slurm.preflight();
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_NE(refused.find("launcher slurm needs Slurm's client commands on PATH, and srun is not there"),
            std::string::npos)
      << refused;
}

// Programs named without a path, the interpreter and the harness package belong to the
// run's environment: creating (all `kforge validate` does) does not look for them, the
// run-start check (preflight) does, naming what is missing and what to install or set.
TEST(Plugin, PreflightLooksForTheProgramsTheRunNeeds) {
  // The compile stages run no harness server of their own: no server parameters.
  const json interpreter = {{"python", test_python()}, {"harness_dir", harness_dir()}};
  auto params_of = [&](const std::string& kind) {
    return kind.rfind("eval.compile.c", 0) == 0 ? interpreter : harness_params();
  };
  StageUnderTest compiler("eval.compile.cpp", with(interpreter, {{"compiler", "kforge-no-such-compiler"}}));
  ASSERT_EQ(compiler.create_error(), "");
  EXPECT_NE(compiler.preflight().find("C++ compiler 'kforge-no-such-compiler' not found on PATH: install it"),
            std::string::npos)
      << compiler.preflight();
  StageUnderTest nvcc("eval.compile.cuda", with(interpreter, {{"nvcc", "kforge-no-such-nvcc"}}));
  ASSERT_EQ(nvcc.create_error(), "");
  EXPECT_NE(nvcc.preflight().find("nvcc 'kforge-no-such-nvcc' not found: install the CUDA toolkit"), std::string::npos)
      << nvcc.preflight();
  for (const std::string kind : {"eval.check", "eval.compile.cpp", "eval.compile.triton", "eval.compile.cuda", "eval.run"}) {
    StageUnderTest python(kind, with(params_of(kind), {{"python", "kforge-no-such-python"}}));
    ASSERT_EQ(python.create_error(), "") << kind;
    EXPECT_NE(python.preflight().find("'kforge-no-such-python' not found"), std::string::npos)
        << kind << ": " << python.preflight();
    StageUnderTest harness(kind, with(params_of(kind), {{"harness_dir", "/nonexistent/harness"}}));
    ASSERT_EQ(harness.create_error(), "") << kind;
    EXPECT_NE(harness.preflight().find("harness_dir '/nonexistent/harness' holds no kforge_harness package"),
              std::string::npos)
        << kind << ": " << harness.preflight();
  }
  // The ready cases are about programs: they accept what sandbox this machine gives
  // (sandbox_policy_test.cpp is about the sandbox).
  const json ready_params = with(interpreter, {{"sandbox", "partial"}});
  StageUnderTest cuda("eval.compile.cuda", ready_params);
  ASSERT_EQ(cuda.create_error(), "");
  if (find_program("nvcc") || find_program("/usr/local/cuda/bin/nvcc")) {
    EXPECT_EQ(cuda.preflight(), "");
  } else {  // a machine without the CUDA toolkit (CI's fresh Debian): named, and nothing else is wrong
    EXPECT_EQ(cuda.preflight(), "nvcc not found: looked for nvcc on PATH and /usr/local/cuda/bin/nvcc; install the "
                                "CUDA toolkit or set the stage parameter nvcc");
  }
  if (!find_program("g++")) GTEST_SKIP() << "no g++ on PATH for the passing case";
  StageUnderTest ready("eval.compile.cpp", ready_params);
  EXPECT_EQ(ready.preflight(), "");
}

TEST(Plugin, RunWithAUserRuleObject) {
  KFORGE_REQUIRE_TORCH();
  StageUnderTest run("eval.run", with(harness_params(), {{"rule", {{"kind", "share_over_limit"}, {"rtol", 1e-2}, {"max_share", 0.5}}},
                                                          {"trials", 2}}));
  ASSERT_EQ(run.create_error(), "");
  TestJob job = job_for_task("002_gelu");  // no candidate code: the reference against itself
  ASSERT_EQ(run.process(job), "");
  EXPECT_EQ(job.verdict.status, KF_VERDICT_PASS) << job.verdict.message;
}

}  // namespace
}  // namespace kforge::eval::testing
