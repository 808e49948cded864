#include "backend_pool.hpp"

#include "openai_client.hpp"

#include <cstdlib>
#include <stdexcept>

namespace kforge::llm {

BackendMode parse_backend_mode(const std::string& text) {
  if (text == "openai") return BackendMode::openai;
  if (text == "replay") return BackendMode::replay;
  if (text == "record") return BackendMode::record;
  throw std::invalid_argument("backend '" + text + "' is not one of openai, replay, record");
}

BackendPool::BackendPool(BackendSettings settings)
    : settings_(std::move(settings)), catalog_(ModelCatalog::load(settings_.models_file)) {
  if (settings_.mode != BackendMode::openai) {
    if (settings_.cassette.empty()) {
      throw std::invalid_argument("backend " + std::string(settings_.mode == BackendMode::replay ? "replay" : "record") +
                                  " needs the cassette parameter (a JSONL file)");
    }
    cassette_ = Cassette::open(settings_.cassette, settings_.mode == BackendMode::record);
  }
  if (settings_.latency_scale < 0) throw std::invalid_argument("latency_scale must be >= 0");
}

std::shared_ptr<ChatBackend> BackendPool::make_live(const ResolvedModel& model) const {
  OpenAiConfig config;
  config.name = model.name;
  config.base_url = model.base_url;
  if (!model.api_key_env.empty()) {
    const char* key = std::getenv(model.api_key_env.c_str());
    if (key == nullptr || *key == '\0') {
      throw LlmError(LlmError::Kind::config,
                     "model '" + model.name + "': environment variable " + model.api_key_env +
                         " (its api_key_env) is not set; export the API key there, or run "
                         "offline with backend: replay and a cassette");
    }
    config.api_key = key;
  }
  config.timeout_s = model.timeout_s;
  config.max_concurrency = model.max_concurrency;
  config.requests_per_minute = model.requests_per_minute;
  config.retry = model.retry;
  config.pricing = model.pricing;
  config.notice = settings_.notice;
  return std::make_shared<OpenAiClient>(std::move(config));
}

ResolvedModel BackendPool::resolve(const std::string& model_name) const {
  return resolve_model(model_name, catalog_, settings_.overrides);
}

void BackendPool::resolve_every_preset() const {
  for (const std::string& name : catalog_.names()) resolve(name);
}

const ModelBackend& BackendPool::get(const std::string& model_name) {
  std::lock_guard lock(mutex_);
  if (auto it = backends_.find(model_name); it != backends_.end()) return it->second;
  ModelBackend made;
  made.model = resolve(model_name);
  switch (settings_.mode) {
    case BackendMode::openai:
      made.backend = make_live(made.model);
      break;
    case BackendMode::replay:
    case BackendMode::record: {
      bool needs_live = settings_.mode == BackendMode::record || !settings_.strict;
      CassetteOptions options;
      options.record = settings_.mode == BackendMode::record;
      options.latency_scale = settings_.latency_scale;
      options.pricing = made.model.pricing;
      made.backend = std::make_shared<CassetteBackend>(
          cassette_, needs_live ? make_live(made.model) : nullptr, options);
      break;
    }
  }
  return backends_.emplace(model_name, std::move(made)).first->second;
}

}  // namespace kforge::llm
