#include "report/candidates.hpp"

#include <algorithm>

namespace kforge {

std::vector<RoundCode> candidate_rounds(const CandidateRecord& candidate) {
  int last = candidate.round;
  for (const StageRecord& s : candidate.stages) last = std::max(last, s.round);
  std::vector<RoundCode> rounds(static_cast<size_t>(last) + 1);
  for (size_t r = 0; r < rounds.size(); ++r) rounds[r].round = static_cast<int>(r);
  std::vector<std::string> diff_seen(rounds.size());
  for (const StageRecord& s : candidate.stages) {
    RoundCode& round = rounds[static_cast<size_t>(s.round)];
    if (!s.code_hash.empty()) round.code_hash = s.code_hash;
    if (!s.diff_hash.empty()) diff_seen[static_cast<size_t>(s.round)] = s.diff_hash;
  }
  // The diff attribute stays on the job after the fix that set it: a round shows it only
  // when it changed, and a round without verdicts that carry code keeps the code it had.
  for (size_t r = 0; r < rounds.size(); ++r) {
    const std::string previous_diff = r == 0 ? "" : diff_seen[r - 1];
    if (diff_seen[r] != previous_diff) rounds[r].diff_hash = diff_seen[r];
    if (r > 0) {
      if (rounds[r].code_hash.empty()) rounds[r].code_hash = rounds[r - 1].code_hash;
      rounds[r].code_changed = rounds[r].code_hash != rounds[r - 1].code_hash;
    }
  }
  return rounds;
}

const StageRecord* measurement_verdict(const CandidateRecord& candidate) {
  const StageRecord* any = nullptr;
  for (auto it = candidate.stages.rbegin(); it != candidate.stages.rend(); ++it) {
    if (it->metrics.empty()) continue;
    if (it->role == "run") return &*it;
    if (any == nullptr) any = &*it;
  }
  return any;
}

bool is_timing_statistic(const std::string& metric) {
  for (const char* party : kTimingParties) {
    for (const TimingStatistic& statistic : kTimingStatistics) {
      if (metric == std::string(party) + statistic.suffix) return true;
    }
  }
  return false;
}

std::optional<double> recorded_metric(const StageRecord* verdict, const std::string& name) {
  std::optional<double> value;
  if (verdict == nullptr) return value;
  for (const auto& [key, recorded] : verdict->metrics) {
    if (key == name) value = recorded;
  }
  return value;
}

std::vector<std::optional<double>> timing_statistics(const StageRecord* verdict, const std::string& party) {
  std::vector<std::optional<double>> values;
  for (const TimingStatistic& statistic : kTimingStatistics) values.push_back(recorded_metric(verdict, party + statistic.suffix));
  return values;
}

}  // namespace kforge
