#include "engine/host.hpp"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <limits>
#include <mutex>

#include "engine/plan.hpp"

namespace kforge {
namespace {

// The token of the run whose stage or source call is on this thread (CurrentRun).
thread_local const CancelToken* t_current_run = nullptr;

const StageConfig* as_config(const kf_config* cfg) { return reinterpret_cast<const StageConfig*>(cfg); }
JobCall* as_call(kf_job* job) { return reinterpret_cast<JobCall*>(job); }
const JobCall* as_call(const kf_job* job) { return reinterpret_cast<const JobCall*>(job); }
Task* as_task(kf_task* task) { return reinterpret_cast<Task*>(task); }

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::mutex g_log_listener_mutex;
PluginLogListener g_log_listener;

void log(kf_log_level level, const char* plugin, const char* message) {
  static const spdlog::level::level_enum kLevels[] = {spdlog::level::trace, spdlog::level::debug,
                                                      spdlog::level::info, spdlog::level::warn,
                                                      spdlog::level::err};
  const kf_log_level clamped = static_cast<kf_log_level>(std::clamp(static_cast<int>(level), 0, 4));
  const char* name = plugin ? plugin : "plugin";
  const char* text = message ? message : "";
  spdlog::log(kLevels[clamped], "[{}] {}", name, text);
  std::lock_guard lock(g_log_listener_mutex);
  if (g_log_listener) g_log_listener(clamped, name, text);
}

const ParamValue* find_param(const kf_config* cfg, const char* name) {
  if (cfg == nullptr || name == nullptr) return nullptr;
  const auto& values = as_config(cfg)->values;
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

kf_status config_string(const kf_config* cfg, const char* name, const char** out, size_t* len) {
  const ParamValue* v = find_param(cfg, name);
  if (v == nullptr) return KF_NOT_FOUND;
  if (v->type == KF_PARAM_STRING_LIST || v->type == KF_PARAM_OBJECT) return KF_INVALID_ARGUMENT;
  *out = v->text.data();
  *len = v->text.size();
  return KF_OK;
}

kf_status config_int(const kf_config* cfg, const char* name, int64_t* out) {
  const ParamValue* v = find_param(cfg, name);
  if (v == nullptr) return KF_NOT_FOUND;
  if (v->type != KF_PARAM_INT) return KF_INVALID_ARGUMENT;
  *out = v->integer;
  return KF_OK;
}

kf_status config_float(const kf_config* cfg, const char* name, double* out) {
  const ParamValue* v = find_param(cfg, name);
  if (v == nullptr) return KF_NOT_FOUND;
  if (v->type != KF_PARAM_FLOAT && v->type != KF_PARAM_INT && v->type != KF_PARAM_DURATION) {
    return KF_INVALID_ARGUMENT;
  }
  *out = v->number;
  return KF_OK;
}

kf_status config_bool(const kf_config* cfg, const char* name, int* out) {
  const ParamValue* v = find_param(cfg, name);
  if (v == nullptr) return KF_NOT_FOUND;
  if (v->type != KF_PARAM_BOOL) return KF_INVALID_ARGUMENT;
  *out = v->boolean ? 1 : 0;
  return KF_OK;
}

kf_status config_list_size(const kf_config* cfg, const char* name, size_t* out) {
  const ParamValue* v = find_param(cfg, name);
  if (v == nullptr) return KF_NOT_FOUND;
  if (v->type != KF_PARAM_STRING_LIST) return KF_INVALID_ARGUMENT;
  *out = v->items.size();
  return KF_OK;
}

kf_status config_list_item(const kf_config* cfg, const char* name, size_t index, const char** out,
                           size_t* len) {
  const ParamValue* v = find_param(cfg, name);
  if (v == nullptr) return KF_NOT_FOUND;
  if (v->type != KF_PARAM_STRING_LIST || index >= v->items.size()) return KF_INVALID_ARGUMENT;
  *out = v->items[index].data();
  *len = v->items[index].size();
  return KF_OK;
}

kf_status config_json(const kf_config* cfg, const char* name, const char** out, size_t* len) {
  const ParamValue* v = find_param(cfg, name);
  if (v == nullptr) return KF_NOT_FOUND;
  *out = v->json.data();
  *len = v->json.size();
  return KF_OK;
}

const char* config_base_dir(const kf_config* cfg) {
  return cfg == nullptr ? "." : as_config(cfg)->base_dir.c_str();
}

kf_status job_get_string(const kf_job* job, const char* key, const char** out, size_t* len) {
  if (job == nullptr || key == nullptr) return KF_INVALID_ARGUMENT;
  const std::string* value = as_call(job)->job->find_string(key);
  if (value == nullptr) return KF_NOT_FOUND;
  *out = value->data();
  *len = value->size();
  return KF_OK;
}

bool read_only(const std::string& key) {
  return key.starts_with("task.") || key.starts_with("last.") || key == KF_KEY_CANDIDATE_SAMPLE ||
         key == KF_KEY_CANDIDATE_ROUND;
}

kf_status job_set_string(kf_job* job, const char* key, const char* value, size_t len) {
  if (job == nullptr || key == nullptr || (value == nullptr && len > 0)) return KF_INVALID_ARGUMENT;
  JobCall* call = as_call(job);
  if (read_only(key)) {
    call->problem = std::string("plugin tried to set read-only key '") + key + "'";
    return KF_INVALID_ARGUMENT;
  }
  call->job->strings[key].assign(value == nullptr ? "" : value, len);
  call->written_strings.emplace_back(key);
  return KF_OK;
}

kf_status job_get_number(const kf_job* job, const char* key, double* out) {
  if (job == nullptr || key == nullptr) return KF_INVALID_ARGUMENT;
  auto value = as_call(job)->job->find_number(key);
  if (!value) return KF_NOT_FOUND;
  *out = *value;
  return KF_OK;
}

kf_status job_set_number(kf_job* job, const char* key, double value) {
  if (job == nullptr || key == nullptr) return KF_INVALID_ARGUMENT;
  JobCall* call = as_call(job);
  if (read_only(key)) {
    call->problem = std::string("plugin tried to set read-only key '") + key + "'";
    return KF_INVALID_ARGUMENT;
  }
  call->job->numbers[key] = value;
  call->written_numbers.emplace_back(key);
  return KF_OK;
}

kf_status job_verdict(kf_job* job, kf_verdict_status status, const char* route,
                      const char* error_class, const char* message) {
  if (job == nullptr) return KF_INVALID_ARGUMENT;
  JobCall* call = as_call(job);
  Verdict& v = *call->verdict;
  if (status != KF_VERDICT_PASS && status != KF_VERDICT_FAIL && status != KF_VERDICT_ERROR) {
    call->problem = "plugin gave a verdict with an unknown status " + std::to_string(status);
    return KF_INVALID_ARGUMENT;
  }
  if (route != nullptr && *route != '\0') {
    const auto& routes = *call->routes;
    if (std::find(routes.begin(), routes.end(), route) == routes.end()) {
      call->problem = std::string("plugin chose route '") + route +
                      "', which its stage kind does not declare";
      return KF_INVALID_ARGUMENT;
    }
    v.route = route;
  } else {
    v.route.clear();
  }
  call->verdict_given = true;
  v.status = static_cast<VerdictStatus>(status);
  v.error_class = error_class ? error_class : "";
  v.message = message ? message : "";
  return KF_OK;
}

kf_status job_metric(kf_job* job, const char* name, double value) {
  if (job == nullptr || name == nullptr) return KF_INVALID_ARGUMENT;
  auto& metrics = as_call(job)->verdict->metrics;
  for (auto& [key, old] : metrics) {
    if (key == name) {
      old = value;
      return KF_OK;
    }
  }
  metrics.emplace_back(name, value);
  return KF_OK;
}

kf_status job_log_tail(kf_job* job, const char* text, size_t len) {
  if (job == nullptr || (text == nullptr && len > 0)) return KF_INVALID_ARGUMENT;
  as_call(job)->verdict->log_tail.assign(text == nullptr ? "" : text, len);
  return KF_OK;
}

double job_seconds_left(const kf_job* job) {
  if (job == nullptr) return 0;
  const double deadline = as_call(job)->job->deadline;
  if (deadline <= 0) return std::numeric_limits<double>::infinity();
  return std::max(0.0, deadline - steady_seconds());
}

int run_cancelled() { return CurrentRun::cancelled() ? 1 : 0; }

int job_cancelled(const kf_job* job) {
  if (job == nullptr) return 0;
  const CancelToken* cancel = as_call(job)->cancel;
  return cancel != nullptr && cancel->requested() ? 1 : 0;
}

kf_status job_run_seed(const kf_job* job, uint64_t* seed) {
  if (job == nullptr || seed == nullptr) return KF_INVALID_ARGUMENT;
  const auto& run_seed = as_call(job)->run_seed;
  if (!run_seed) return KF_NOT_FOUND;
  *seed = *run_seed;
  return KF_OK;
}

kf_status job_measured(kf_job* job) {
  if (job == nullptr) return KF_INVALID_ARGUMENT;
  as_call(job)->verdict->measured = true;
  return KF_OK;
}

kf_status task_set_string(kf_task* task, const char* key, const char* value, size_t len) {
  if (task == nullptr || key == nullptr || (value == nullptr && len > 0)) return KF_INVALID_ARGUMENT;
  if (!std::string_view(key).starts_with("task.")) return KF_INVALID_ARGUMENT;
  as_task(task)->strings[key].assign(value == nullptr ? "" : value, len);
  return KF_OK;
}

kf_status task_set_number(kf_task* task, const char* key, double value) {
  if (task == nullptr || key == nullptr) return KF_INVALID_ARGUMENT;
  if (!std::string_view(key).starts_with("task.")) return KF_INVALID_ARGUMENT;
  as_task(task)->numbers[key] = value;
  return KF_OK;
}

kf_status export_write(kf_export_output* out, const char* name, const char* data, size_t len) {
  if (out == nullptr || name == nullptr || (data == nullptr && len > 0)) return KF_INVALID_ARGUMENT;
  const std::string_view file(name);
  // A plain file name: the export stays inside the directory the user chose.
  if (file.empty() || file == "." || file == ".." || file.find_first_of("/\\") != std::string_view::npos) {
    return KF_INVALID_ARGUMENT;
  }
  try {
    reinterpret_cast<ExportOutput*>(out)->write(std::string(file), std::string_view(data == nullptr ? "" : data, len));
    return KF_OK;
  } catch (const std::exception& e) {
    spdlog::error("cannot write export file '{}': {}", file, e.what());
    return KF_ERROR;
  }
}

kf_status report_table(kf_report_output* out, const char* title, const char* note, const char* const* columns,
                       uint32_t column_count, const char* data_json, size_t data_len) {
  if (out == nullptr || title == nullptr || *title == '\0' || columns == nullptr || column_count == 0) {
    return KF_INVALID_ARGUMENT;
  }
  ReportOutput::Table table{title, note == nullptr ? "" : note, {}, {}, {}};
  for (uint32_t i = 0; i < column_count; ++i) {
    if (columns[i] == nullptr) return KF_INVALID_ARGUMENT;
    table.columns.emplace_back(columns[i]);
  }
  if (data_json != nullptr && data_len > 0) {
    table.data_json.assign(data_json, data_len);
    if (!nlohmann::json::accept(table.data_json)) return KF_INVALID_ARGUMENT;
  }
  reinterpret_cast<ReportOutput*>(out)->tables.push_back(std::move(table));
  return KF_OK;
}

kf_status report_row(kf_report_output* out, const char* const* cells, uint32_t cell_count) {
  if (out == nullptr || cells == nullptr) return KF_INVALID_ARGUMENT;
  auto& tables = reinterpret_cast<ReportOutput*>(out)->tables;
  if (tables.empty() || cell_count != tables.back().columns.size()) return KF_INVALID_ARGUMENT;
  std::vector<std::string> row;
  for (uint32_t i = 0; i < cell_count; ++i) row.emplace_back(cells[i] == nullptr ? "" : cells[i]);
  tables.back().rows.push_back(std::move(row));
  return KF_OK;
}

const kf_host_api kHostApi = {
    sizeof(kf_host_api), KF_ABI_VERSION,  log,
    config_string,       config_int,      config_float,
    config_bool,         config_list_size, config_list_item,
    config_json,         config_base_dir, job_get_string,
    job_set_string,      job_get_number,  job_set_number,
    job_verdict,         job_metric,      job_log_tail,
    job_seconds_left,    run_cancelled,   task_set_string,
    task_set_number,     job_cancelled,   job_run_seed,
    job_measured,        export_write,    report_table,
    report_row,
};

}  // namespace

const kf_host_api* host_api() { return &kHostApi; }

void set_plugin_log_listener(PluginLogListener listener) {
  std::lock_guard lock(g_log_listener_mutex);
  g_log_listener = std::move(listener);
}

CurrentRun::CurrentRun(const CancelToken& token) : previous_(t_current_run) { t_current_run = &token; }
CurrentRun::~CurrentRun() { t_current_run = previous_; }
bool CurrentRun::cancelled() { return t_current_run != nullptr && t_current_run->requested(); }

}  // namespace kforge
