// A stand-in for the kforge runtime, enough to drive the built plugin through its C ABI
// the way the host does: stage parameters from the plugin's own schema (given values,
// else the declared defaults), job keys in maps, the verdict and metrics recorded.
#pragma once

#include <kforge/abi.h>

#include <nlohmann/json.hpp>

#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kforge::eval::testing {

// One stage's (or source's) parameters, as the host hands them out.
struct FakeConfig {
  std::map<std::string, nlohmann::json> values;
  std::map<std::string, std::string> texts;  // scalars as text, objects as JSON
  std::map<std::string, std::vector<std::string>> lists;
  std::string base_dir;
};

struct FakeJob {
  std::map<std::string, std::string> strings;
  std::map<std::string, double> numbers;
  bool verdict_set = false;
  kf_verdict_status status = KF_VERDICT_PASS;
  std::string error_class;
  std::string message;
  std::string log_tail;
  std::vector<std::pair<std::string, double>> metrics;
  double seconds_left = std::numeric_limits<double>::infinity();

  double metric(const std::string& name) const;  // NaN when not reported
  // Carries the job on to the next stage: attributes stay, the verdict is cleared.
  void next_stage();
};

struct FakeTask {
  std::map<std::string, std::string> strings;
  std::map<std::string, double> numbers;
};

const kf_host_api* fake_host();
// The plugin under test (KFORGE_EVAL_PLUGIN_FILE), loaded once.
const kf_plugin_descriptor* eval_plugin();
const kf_stage_kind* find_stage_kind(const std::string& name);
const kf_source_kind* find_source_kind(const std::string& name);

// Parameters for a kind's schema: `given` (JSON) on top of the declared defaults. Throws
// std::invalid_argument for a name the schema does not declare.
FakeConfig make_config(const kf_param_spec* specs, uint32_t count, const nlohmann::json& given,
                       const std::string& base_dir);

class StageUnderTest {
 public:
  StageUnderTest(const std::string& kind, const nlohmann::json& params, const std::string& base_dir = ".");
  ~StageUnderTest();
  StageUnderTest(const StageUnderTest&) = delete;
  StageUnderTest& operator=(const StageUnderTest&) = delete;

  const std::string& create_error() const { return create_error_; }
  bool created() const { return instance_ != nullptr; }
  // process(); returns the error text when it returned non-OK.
  std::string process(FakeJob& job);

 private:
  const kf_stage_kind* kind_;
  FakeConfig config_;
  void* instance_ = nullptr;
  std::string create_error_;
};

class SourceUnderTest {
 public:
  SourceUnderTest(const std::string& kind, const nlohmann::json& params, const std::string& base_dir = ".");
  ~SourceUnderTest();
  SourceUnderTest(const SourceUnderTest&) = delete;
  SourceUnderTest& operator=(const SourceUnderTest&) = delete;

  const std::string& create_error() const { return create_error_; }
  // Every task next() emits (throws std::runtime_error when next fails).
  std::vector<FakeTask> drain();
  // count(), or -1 when the source does not know.
  int64_t count();

 private:
  const kf_source_kind* kind_;
  FakeConfig config_;
  void* instance_ = nullptr;
  std::string create_error_;
};

}  // namespace kforge::eval::testing
