// kforge plugin test kit: drive one stage (or task source) of a built plugin through the
// real kforge host and parameter loader, the way `kforge run` does, from a unit test.
//
//   kforge::testing::load_plugin(MY_PLUGIN_FILE);          // the .so under test
//   kforge::testing::StageHarness stage("hello.greet", "{greeting: bonjour}");
//   ASSERT_TRUE(stage.created()) << stage.create_error();
//   kforge::testing::TestJob job;
//   job.strings[KF_KEY_TASK_ID] = "relu";
//   EXPECT_EQ(stage.process(job), "");
//   EXPECT_EQ(job.verdict.status, KF_VERDICT_PASS);
//   EXPECT_EQ(job.strings["hello.text"], "bonjour, relu");
//
// Parameters are YAML text, checked against the kind's schema exactly as a pipeline's
// `with:` is (types, choices, ranges, durations, defaults): a value the pipeline loader
// refuses is a creation error here too, with its message. Link kforge::testing (libkforge)
// from the CMake package. The header uses only the C ABI and the standard library.
#pragma once

#include <kforge/abi.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kforge::testing {

// Loads a plugin into the kit's registry (once; never unloaded) and returns its descriptor,
// for tests of the ABI tables themselves. Throws std::runtime_error saying why it did not
// load. Without any load_plugin call, the harnesses load what KFORGE_PLUGIN_PATH names.
KF_EXPORT const kf_plugin_descriptor* load_plugin(const std::string& file);

// Every line plugins logged through the host since the process started, as
// "LEVEL plugin: message" (LEVEL: TRACE, DEBUG, INFO, WARN, ERROR).
KF_EXPORT std::vector<std::string> plugin_logs();

// One job as a stage sees it and leaves it.
struct TestJob {
  // task.*, last.* (the verdict that routed the job here), candidate.* and free
  // attributes. Keys the host makes read-only (task.*, last.*) stay as given.
  std::map<std::string, std::string> strings;
  // task.* numbers, candidate.sample and candidate.round (whole numbers), free attributes.
  std::map<std::string, double> numbers;
  struct Verdict {
    bool given = false;  // the stage called job_verdict; a call without one passes
    kf_verdict_status status = KF_VERDICT_PASS;
    std::string route;   // a named route, empty for the status' own
    std::string error_class;
    std::string message;
    bool measured = false;  // job_measured: the verdict holds measurements
  } verdict;
  std::vector<std::pair<std::string, double>> metrics;
  std::string log_tail;
  // What job_seconds_left answers: the stage's timeout left for this call.
  double seconds_left = std::numeric_limits<double>::infinity();

  // NaN when not reported.
  double metric(const std::string& name) const {
    for (const auto& [key, value] : metrics) {
      if (key == name) return value;
    }
    return std::nan("");
  }
  // Carries the job on to the next stage: attributes stay, the verdict, metrics and log
  // tail are cleared.
  void next_stage() {
    verdict = {};
    metrics.clear();
    log_tail.clear();
  }
};

// A task as a source emitted it.
struct TestTask {
  std::map<std::string, std::string> strings;
  std::map<std::string, double> numbers;
};

class KF_EXPORT StageHarness {
 public:
  // Configures the stage kind from `params` (YAML, e.g. "{model: x, timeout: 90s}"; relative
  // paths against base_dir) and creates one instance. Throws std::invalid_argument when no
  // loaded plugin has the kind; a refused parameter or constructor is created() == false.
  StageHarness(const std::string& kind, const std::string& params = "{}", const std::string& base_dir = ".");
  ~StageHarness();
  StageHarness(const StageHarness&) = delete;
  StageHarness& operator=(const StageHarness&) = delete;

  bool created() const;
  // The loader's diagnostics (file "parameters of KIND", line:col in `params`) or the
  // constructor's message; empty when created.
  const std::string& create_error() const;

  // Runs the stage on `job` and leaves in it what the stage did. Returns "" when process
  // returned KF_OK, else its error text (the run would record a plugin_error), or the
  // host's complaint when the stage misused the API (set a read-only key, chose a route it
  // does not declare).
  std::string process(TestJob& job);

  // The stage's run-start check (kf_stage_kind::preflight), as `kforge run` calls it before
  // the first job and `kforge validate` never does: "" when it passes or the stage has none,
  // else its message (the run would stop with it, exit 2).
  std::string preflight();

  // What the stage adds to the verdict cache's key for `job`; nullopt when it declines or
  // has no cache_key.
  std::optional<std::string> cache_key(const TestJob& job);

  // The run's cancellation, as job_cancelled and run_cancelled report it.
  void cancel();
  // The run's secret seed for job_run_seed (none: KF_NOT_FOUND, as in `kforge validate`).
  void set_run_seed(std::optional<uint64_t> seed);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class KF_EXPORT SourceHarness {
 public:
  SourceHarness(const std::string& kind, const std::string& params = "{}", const std::string& base_dir = ".");
  ~SourceHarness();
  SourceHarness(const SourceHarness&) = delete;
  SourceHarness& operator=(const SourceHarness&) = delete;

  bool created() const;
  const std::string& create_error() const;
  // Every task next() emits; throws std::runtime_error with its message when next fails.
  std::vector<TestTask> drain();
  // count(), nullopt when the source cannot tell.
  std::optional<uint64_t> count();
  // The source's run-start check, as StageHarness::preflight.
  std::string preflight();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge::testing
