// What the detail views of the HTML report and `kforge show` make of each candidate's
// verdicts (store/records.hpp: what the store reads back); docs/reports.md shows both
// renderings.
#pragma once

#include <kforge/abi.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/records.hpp"

namespace kforge {

// The code a candidate had in one fix round, and the diff that made it.
struct RoundCode {
  int round = 0;
  std::string code_hash;  // empty when no verdict of the round carried code
  std::string diff_hash;  // the fix stage's diff that opened the round; empty for round 0
  bool code_changed = true;  // differs from the previous round's code
};

// One entry per round the candidate went through, 0..final round. A round's code is what
// its last verdict carried (a fix stage records the code it wrote); a diff is shown for the
// round whose fix stage set it, not again for later rounds that kept it.
std::vector<RoundCode> candidate_rounds(const CandidateRecord& candidate);

// The timing statistics a run stage records for each party (the ABI's KF_TIMING_*), in the
// order the reports show them. A metric's name is the party's name and the suffix:
// "reference_ms_mean", "candidate_timing_trials". Kept here once so that
// the HTML report's script, `kforge show`, report.json and report.md agree.
struct TimingStatistic {
  const char* key;      // report.json's name for it
  const char* heading;  // the column's heading
  const char* suffix;
  bool count = false;   // a number of calls (an integer in report.json), not milliseconds
};
inline constexpr TimingStatistic kTimingStatistics[] = {
    {"mean", "mean (ms)", KF_TIMING_MS_MEAN}, {"std", "std (ms)", KF_TIMING_MS_STD},
    {"min", "min (ms)", KF_TIMING_MS_MIN},    {"median", "median (ms)", KF_TIMING_MS},
    {"p90", "p90 (ms)", KF_TIMING_MS_P90},    {"max", "max (ms)", KF_TIMING_MS_MAX},
    {"trials", "trials", KF_TIMING_TRIALS, true}};
inline constexpr const char* kTimingParties[] = {KF_TIMING_REFERENCE, KF_TIMING_CANDIDATE};

// Whether `metric` is one of the timing statistics of a party: the timing table shows it,
// the list of the other metrics does not.
bool is_timing_statistic(const std::string& metric);

// The value `verdict` recorded for metric `name`; nullopt when it recorded none, or there
// is no verdict.
std::optional<double> recorded_metric(const StageRecord* verdict, const std::string& name);

// `verdict`'s value of each of kTimingStatistics for `party`, in that order; nullopt for
// one it did not record, and for all of them when there is no verdict: what was not
// measured is never filled in from what was.
std::vector<std::optional<double>> timing_statistics(const StageRecord* verdict, const std::string& party);

// The verdict whose metrics describe the candidate's correctness and timing: the last one of
// a run stage that reported metrics, else the last with any metrics; null when none has.
const StageRecord* measurement_verdict(const CandidateRecord& candidate);

}  // namespace kforge
