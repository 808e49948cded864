// The job data model: one candidate of one task, with the verdict of every stage it
// passed through. Behind the opaque kf_job of the ABI.
#pragma once

#include "api.hpp"

#include <kforge/abi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kforge {

// A task as a source emitted it. Shared (read-only) by its k candidates.
struct KFORGE_API Task {
  uint64_t index = 0;  // position in the source's order, from 0
  std::map<std::string, std::string> strings;  // task.id, task.name, task.path, ...
  std::map<std::string, double> numbers;       // task.level, ...

  std::string id() const;
};

enum class VerdictStatus { Pass = KF_VERDICT_PASS, Fail = KF_VERDICT_FAIL, Error = KF_VERDICT_ERROR };
const char* to_string(VerdictStatus status);
// The inverse of to_string; anything but "pass" and "fail" reads as Error.
KFORGE_API VerdictStatus parse_status(const std::string& text);
// Whether a verdict's error class names a fault that is not the candidate's (KF_ERROR_HARNESS,
// KF_ERROR_HOST, KF_ERROR_TASK, and the host's own KF_ERROR_PLUGIN, KF_ERROR_STAGE_TIMEOUT).
bool blames_no_candidate(const std::string& error_class);
// "generate", "check", "compile", "run", "fix", "other".
KFORGE_API const char* to_string(kf_stage_role role);

// What one stage said about one job, once per visit.
struct Verdict {
  std::string stage;  // stage id in the pipeline
  std::string kind;   // stage kind
  kf_stage_role role = KF_ROLE_OTHER;  // what the kind does: what reports read
  VerdictStatus status = VerdictStatus::Pass;
  std::string route;  // named route chosen by the stage, empty for the status' default
  std::string error_class;
  std::string message;
  std::string log_tail;
  std::vector<std::pair<std::string, double>> metrics;
  int round = 0;          // the job's fix round when the stage ran
  double seconds = 0;     // wall time of the stage call
  bool measured = false;  // the verdict includes measurements (job_measured)
  bool cached = false;    // answered from the verdict cache, not by calling the stage
};

struct Job {
  uint64_t index = 0;     // task.index * k + sample
  std::shared_ptr<const Task> task;
  int sample = 0;
  int round = 0;
  std::map<std::string, std::string> strings;  // candidate.* and free attributes
  std::map<std::string, double> numbers;
  std::vector<Verdict> verdicts;
  std::vector<int> edge_uses;  // per bounded edge: times taken
  double deadline = 0;         // steady-clock seconds; 0 when the current stage has none
  bool cut_short = false;      // cancellation stopped it before it finished

  const Verdict* last() const { return verdicts.empty() ? nullptr : &verdicts.back(); }
  // Final status: that of the last verdict (a job with no stage at all passes).
  VerdictStatus final_status() const;

  // Lookups by ABI key (KF_KEY_* or a free attribute). The pointer stays valid while the
  // job is not modified; nullptr when the job has no such key.
  const std::string* find_string(const std::string& key) const;
  std::optional<double> find_number(const std::string& key) const;
};

using JobPtr = std::shared_ptr<Job>;

}  // namespace kforge
