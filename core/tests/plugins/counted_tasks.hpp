// Tasks PREFIX-0 .. PREFIX-(total-1), written against the C ABI by hand: the task source of
// the test plugins that stand for other versions of the ABI's tables. Each plugin sets
// `counted_tasks::state`'s prefix and total before it hands out its descriptor.
#pragma once

#include <kforge/abi.h>

#include <string>

namespace counted_tasks {

struct State {
  const char* prefix = "task";
  int total = 0;
  const kf_host_api* host = nullptr;
  int next = 0;
};
inline State state;

inline kf_status create(const kf_host_api* host, const kf_config*, void** instance, char*, size_t) {
  state.host = host;
  state.next = 0;
  *instance = &state;
  return KF_OK;
}

inline kf_status next(void* instance, kf_task* task, int* has_task, char*, size_t) {
  auto* s = static_cast<State*>(instance);
  *has_task = s->next < s->total ? 1 : 0;
  if (*has_task) {
    const std::string id = std::string(s->prefix) + "-" + std::to_string(s->next++);
    s->host->task_set_string(task, KF_KEY_TASK_ID, id.data(), id.size());
  }
  return KF_OK;
}

inline void destroy(void*) {}

}  // namespace counted_tasks
