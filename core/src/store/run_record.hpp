// What the store keeps about one `kforge run` invocation, and the resolved configuration
// whose hash decides whether --resume may continue a run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/plan.hpp"

namespace kforge {

enum class RunStatus { Running, Finished, Interrupted, Failed };
const char* to_string(RunStatus status);

struct RunRecord {
  int64_t id = 0;
  int64_t series = 0;  // the fresh run this one resumes (its own id when fresh)
  std::string pipeline;
  std::string label;  // the pipeline's label (column `strategy`), else its name
  std::string pipeline_file;
  std::string config;  // pipeline_config_json()
  std::string config_hash;
  std::string kforge_version;
  std::string host;
  std::string devices;
  uint64_t expected_jobs = 0;
  std::string started_at;  // ISO 8601, UTC
  std::string ended_at;
  std::string status;  // to_string(RunStatus)
  // The run's secret seed (kf_host_api::job_run_seed); none in runs of a store older than
  // schema version 2.
  std::optional<uint64_t> secret_seed;
};

// A fresh secret seed from the operating system (getrandom); throws when it has none.
uint64_t draw_secret_seed();

// The resolved pipeline as JSON (what `runs.config` holds; its hash decides whether a run
// may be resumed with this pipeline).
std::string pipeline_config_json(const Plan& plan);

// The devices an environment (NAME=VALUE entries, null-terminated) makes visible: every
// variable named *_VISIBLE_DEVICES, whatever vendor's runtime reads it, as "NAME=VALUE"
// joined by "; " in name order. Which device ran a candidate is each job's
// KF_KEY_CANDIDATE_DEVICE; kforge itself does not probe.
std::string visible_devices(const char* const* environment);

// A RunRecord for `plan`, with the host name and the devices this process's environment
// makes visible.
RunRecord describe_run(const Plan& plan, const std::string& kforge_version);

}  // namespace kforge
