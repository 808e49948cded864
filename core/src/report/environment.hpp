// The environments that judged a run's jobs (KF_KEY_RUN_ENVIRONMENT: facts a run stage names
// itself, such as its device's model, its toolchain's versions, the host), as reports show
// them and as `kforge compare` checks them: timings from different hardware or software are
// not comparable.
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
  std::map<std::string, std::string> facts;  // fact -> value, as the run stage reported them
  std::vector<std::string> order;            // the facts in the order the run stage gave them
  // The facts that say where a job ran rather than what ran it: KF_ENV_HOST, _DEVICE, _OS
  // and those the environment listed under KF_ENV_PLACEMENT; in `order`'s order.
  std::vector<std::string> placement;
  uint64_t jobs = 0;  // finished jobs it judged

  bool is_placement(const std::string& fact) const;
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

// One row per environment and a column per fact, titled by its name: the facts that decide
// timings in the order they first appear, then those that say where the jobs ran; no rows
// when there is no environment.
Table environment_table(const std::vector<EnvironmentUse>& environments);

// One sentence per difference between the first strategy's environments and each other's
// in a fact that decides timings (any but where the jobs ran), e.g. "'a' and 'b' were timed
// with different gpu: X vs Y", and one per strategy that recorded none; empty when all were
// judged alike.
KFORGE_API std::vector<std::string> environment_mismatches(const std::vector<Metrics>& strategies);

}  // namespace kforge
