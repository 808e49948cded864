#include "fake_host.hpp"

#include <dlfcn.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <stdexcept>

namespace kforge::eval::testing {
namespace {

using nlohmann::json;

FakeConfig* as_config(const kf_config* cfg) { return reinterpret_cast<FakeConfig*>(const_cast<kf_config*>(cfg)); }
FakeJob* as_job(const kf_job* job) { return reinterpret_cast<FakeJob*>(const_cast<kf_job*>(job)); }
FakeTask* as_task(kf_task* task) { return reinterpret_cast<FakeTask*>(task); }

json yaml_to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(yaml_to_json(item));
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& item : node) out[item.first.as<std::string>()] = yaml_to_json(item.second);
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string text = node.Scalar();
      if (node.Tag() == "!") return text;  // quoted
      if (text == "true" || text == "false") return text == "true";
      try {
        size_t used = 0;
        const long long integer = std::stoll(text, &used);
        if (used == text.size()) return integer;
        const double number = std::stod(text, &used);
        if (used == text.size()) return number;
      } catch (const std::exception&) {
      }
      return text;
    }
    default:
      return nullptr;
  }
}

void log(kf_log_level, const char*, const char*) {}

kf_status config_string(const kf_config* cfg, const char* name, const char** out, size_t* len) {
  auto& texts = as_config(cfg)->texts;
  auto it = texts.find(name);
  if (it == texts.end()) return KF_NOT_FOUND;
  *out = it->second.data();
  *len = it->second.size();
  return KF_OK;
}

const json* value_of(const kf_config* cfg, const char* name) {
  auto& values = as_config(cfg)->values;
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

kf_status config_int(const kf_config* cfg, const char* name, int64_t* out) {
  const json* v = value_of(cfg, name);
  if (v == nullptr || !v->is_number_integer()) return v == nullptr ? KF_NOT_FOUND : KF_INVALID_ARGUMENT;
  *out = v->get<int64_t>();
  return KF_OK;
}

kf_status config_float(const kf_config* cfg, const char* name, double* out) {
  const json* v = value_of(cfg, name);
  if (v == nullptr || !v->is_number()) return v == nullptr ? KF_NOT_FOUND : KF_INVALID_ARGUMENT;
  *out = v->get<double>();
  return KF_OK;
}

kf_status config_bool(const kf_config* cfg, const char* name, int* out) {
  const json* v = value_of(cfg, name);
  if (v == nullptr || !v->is_boolean()) return v == nullptr ? KF_NOT_FOUND : KF_INVALID_ARGUMENT;
  *out = v->get<bool>() ? 1 : 0;
  return KF_OK;
}

kf_status config_list_size(const kf_config* cfg, const char* name, size_t* out) {
  auto& lists = as_config(cfg)->lists;
  auto it = lists.find(name);
  if (it == lists.end()) return KF_NOT_FOUND;
  *out = it->second.size();
  return KF_OK;
}

kf_status config_list_item(const kf_config* cfg, const char* name, size_t index, const char** out, size_t* len) {
  auto& lists = as_config(cfg)->lists;
  auto it = lists.find(name);
  if (it == lists.end() || index >= it->second.size()) return KF_NOT_FOUND;
  *out = it->second[index].data();
  *len = it->second[index].size();
  return KF_OK;
}

kf_status config_json(const kf_config* cfg, const char* name, const char** out, size_t* len) {
  // The JSON text of every value is kept beside the scalar text, under a prefixed key.
  auto& texts = as_config(cfg)->texts;
  auto it = texts.find(std::string("\x01json:") + name);
  if (it == texts.end()) return KF_NOT_FOUND;
  *out = it->second.data();
  *len = it->second.size();
  return KF_OK;
}

const char* config_base_dir(const kf_config* cfg) { return as_config(cfg)->base_dir.c_str(); }

kf_status job_get_string(const kf_job* job, const char* key, const char** out, size_t* len) {
  auto& strings = as_job(job)->strings;
  auto it = strings.find(key);
  if (it == strings.end()) return KF_NOT_FOUND;
  *out = it->second.data();
  *len = it->second.size();
  return KF_OK;
}

kf_status job_set_string(kf_job* job, const char* key, const char* value, size_t len) {
  const std::string name = key;
  if (name.rfind("task.", 0) == 0 || name.rfind("last.", 0) == 0) return KF_INVALID_ARGUMENT;
  as_job(job)->strings[name].assign(value, len);
  return KF_OK;
}

kf_status job_get_number(const kf_job* job, const char* key, double* out) {
  auto& numbers = as_job(job)->numbers;
  auto it = numbers.find(key);
  if (it == numbers.end()) return KF_NOT_FOUND;
  *out = it->second;
  return KF_OK;
}

kf_status job_set_number(kf_job* job, const char* key, double value) {
  const std::string name = key;
  if (name.rfind("task.", 0) == 0 || name.rfind("last.", 0) == 0 || name == KF_KEY_CANDIDATE_SAMPLE) {
    return KF_INVALID_ARGUMENT;
  }
  as_job(job)->numbers[name] = value;
  return KF_OK;
}

kf_status job_verdict(kf_job* job, kf_verdict_status status, const char*, const char* error_class, const char* message) {
  FakeJob* j = as_job(job);
  j->verdict_set = true;
  j->status = status;
  j->error_class = error_class ? error_class : "";
  j->message = message ? message : "";
  return KF_OK;
}

kf_status job_metric(kf_job* job, const char* name, double value) {
  as_job(job)->metrics.emplace_back(name, value);
  return KF_OK;
}

kf_status job_log_tail(kf_job* job, const char* text, size_t len) {
  as_job(job)->log_tail.assign(text, len);
  return KF_OK;
}

double job_seconds_left(const kf_job* job) { return as_job(job)->seconds_left; }
int run_cancelled() { return 0; }

kf_status task_set_string(kf_task* task, const char* key, const char* value, size_t len) {
  if (std::string(key).rfind("task.", 0) != 0) return KF_INVALID_ARGUMENT;
  as_task(task)->strings[key].assign(value, len);
  return KF_OK;
}

kf_status task_set_number(kf_task* task, const char* key, double value) {
  if (std::string(key).rfind("task.", 0) != 0) return KF_INVALID_ARGUMENT;
  as_task(task)->numbers[key] = value;
  return KF_OK;
}

const kf_host_api kHost = {sizeof(kf_host_api), KF_ABI_VERSION, log, config_string, config_int, config_float,
                           config_bool, config_list_size, config_list_item, config_json, config_base_dir,
                           job_get_string, job_set_string, job_get_number, job_set_number, job_verdict,
                           job_metric, job_log_tail, job_seconds_left, run_cancelled, task_set_string,
                           task_set_number};

}  // namespace

double FakeJob::metric(const std::string& name) const {
  for (const auto& [key, value] : metrics) {
    if (key == name) return value;
  }
  return std::nan("");
}

void FakeJob::next_stage() {
  verdict_set = false;
  status = KF_VERDICT_PASS;
  error_class.clear();
  message.clear();
  log_tail.clear();
  metrics.clear();
}

const kf_host_api* fake_host() { return &kHost; }

const kf_plugin_descriptor* eval_plugin() {
  static const kf_plugin_descriptor* descriptor = [] {
    void* handle = ::dlopen(KFORGE_EVAL_PLUGIN_FILE, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) throw std::runtime_error(std::string("cannot load the plugin: ") + ::dlerror());
    auto entry = reinterpret_cast<kf_plugin_entry_fn>(::dlsym(handle, KF_PLUGIN_ENTRY_SYMBOL));
    if (entry == nullptr) throw std::runtime_error("the plugin has no entry symbol");
    return entry();  // never dlclosed, as the runtime does
  }();
  return descriptor;
}

const kf_stage_kind* find_stage_kind(const std::string& name) {
  const kf_plugin_descriptor* plugin = eval_plugin();
  for (uint32_t i = 0; i < plugin->stage_count; ++i) {
    if (name == plugin->stages[i]->name) return plugin->stages[i];
  }
  throw std::invalid_argument("the plugin has no stage kind " + name);
}

const kf_source_kind* find_source_kind(const std::string& name) {
  const kf_plugin_descriptor* plugin = eval_plugin();
  for (uint32_t i = 0; i < plugin->source_count; ++i) {
    if (name == plugin->sources[i]->name) return plugin->sources[i];
  }
  throw std::invalid_argument("the plugin has no source kind " + name);
}

FakeConfig make_config(const kf_param_spec* specs, uint32_t count, const json& given, const std::string& base_dir) {
  FakeConfig config;
  config.base_dir = base_dir;
  for (const auto& [key, value] : given.items()) {
    bool declared = false;
    for (uint32_t i = 0; i < count; ++i) declared = declared || key == specs[i].name;
    if (!declared) throw std::invalid_argument("parameter " + key + " is not in the schema");
  }
  for (uint32_t i = 0; i < count; ++i) {
    const kf_param_spec& spec = specs[i];
    json value;
    if (given.contains(spec.name)) {
      value = given[spec.name];
    } else if (spec.default_value != nullptr) {
      value = yaml_to_json(YAML::Load(spec.default_value));
      if (spec.type == KF_PARAM_STRING && !value.is_string()) value = std::string(spec.default_value);
      if (spec.type == KF_PARAM_FLOAT && value.is_number_integer()) value = value.get<double>();
    } else {
      continue;  // optional, no default: absent
    }
    if (spec.type == KF_PARAM_FLOAT && value.is_number_integer()) value = value.get<double>();
    config.values[spec.name] = value;
    config.texts[spec.name] = value.is_string() ? value.get<std::string>() : value.dump();
    config.texts[std::string("\x01json:") + spec.name] = value.dump();
    if (value.is_array()) {
      auto& items = config.lists[spec.name];
      for (const json& item : value) items.push_back(item.is_string() ? item.get<std::string>() : item.dump());
    }
  }
  return config;
}

StageUnderTest::StageUnderTest(const std::string& kind, const json& params, const std::string& base_dir)
    : kind_(find_stage_kind(kind)), config_(make_config(kind_->params, kind_->param_count, params, base_dir)) {
  char err[4096] = {0};
  if (kind_->create(fake_host(), reinterpret_cast<const kf_config*>(&config_), &instance_, err, sizeof err) != KF_OK) {
    instance_ = nullptr;
    create_error_ = err;
  }
}

StageUnderTest::~StageUnderTest() {
  if (instance_ != nullptr) kind_->destroy(instance_);
}

std::string StageUnderTest::process(FakeJob& job) {
  if (instance_ == nullptr) throw std::logic_error("stage not created: " + create_error_);
  char err[4096] = {0};
  if (kind_->process(instance_, reinterpret_cast<kf_job*>(&job), err, sizeof err) != KF_OK) return err;
  return {};
}

SourceUnderTest::SourceUnderTest(const std::string& kind, const json& params, const std::string& base_dir)
    : kind_(find_source_kind(kind)), config_(make_config(kind_->params, kind_->param_count, params, base_dir)) {
  char err[4096] = {0};
  if (kind_->create(fake_host(), reinterpret_cast<const kf_config*>(&config_), &instance_, err, sizeof err) != KF_OK) {
    instance_ = nullptr;
    create_error_ = err;
  }
}

SourceUnderTest::~SourceUnderTest() {
  if (instance_ != nullptr) kind_->destroy(instance_);
}

std::vector<FakeTask> SourceUnderTest::drain() {
  if (instance_ == nullptr) throw std::logic_error("source not created: " + create_error_);
  std::vector<FakeTask> tasks;
  while (true) {
    FakeTask task;
    int has_task = 0;
    char err[4096] = {0};
    if (kind_->next(instance_, reinterpret_cast<kf_task*>(&task), &has_task, err, sizeof err) != KF_OK) {
      throw std::runtime_error(err);
    }
    if (has_task == 0) return tasks;
    tasks.push_back(std::move(task));
  }
}

int64_t SourceUnderTest::count() {
  uint64_t total = 0;
  if (kind_->count == nullptr || kind_->count(instance_, &total) != KF_OK) return -1;
  return static_cast<int64_t>(total);
}

}  // namespace kforge::eval::testing
