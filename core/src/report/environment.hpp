// The environments that judged a run's jobs (KF_KEY_RUN_ENVIRONMENT: GPU model, driver,
// CUDA, torch, Triton, compilers, host), as reports show them and as `kforge compare` checks
// them: timings from different hardware or software are not comparable.
#pragma once

#include "api.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/outcome.hpp"

namespace kforge {

struct Table;
struct Metrics;

struct EnvironmentUse {
  std::map<std::string, std::string> facts;  // field -> value, as the harness reported them
  uint64_t jobs = 0;                         // finished jobs it judged
};

// The distinct environments of jobs given one at a time, in order of first appearance;
// jobs without one (no run stage judged them, or a store older than schema 3) are not
// counted.
class EnvironmentTally {
 public:
  void add(const JobOutcome& job);
  const std::vector<EnvironmentUse>& uses() const { return uses_; }

 private:
  std::vector<EnvironmentUse> uses_;
  // The last job's environment as text, and its entry: consecutive jobs mostly share one,
  // and are counted without parsing it again.
  std::string last_text_;
  size_t last_use_ = 0;
};

// The same for a list of jobs.
std::vector<EnvironmentUse> environments_of(const std::vector<JobOutcome>& jobs);

// One row per environment; nullopt-like empty rows when there is none.
Table environment_table(const std::vector<EnvironmentUse>& environments);

// The facts of the bundled harness that the Environment table has columns for, in order;
// any other fact a run stage reports gets a column of its own after them.
struct EnvironmentColumn {
  const char* title;
  const char* fact;
};
inline constexpr EnvironmentColumn kEnvironmentColumns[] = {
    {"Device", "device"}, {"GPU", "gpu"},   {"Driver", "driver"}, {"CUDA", "cuda"}, {"torch", "torch"},
    {"Triton", "triton"}, {"nvcc", "nvcc"}, {"C++", "cxx"},       {"CPU", "cpu"},   {"Python", "python"},
    {"Host", "host"},     {"GPU UUID", "gpu_uuid"}};

// Whether a fact's difference makes timings incomparable: every fact (the hardware and the
// software that builds or runs a kernel, whatever a run stage calls them) but where the job
// ran (host, device, gpu_uuid: two identical machines or cards compare fine) and the OS
// string.
bool decides_timing(const std::string& fact);

// One sentence per difference between the first strategy's environments and each other's,
// e.g. "'b' was timed on gpu NVIDIA A100 ..., 'a' on NVIDIA H100 ...", and one per strategy
// that recorded none; empty when all were judged alike.
KFORGE_API std::vector<std::string> environment_mismatches(const std::vector<Metrics>& strategies);

}  // namespace kforge
