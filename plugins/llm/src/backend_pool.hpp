// Builds and keeps the chat backends of one stage instance: one per model, made on first
// use, so a stage that serves several models (after llm.select) keeps one connection
// pool, concurrency cap and rate limiter per model.
#pragma once

#include "cassette.hpp"
#include "chat.hpp"
#include "models.hpp"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace kforge::llm {

enum class BackendMode {
  openai,  // live API
  replay,  // cassette; misses are errors (strict) or go to the live API (not strict)
  record   // cassette; misses go to the live API and are appended
};

// Parses "openai" | "replay" | "record"; throws std::invalid_argument naming the choices.
BackendMode parse_backend_mode(const std::string& text);

struct BackendSettings {
  BackendMode mode = BackendMode::openai;
  std::string models_file;  // path; may not exist when every model comes with a base_url
  ModelSettings overrides;  // the stage's own parameters
  std::string cassette;     // path; needed by replay and record
  bool strict = true;
  double latency_scale = 0;
  std::function<void(const std::string&)> notice;  // retries and similar, for the log
};

struct ModelBackend {
  ResolvedModel model;
  std::shared_ptr<ChatBackend> backend;
};

class BackendPool {
 public:
  // Loads the models file and opens the cassette; throws std::runtime_error or LlmError
  // when either is unusable.
  explicit BackendPool(BackendSettings settings);

  // `model_name` with its preset and the stage's overrides, from the pipeline alone (no
  // environment): throws LlmError(config) when it cannot be resolved.
  ResolvedModel resolve(const std::string& model_name) const;
  // Resolves every preset of the models file with the stage's overrides: the models
  // llm.select may choose per job, which must not fail every job on a setting the
  // pipeline alone decides (backoff_max below backoff_initial). Throws LlmError(config)
  // naming the first that cannot be resolved.
  void resolve_every_preset() const;

  // The backend for `model_name`, made on first use. Throws LlmError(config) when the
  // model cannot be resolved, or its api_key_env variable is unset while the backend talks
  // to the live API (backend openai or record, replay with strict: false).
  const ModelBackend& get(const std::string& model_name);

 private:
  std::shared_ptr<ChatBackend> make_live(const ResolvedModel& model) const;

  BackendSettings settings_;
  ModelCatalog catalog_;
  std::shared_ptr<Cassette> cassette_;
  std::mutex mutex_;
  std::map<std::string, ModelBackend> backends_;  // node-based: references stay valid
};

}  // namespace kforge::llm
