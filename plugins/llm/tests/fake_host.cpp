#include "fake_host.hpp"

#include <yaml-cpp/yaml.h>

#include <dlfcn.h>

#include <cmath>
#include <mutex>
#include <stdexcept>

namespace kforge::llm::testing {

namespace {

std::mutex g_log_mutex;
std::vector<std::string> g_logs;

FakeConfig& cfg_of(const kf_config* cfg) {
  return *reinterpret_cast<FakeConfig*>(const_cast<kf_config*>(cfg));
}
FakeJob& job_of(const kf_job* job) { return *reinterpret_cast<FakeJob*>(const_cast<kf_job*>(job)); }

const nlohmann::json* value_of(const kf_config* cfg, const char* name) {
  auto& values = cfg_of(cfg).values;
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

nlohmann::json yaml_to_json(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& item : node) out[item.first.as<std::string>()] = yaml_to_json(item.second);
    return out;
  }
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : node) out.push_back(yaml_to_json(item));
    return out;
  }
  return node.IsNull() ? nlohmann::json() : nlohmann::json(node.Scalar());
}

// A schema default as the JSON value of the parameter's type. As in the runtime, a
// string default is the text itself; the others are YAML.
nlohmann::json default_value(const kf_param_spec& spec) {
  const char* text = spec.default_value;
  switch (spec.type) {
    case KF_PARAM_STRING:
      return std::string(text);
    case KF_PARAM_INT:
      return YAML::Load(text).as<int64_t>();
    case KF_PARAM_FLOAT:
      return YAML::Load(text).as<double>();
    case KF_PARAM_BOOL:
      return YAML::Load(text).as<bool>();
    case KF_PARAM_STRING_LIST:
    case KF_PARAM_OBJECT:
      return yaml_to_json(YAML::Load(text));
  }
  return nullptr;
}

bool type_fits(kf_param_type type, const nlohmann::json& value) {
  switch (type) {
    case KF_PARAM_STRING: return value.is_string();
    case KF_PARAM_INT: return value.is_number_integer();
    case KF_PARAM_FLOAT: return value.is_number();
    case KF_PARAM_BOOL: return value.is_boolean();
    case KF_PARAM_STRING_LIST: return value.is_array();
    case KF_PARAM_OBJECT: return value.is_object();
  }
  return false;
}

void host_log(kf_log_level level, const char* plugin, const char* message) {
  static const char* names[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR"};
  std::lock_guard lock(g_log_mutex);
  g_logs.push_back(std::string(names[level]) + " " + plugin + ": " + message);
}

kf_status config_string(const kf_config* cfg, const char* name, const char** out, size_t* len) {
  const nlohmann::json* v = value_of(cfg, name);
  if (v == nullptr || !v->is_string()) return KF_NOT_FOUND;
  const std::string& s = v->get_ref<const std::string&>();
  *out = s.data();
  *len = s.size();
  return KF_OK;
}
kf_status config_int(const kf_config* cfg, const char* name, int64_t* out) {
  const nlohmann::json* v = value_of(cfg, name);
  if (v == nullptr || !v->is_number_integer()) return KF_NOT_FOUND;
  *out = v->get<int64_t>();
  return KF_OK;
}
kf_status config_float(const kf_config* cfg, const char* name, double* out) {
  const nlohmann::json* v = value_of(cfg, name);
  if (v == nullptr || !v->is_number()) return KF_NOT_FOUND;
  *out = v->get<double>();
  return KF_OK;
}
kf_status config_bool(const kf_config* cfg, const char* name, int* out) {
  const nlohmann::json* v = value_of(cfg, name);
  if (v == nullptr || !v->is_boolean()) return KF_NOT_FOUND;
  *out = v->get<bool>() ? 1 : 0;
  return KF_OK;
}
kf_status config_list_size(const kf_config* cfg, const char* name, size_t* out) {
  const nlohmann::json* v = value_of(cfg, name);
  if (v == nullptr || !v->is_array()) return KF_NOT_FOUND;
  *out = v->size();
  return KF_OK;
}
kf_status config_list_item(const kf_config* cfg, const char* name, size_t index, const char** out,
                           size_t* len) {
  const nlohmann::json* v = value_of(cfg, name);
  if (v == nullptr || !v->is_array() || index >= v->size() || !(*v)[index].is_string()) {
    return KF_NOT_FOUND;
  }
  const std::string& s = (*v)[index].get_ref<const std::string&>();
  *out = s.data();
  *len = s.size();
  return KF_OK;
}
kf_status config_json(const kf_config* cfg, const char* name, const char** out, size_t* len) {
  auto& texts = cfg_of(cfg).json_text;
  auto it = texts.find(name);
  if (it == texts.end()) return KF_NOT_FOUND;
  *out = it->second.data();
  *len = it->second.size();
  return KF_OK;
}
const char* config_base_dir(const kf_config* cfg) { return cfg_of(cfg).base_dir.c_str(); }

kf_status job_get_string(const kf_job* job, const char* key, const char** out, size_t* len) {
  auto& strings = job_of(job).strings;
  auto it = strings.find(key);
  if (it == strings.end()) return KF_NOT_FOUND;
  *out = it->second.data();
  *len = it->second.size();
  return KF_OK;
}
kf_status job_set_string(kf_job* job, const char* key, const char* value, size_t len) {
  job_of(job).strings[key] = std::string(value, len);
  return KF_OK;
}
kf_status job_get_number(const kf_job* job, const char* key, double* out) {
  auto& numbers = job_of(job).numbers;
  auto it = numbers.find(key);
  if (it == numbers.end()) return KF_NOT_FOUND;
  *out = it->second;
  return KF_OK;
}
kf_status job_set_number(kf_job* job, const char* key, double value) {
  job_of(job).numbers[key] = value;
  return KF_OK;
}
kf_status job_verdict(kf_job* job, kf_verdict_status status, const char* route,
                      const char* error_class, const char* message) {
  (void)route;
  FakeVerdict& v = job_of(job).verdict;
  if (v.set) return KF_ERROR;  // at most once per call, as the ABI says
  v = {true, status, error_class ? error_class : "", message ? message : ""};
  return KF_OK;
}
kf_status job_metric(kf_job* job, const char* name, double value) {
  job_of(job).metrics.emplace_back(name, value);
  return KF_OK;
}
kf_status job_log_tail(kf_job* job, const char* text, size_t len) {
  job_of(job).log_tail.assign(text, len);
  return KF_OK;
}
double job_seconds_left(const kf_job* job) { return job_of(job).seconds_left; }
int run_cancelled() { return 0; }

const kf_host_api* host_api() {
  static const kf_host_api api = [] {
    kf_host_api a{};
    a.struct_size = sizeof(kf_host_api);
    a.abi_version = KF_ABI_VERSION;
    a.log = host_log;
    a.config_string = config_string;
    a.config_int = config_int;
    a.config_float = config_float;
    a.config_bool = config_bool;
    a.config_list_size = config_list_size;
    a.config_list_item = config_list_item;
    a.config_json = config_json;
    a.config_base_dir = config_base_dir;
    a.job_get_string = job_get_string;
    a.job_set_string = job_set_string;
    a.job_get_number = job_get_number;
    a.job_set_number = job_set_number;
    a.job_verdict = job_verdict;
    a.job_metric = job_metric;
    a.job_log_tail = job_log_tail;
    a.job_seconds_left = job_seconds_left;
    a.run_cancelled = run_cancelled;
    return a;
  }();
  return &api;
}

}  // namespace

double FakeJob::metric(const std::string& name) const {
  for (const auto& [n, v] : metrics) {
    if (n == name) return v;
  }
  return std::nan("");
}

std::vector<std::string> fake_host_logs() {
  std::lock_guard lock(g_log_mutex);
  return g_logs;
}

const kf_plugin_descriptor* plugin_descriptor() {
  static const kf_plugin_descriptor* descriptor = [] {
    void* library = dlopen(KFORGE_LLM_PLUGIN_FILE, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
    auto entry = reinterpret_cast<kf_plugin_entry_fn>(dlsym(library, KF_PLUGIN_ENTRY_SYMBOL));
    if (entry == nullptr) throw std::runtime_error("no " KF_PLUGIN_ENTRY_SYMBOL " in the plugin");
    return entry();  // never dlclosed: stage objects may outlive any test
  }();
  return descriptor;
}

const kf_stage_kind* stage_kind(const std::string& name) {
  const kf_plugin_descriptor* d = plugin_descriptor();
  for (uint32_t i = 0; i < d->stage_count; ++i) {
    if (name == d->stages[i]->name) return d->stages[i];
  }
  throw std::runtime_error("the plugin has no stage kind " + name);
}

StageUnderTest::StageUnderTest(const std::string& kind, const nlohmann::json& params,
                               const std::string& base_dir)
    : kind_(stage_kind(kind)) {
  config_.base_dir = base_dir;
  for (const auto& [name, value] : params.items()) {
    bool known = false;
    for (uint32_t i = 0; i < kind_->param_count; ++i) known |= name == kind_->params[i].name;
    if (!known) throw std::runtime_error("unknown parameter " + name + " for " + kind);
  }
  for (uint32_t i = 0; i < kind_->param_count; ++i) {
    const kf_param_spec& spec = kind_->params[i];
    nlohmann::json value;
    if (params.contains(spec.name)) {
      value = params[spec.name];
      if (!type_fits(spec.type, value)) throw std::runtime_error(std::string("wrong type for ") + spec.name);
    } else if (spec.required) {
      throw std::runtime_error(std::string("missing required parameter ") + spec.name);
    } else if (spec.default_value != nullptr) {
      value = default_value(spec);
    } else {
      continue;
    }
    config_.json_text[spec.name] = value.dump();
    config_.values[spec.name] = std::move(value);
  }
  char error[1024] = {0};
  if (kind_->create(host_api(), reinterpret_cast<const kf_config*>(&config_), &instance_, error,
                    sizeof error) != KF_OK) {
    instance_ = nullptr;
    create_error_ = error;
  }
}

StageUnderTest::~StageUnderTest() {
  if (instance_ != nullptr) kind_->destroy(instance_);
}

std::string StageUnderTest::process(FakeJob& job) {
  char error[1024] = {0};
  if (kind_->process(instance_, reinterpret_cast<kf_job*>(&job), error, sizeof error) != KF_OK) {
    return error[0] != '\0' ? error : "process failed without a message";
  }
  return {};
}

}  // namespace kforge::llm::testing
