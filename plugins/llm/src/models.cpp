#include "models.hpp"

#include <yaml-cpp/yaml.h>

#include <kforge/bounded_file.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace kforge::llm {

namespace {

// Presets are a page of YAML.
constexpr uint64_t kMaxModelsFileBytes = 1u << 20;

std::string where(const std::string& path, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return path + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) + ": ";
}

template <typename T>
T scalar(const std::string& path, const YAML::Node& node, const std::string& field,
         const char* type) {
  if (!node.IsScalar()) throw std::runtime_error(where(path, node) + field + " must be " + type);
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    throw std::runtime_error(where(path, node) + field + " must be " + type + ", not '" +
                             node.Scalar() + "'");
  }
}

nlohmann::json yaml_to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& item : node) object[item.first.as<std::string>()] = yaml_to_json(item.second);
      return object;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json array = nlohmann::json::array();
      for (const auto& item : node) array.push_back(yaml_to_json(item));
      return array;
    }
    case YAML::NodeType::Scalar: {
      // Plain scalars that read as numbers or booleans become those; quoted ones stay text.
      if (node.Tag() != "!") {
        int64_t integer = 0;
        double number = 0;
        bool flag = false;
        if (YAML::convert<int64_t>::decode(node, integer)) return integer;
        if (YAML::convert<double>::decode(node, number)) return number;
        if (YAML::convert<bool>::decode(node, flag)) return flag;
        if (node.Scalar() == "null" || node.Scalar() == "~") return nullptr;
      }
      return node.Scalar();
    }
    default:
      return nullptr;
  }
}

void read_params(const std::string& path, const YAML::Node& params, ModelSettings& settings) {
  if (!params.IsMap()) throw std::runtime_error(where(path, params) + "params must be a mapping");
  for (const auto& item : params) {
    const std::string field = item.first.as<std::string>();
    const YAML::Node& value = item.second;
    if (field == "temperature") {
      settings.temperature = scalar<double>(path, value, field, "a number");
    } else if (field == "top_p") {
      settings.top_p = scalar<double>(path, value, field, "a number");
    } else if (field == "max_tokens") {
      settings.max_tokens = scalar<int64_t>(path, value, field, "an integer");
    } else if (field == "seed") {
      settings.seed = scalar<int64_t>(path, value, field, "an integer");
    } else if (field == "timeout") {
      settings.timeout_s = scalar<double>(path, value, field, "a number of seconds");
    } else if (field == "max_concurrency") {
      settings.max_concurrency = scalar<int64_t>(path, value, field, "an integer");
    } else if (field == "requests_per_minute") {
      settings.requests_per_minute = scalar<double>(path, value, field, "a number");
    } else if (field == "max_retries") {
      settings.max_retries = scalar<int64_t>(path, value, field, "an integer");
    } else if (field == "backoff_initial") {
      settings.backoff_initial_s = scalar<double>(path, value, field, "a number of seconds");
    } else if (field == "backoff_max") {
      settings.backoff_max_s = scalar<double>(path, value, field, "a number of seconds");
    } else if (field == "extra_body") {
      if (!value.IsMap()) throw std::runtime_error(where(path, value) + "extra_body must be a mapping");
      settings.extra_body = yaml_to_json(value);
    } else {
      throw std::runtime_error(where(path, item.first) + "unknown parameter '" + field +
                               "' (known: temperature, top_p, max_tokens, seed, timeout, "
                               "max_concurrency, requests_per_minute, max_retries, "
                               "backoff_initial, backoff_max, extra_body)");
    }
  }
}

ModelPreset read_preset(const std::string& path, const std::string& name, const YAML::Node& node) {
  if (!node.IsMap()) throw std::runtime_error(where(path, node) + "model '" + name + "' must be a mapping");
  ModelPreset preset;
  preset.name = name;
  ModelSettings& s = preset.settings;
  for (const auto& item : node) {
    const std::string field = item.first.as<std::string>();
    const YAML::Node& value = item.second;
    if (field == "base_url") {
      s.base_url = scalar<std::string>(path, value, field, "a URL");
    } else if (field == "model") {
      s.model_id = scalar<std::string>(path, value, field, "a model id");
    } else if (field == "api_key_env") {
      s.api_key_env = value.IsNull() ? std::string() : scalar<std::string>(path, value, field, "a variable name");
    } else if (field == "description") {
      preset.description = scalar<std::string>(path, value, field, "text");
    } else if (field == "price_per_million") {
      if (!value.IsMap()) {
        throw std::runtime_error(where(path, value) + "price_per_million must be {input: X, output: Y}");
      }
      for (const auto& price : value) {
        const std::string side = price.first.as<std::string>();
        double dollars = scalar<double>(path, price.second, "price_per_million." + side, "a number");
        if (side == "input") {
          s.price_input_per_million = dollars;
        } else if (side == "output") {
          s.price_output_per_million = dollars;
        } else {
          throw std::runtime_error(where(path, price.first) + "price_per_million has 'input' and 'output', not '" + side + "'");
        }
      }
    } else if (field == "params") {
      read_params(path, value, s);
    } else {
      throw std::runtime_error(where(path, item.first) + "unknown field '" + field + "' in model '" + name +
                               "' (known: description, base_url, model, api_key_env, "
                               "price_per_million, params)");
    }
  }
  if (!s.base_url) throw std::runtime_error(where(path, node) + "model '" + name + "' has no base_url");
  return preset;
}

template <typename T>
void take(std::optional<T>& mine, const std::optional<T>& theirs) {
  if (theirs) mine = theirs;
}

}  // namespace

void ModelSettings::overlay(const ModelSettings& over) {
  take(base_url, over.base_url);
  take(model_id, over.model_id);
  take(api_key_env, over.api_key_env);
  take(price_input_per_million, over.price_input_per_million);
  take(price_output_per_million, over.price_output_per_million);
  take(temperature, over.temperature);
  take(top_p, over.top_p);
  take(max_tokens, over.max_tokens);
  take(seed, over.seed);
  take(extra_body, over.extra_body);
  take(timeout_s, over.timeout_s);
  take(max_concurrency, over.max_concurrency);
  take(requests_per_minute, over.requests_per_minute);
  take(max_retries, over.max_retries);
  take(backoff_initial_s, over.backoff_initial_s);
  take(backoff_max_s, over.backoff_max_s);
}

ModelCatalog ModelCatalog::load(const std::string& path) {
  ModelCatalog catalog;
  catalog.path_ = path;
  if (!std::filesystem::exists(path)) return catalog;
  catalog.found_ = true;
  std::string why;
  const std::optional<std::string> text = read_bounded_file(path, kMaxModelsFileBytes, why);
  if (!text) throw std::runtime_error("models file " + path + " cannot be read: " + why);
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(path + ":" + std::to_string(e.mark.line + 1) + ":" +
                             std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  if (!root.IsMap() || !root["models"] || !root["models"].IsMap()) {
    throw std::runtime_error(path + ": expected a mapping 'models:' of model name -> preset");
  }
  for (const auto& item : root) {
    if (item.first.as<std::string>() != "models") {
      throw std::runtime_error(where(path, item.first) + "unknown top-level key '" +
                               item.first.as<std::string>() + "' (expected only 'models')");
    }
  }
  for (const auto& item : root["models"]) {
    std::string name = item.first.as<std::string>();
    // YAML keeps both of two equal keys; the second would silently replace the first.
    if (const auto first = catalog.presets_.find(name); first != catalog.presets_.end()) {
      throw std::runtime_error(where(path, item.first) + "model '" + name + "' is defined twice (first at line " +
                               std::to_string(first->second.line) + "): keep one of them");
    }
    ModelPreset preset = read_preset(path, name, item.second);
    preset.line = item.first.Mark().line + 1;
    catalog.presets_[name] = std::move(preset);
  }
  return catalog;
}

const ModelPreset* ModelCatalog::find(const std::string& name) const {
  auto it = presets_.find(name);
  return it == presets_.end() ? nullptr : &it->second;
}

std::vector<std::string> ModelCatalog::names() const {
  std::vector<std::string> names;
  for (const auto& [name, preset] : presets_) names.push_back(name);
  return names;
}

ResolvedModel resolve_model(const std::string& name, const ModelCatalog& catalog,
                            const ModelSettings& overrides) {
  auto fail = [&](const std::string& what) {
    throw LlmError(LlmError::Kind::config, "model '" + name + "': " + what);
  };
  ModelSettings s;
  const ModelPreset* preset = catalog.find(name);
  if (preset != nullptr) s = preset->settings;
  s.overlay(overrides);
  if (!s.base_url || s.base_url->empty()) {
    std::string known;
    for (const std::string& n : catalog.names()) known += (known.empty() ? "" : ", ") + n;
    fail("not a preset in " + (catalog.path().empty() ? std::string("the models file") : catalog.path()) +
         (catalog.file_found() ? " (presets: " + known + ")" : " (file not found)") +
         ", and no base_url is given");
  }
  // The client speaks HTTP: any other scheme is a mistake of the configuration, found here
  // rather than by every request.
  const auto scheme_is = [&](const char* scheme) {
    const std::string& url = *s.base_url;
    const size_t n = std::strlen(scheme);
    return url.size() > n && std::equal(scheme, scheme + n, url.begin(),
                                        [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); });
  };
  if (!scheme_is("http://") && !scheme_is("https://")) {
    fail("base_url '" + *s.base_url + "' is not an http:// or https:// URL");
  }
  ResolvedModel m;
  m.name = name;
  m.model_id = s.model_id.value_or(name);
  m.base_url = *s.base_url;
  m.api_key_env = s.api_key_env.value_or("");
  m.pricing.input_per_million = s.price_input_per_million.value_or(0);
  m.pricing.output_per_million = s.price_output_per_million.value_or(0);
  m.sampling.temperature = s.temperature;
  m.sampling.top_p = s.top_p;
  m.sampling.max_tokens = s.max_tokens;
  m.sampling.seed = s.seed;
  if (s.extra_body) {
    if (!s.extra_body->is_object()) fail("extra_body must be an object");
    for (const char* reserved : {"model", "messages", "stream"}) {
      if (s.extra_body->contains(reserved)) {
        fail(std::string("extra_body may not set '") + reserved + "': the client owns it");
      }
    }
    m.sampling.extra_body = *s.extra_body;
  }
  m.timeout_s = s.timeout_s.value_or(m.timeout_s);
  m.max_concurrency = static_cast<int>(s.max_concurrency.value_or(0));
  m.requests_per_minute = s.requests_per_minute.value_or(0);
  m.retry.max_retries = static_cast<int>(s.max_retries.value_or(m.retry.max_retries));
  m.retry.initial_backoff_s = s.backoff_initial_s.value_or(m.retry.initial_backoff_s);
  m.retry.max_backoff_s = s.backoff_max_s.value_or(m.retry.max_backoff_s);
  if (m.timeout_s <= 0) fail("timeout must be > 0 seconds");
  if (m.retry.max_retries < 0) fail("max_retries must be >= 0");
  if (m.retry.initial_backoff_s < 0 || m.retry.max_backoff_s < m.retry.initial_backoff_s) {
    fail("backoff_initial must be >= 0 and backoff_max >= backoff_initial");
  }
  if (m.pricing.input_per_million < 0 || m.pricing.output_per_million < 0) {
    fail("prices must be >= 0");
  }
  return m;
}

}  // namespace kforge::llm
