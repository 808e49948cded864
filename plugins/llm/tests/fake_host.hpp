// Just enough of the kforge host to drive the built plugin through its C ABI in tests:
// loads the shared object, fills stage parameters from the plugin's own schema (the
// given values, else the declared defaults), and records what a stage does to a job.
#pragma once

#include <kforge/abi.h>

#include <nlohmann/json.hpp>

#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kforge::llm::testing {

// The parameters of one stage instance: JSON values by name.
struct FakeConfig {
  std::map<std::string, nlohmann::json> values;
  std::map<std::string, std::string> json_text;  // config_json hands these out
  std::string base_dir;
};

struct FakeVerdict {
  bool set = false;
  kf_verdict_status status = KF_VERDICT_PASS;
  std::string error_class;
  std::string message;
};

struct FakeJob {
  std::map<std::string, std::string> strings;
  std::map<std::string, double> numbers;
  FakeVerdict verdict;
  std::vector<std::pair<std::string, double>> metrics;
  std::string log_tail;
  double seconds_left = std::numeric_limits<double>::infinity();

  double metric(const std::string& name) const;  // NaN when not reported
};

// Log lines the plugin wrote through the host, as "LEVEL plugin: message".
std::vector<std::string> fake_host_logs();

// The loaded plugin (KFORGE_LLM_PLUGIN_FILE) and one of its stage kinds.
const kf_plugin_descriptor* plugin_descriptor();
const kf_stage_kind* stage_kind(const std::string& name);

// One created stage instance; creation errors are kept, not thrown.
class StageUnderTest {
 public:
  StageUnderTest(const std::string& kind, const nlohmann::json& params, const std::string& base_dir);
  ~StageUnderTest();
  StageUnderTest(const StageUnderTest&) = delete;
  StageUnderTest& operator=(const StageUnderTest&) = delete;

  bool created() const { return instance_ != nullptr; }
  const std::string& create_error() const { return create_error_; }
  // Runs the stage on `job`; returns the error text when process() failed with a status.
  std::string process(FakeJob& job);

 private:
  const kf_stage_kind* kind_;
  FakeConfig config_;
  void* instance_ = nullptr;
  std::string create_error_;
};

}  // namespace kforge::llm::testing
