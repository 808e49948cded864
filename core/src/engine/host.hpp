// The kf_host_api the runtime hands to every plugin, and the per-call context behind the
// ABI's opaque kf_job pointer.
#pragma once

#include "api.hpp"

#include <kforge/abi.h>

#include <string>
#include <vector>

#include "engine/job.hpp"

namespace kforge {

// What a kf_job* points at during one stage call: the job and the verdict being written.
struct JobCall {
  Job* job = nullptr;
  Verdict* verdict = nullptr;
  const std::vector<std::string>* routes = nullptr;  // named routes the stage may choose
  std::string problem;  // a misuse of the API by the plugin, reported as the job's error
  // Keys the stage wrote, so a cached verdict can replay them.
  std::vector<std::string> written_strings;
  std::vector<std::string> written_numbers;
};

const kf_host_api* host_api();

// The process-wide cancellation flag that run_cancelled() reports to plugins.
KFORGE_API void request_cancel();
KFORGE_API bool cancel_requested();
void reset_cancel();

}  // namespace kforge
