// Model presets (pipelines/models.yaml) and how a stage's parameters combine with them.
//
// Precedence, highest first: the stage's own parameters, the preset's values, built-in
// defaults. A model name that is no preset is used as the API model id as it is, which
// then needs base_url from the stage.
#pragma once

#include "chat.hpp"
#include "retry_policy.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kforge::llm {

// Settings a preset can give and a stage can override; unset fields defer to the next
// level down.
struct ModelSettings {
  std::optional<std::string> base_url;
  std::optional<std::string> model_id;
  std::optional<std::string> api_key_env;  // "" means: send no key
  std::optional<double> price_input_per_million;
  std::optional<double> price_output_per_million;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> max_tokens;
  std::optional<int64_t> seed;
  std::optional<nlohmann::json> extra_body;
  std::optional<double> timeout_s;
  std::optional<int64_t> max_concurrency;
  std::optional<double> requests_per_minute;
  std::optional<int64_t> max_retries;
  std::optional<double> backoff_initial_s;
  std::optional<double> backoff_max_s;

  // Fields set in `over` replace ours.
  void overlay(const ModelSettings& over);
};

struct ModelPreset {
  std::string name;
  std::string description;
  ModelSettings settings;
  int line = 0;  // where the models file defines it
};

class ModelCatalog {
 public:
  ModelCatalog() = default;
  // Reads a models file; throws std::runtime_error with file:line:col for a bad entry.
  // A file that does not exist gives an empty catalog that remembers so (error messages
  // then say why a name was not found).
  static ModelCatalog load(const std::string& path);

  const ModelPreset* find(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::string& path() const { return path_; }
  bool file_found() const { return found_; }

 private:
  std::string path_;
  bool found_ = false;
  std::map<std::string, ModelPreset> presets_;
};

// Everything needed to talk to one model.
struct ResolvedModel {
  std::string name;      // as the pipeline names it
  std::string model_id;  // as the API knows it
  std::string base_url;
  std::string api_key_env;  // empty: no key
  Pricing pricing;
  SamplingParams sampling;  // seed here is the base seed; the sample index is added per call
  double timeout_s = 300;
  int max_concurrency = 0;
  double requests_per_minute = 0;
  RetryPolicy retry;
};

// The model `name` with its preset (when the catalog has one) under `overrides`. Throws
// LlmError(config) when no base_url can be found or a value is out of range.
ResolvedModel resolve_model(const std::string& name, const ModelCatalog& catalog,
                            const ModelSettings& overrides);

}  // namespace kforge::llm
