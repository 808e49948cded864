// A plugin built before the ABI's tables grew: its kind and descriptor tables have only the
// fields of ABI version 1's first release (declared here as that header declared them), so
// the host must read nothing past them and fill in the rest (role other, no constraints).
#include <kforge/abi.h>

#include "counted_tasks.hpp"

namespace {

// kf_stage_kind and kf_source_kind as kforge 0.1 declared them.
struct StageKindV1 {
  uint32_t struct_size;
  const char* name;
  const char* doc;
  const kf_param_spec* params;
  uint32_t param_count;
  const char* const* routes;
  uint32_t route_count;
  uint32_t flags;
  kf_status (*create)(const kf_host_api*, const kf_config*, void**, char*, size_t);
  kf_status (*process)(void*, kf_job*, char*, size_t);
  void (*destroy)(void*);
};

struct SourceKindV1 {
  uint32_t struct_size;
  const char* name;
  const char* doc;
  const kf_param_spec* params;
  uint32_t param_count;
  kf_status (*create)(const kf_host_api*, const kf_config*, void**, char*, size_t);
  kf_status (*next)(void*, kf_task*, int*, char*, size_t);
  void (*destroy)(void*);
  kf_status (*count)(void*, uint64_t*);
};

static_assert(sizeof(StageKindV1) == KF_STAGE_KIND_V1_SIZE, "the first release's stage kind table");
static_assert(sizeof(SourceKindV1) == KF_SOURCE_KIND_V1_SIZE, "the first release's source kind table");

const kf_host_api* g_host = nullptr;
int g_instance = 0;

kf_status create(const kf_host_api* host, const kf_config*, void** instance, char*, size_t) {
  g_host = host;
  *instance = &g_instance;
  return KF_OK;
}
void destroy(void*) {}

// Passes, and sets short.seen to the task id it read: the old host functions work.
kf_status process(void*, kf_job* job, char*, size_t) {
  const char* id = nullptr;
  size_t len = 0;
  if (g_host->job_get_string(job, KF_KEY_TASK_ID, &id, &len) != KF_OK) return KF_ERROR;
  g_host->job_set_string(job, "short.seen", id, len);
  return g_host->job_verdict(job, KF_VERDICT_PASS, nullptr, nullptr, nullptr);
}

const StageKindV1 kStage = {sizeof(StageKindV1), "short.pass", "A stage from before the tables grew.", nullptr, 0,
                            nullptr, 0, 0, create, process, destroy};
const SourceKindV1 kSource = {sizeof(SourceKindV1), "short.tasks", "Three tasks old-0..old-2.", nullptr, 0,
                              counted_tasks::create, counted_tasks::next, counted_tasks::destroy, nullptr};
const kf_stage_kind* const kStages[] = {reinterpret_cast<const kf_stage_kind*>(&kStage)};
const kf_source_kind* const kSources[] = {reinterpret_cast<const kf_source_kind*>(&kSource)};

}  // namespace

extern "C" KF_EXPORT const kf_plugin_descriptor* kforge_plugin_entry(void) {
  counted_tasks::state.prefix = "old";
  counted_tasks::state.total = 3;
  static const kf_plugin_descriptor descriptor = {1, KF_PLUGIN_DESCRIPTOR_V1_SIZE, "short", "0.1.0", kStages, 1,
                                                  kSources, 1};
  return &descriptor;
}
