// What the store keeps about one `kforge run` invocation, and the resolved configuration
// whose hash decides whether --resume may continue a run.
#pragma once

#include "api.hpp"

#include <cstdint>
#include <string>

#include "engine/plan.hpp"

namespace kforge {

enum class RunStatus { Running, Finished, Interrupted, Failed };
KFORGE_API const char* to_string(RunStatus status);

struct RunRecord {
  int64_t id = 0;
  int64_t series = 0;  // the fresh run this one resumes (its own id when fresh)
  std::string pipeline;
  std::string strategy;  // the pipeline's `strategy` variable, else its name
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
};

// The resolved pipeline as JSON (what `runs.config` holds; its hash decides whether a run
// may be resumed with this pipeline).
std::string pipeline_config_json(const PipelineSpec& pipeline);

// A RunRecord for `pipeline`, with the host name and the devices the environment names.
KFORGE_API RunRecord describe_run(const PipelineSpec& pipeline, const std::string& kforge_version);

}  // namespace kforge
