// A plugin built against a newer header than the host's: every table it hands over is
// longer than the host knows (fields appended after the host was built). The host must read
// the fields it knows and leave the rest alone.
#include <kforge/abi.h>

#include <string>

#include "counted_tasks.hpp"

namespace {

// Today's tables with what a later version might append.
struct FutureStageKind {
  kf_stage_kind today;
  double appended_number;
  kf_status (*appended_function)(void*);
};
struct FutureSourceKind {
  kf_source_kind today;
  const char* appended_text;
};
struct FutureReportSectionKind {
  kf_report_section_kind today;
  const char* appended_text;
};
struct FutureDescriptor {
  kf_plugin_descriptor today;
  uint64_t appended_flags;
};
struct FutureConstraints {
  kf_param_constraints today;
  const char* appended_pattern;
};

const kf_host_api* g_host = nullptr;
int g_instance = 0;

kf_status create(const kf_host_api* host, const kf_config* cfg, void** instance, char* err, size_t err_size) {
  g_host = host;
  int64_t factor = 0;
  if (host->config_int(cfg, "factor", &factor) != KF_OK) {
    if (err_size > 0) err[0] = '\0';
    return KF_ERROR;
  }
  g_instance = static_cast<int>(factor);
  *instance = &g_instance;
  return KF_OK;
}
void destroy(void*) {}
kf_status never(void*) { return KF_ERROR; }

// Runs as a run stage, with the host functions of today.
kf_status process(void* instance, kf_job* job, char*, size_t) {
  g_host->job_metric(job, KF_METRIC_SPEEDUP, *static_cast<int*>(instance));
  if (g_host->job_cancelled(job) != 0) return KF_CANCELLED;
  return g_host->job_verdict(job, KF_VERDICT_PASS, nullptr, nullptr, nullptr);
}

kf_status count(void*, uint64_t* tasks) {
  *tasks = 2;
  return KF_OK;
}

const kf_param_spec kParams[] = {{"factor", KF_PARAM_INT, "3", 0, "The speedup to report."}};
const FutureConstraints kFactorRange = {{sizeof(FutureConstraints), nullptr, 0, KF_RANGE_MIN, 1, 0}, "[0-9]+"};
const kf_param_constraints* const kConstraints[] = {&kFactorRange.today};

const FutureStageKind kStage = {{sizeof(FutureStageKind), "long.run", "A stage from a newer header.", kParams, 1,
                                 nullptr, 0, 0, create, process, destroy, KF_ROLE_RUN, kConstraints, nullptr},
                                42.0,
                                never};
const FutureSourceKind kSource = {{sizeof(FutureSourceKind), "long.tasks", "Two tasks new-0, new-1.", nullptr, 0,
                                   counted_tasks::create, counted_tasks::next, counted_tasks::destroy, count, nullptr},
                                  "appended"};
const kf_stage_kind* const kStages[] = {&kStage.today};
const kf_source_kind* const kSources[] = {&kSource.today};

// A report section written against today's host functions: one table, a row per task.
int g_tasks = 0;
kf_status section_create(const kf_host_api* host, void** instance, char*, size_t) {
  g_host = host;
  g_tasks = 0;
  *instance = &g_tasks;
  return KF_OK;
}
kf_status section_task(void* instance, const char*, size_t, char*, size_t) {
  ++*static_cast<int*>(instance);
  return KF_OK;
}
kf_status section_finish(void* instance, kf_report_output* out, char*, size_t) {
  const char* columns[] = {"Tasks"};
  const std::string count = std::to_string(*static_cast<int*>(instance));
  const char* cells[] = {count.c_str()};
  if (g_host->report_table(out, "Long tasks", nullptr, columns, 1, "[1]", 3) != KF_OK) return KF_ERROR;
  return g_host->report_row(out, cells, 1);
}
const char* const kSectionFormats[] = {"long-format"};
const FutureReportSectionKind kSection = {{sizeof(FutureReportSectionKind), "long.section", "A table from a newer header.",
                                           kSectionFormats, 1, section_create, section_task, section_finish, destroy},
                                          "appended"};
const kf_report_section_kind* const kSections[] = {&kSection.today};

}  // namespace

extern "C" KF_EXPORT const kf_plugin_descriptor* kforge_plugin_entry(void) {
  counted_tasks::state.prefix = "new";
  counted_tasks::state.total = 2;
  static const FutureDescriptor descriptor = {
      {KF_ABI_VERSION, sizeof(FutureDescriptor), "long", "9.1.0", kStages, 1, kSources, 1, nullptr, 0, kSections, 1},
      0xffu};
  return &descriptor.today;
}
