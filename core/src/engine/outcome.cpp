#include "engine/outcome.hpp"

#include <algorithm>

namespace kforge {
namespace {

constexpr std::string_view kCandidatePrefix = "candidate.";

std::optional<double> metric(const Verdict& v, const char* name) {
  for (const auto& [key, value] : v.metrics) {
    if (key == name) return value;
  }
  return std::nullopt;
}

// The speedup of the final round: a later round's measurement, never an earlier one's.
std::optional<double> final_speedup(const Job& job) {
  for (auto v = job.verdicts.rbegin(); v != job.verdicts.rend() && v->round == job.round; ++v) {
    if (auto speedup = metric(*v, KF_METRIC_SPEEDUP)) return speedup;
  }
  return std::nullopt;
}

}  // namespace

bool JobOutcome::compiled() const {
  return passed() || std::find(compiled_in_round.begin(), compiled_in_round.end(), 1) != compiled_in_round.end();
}

bool JobOutcome::compiled_by_round(int r) const {
  if (passed_by_round(r)) return true;
  const size_t last = static_cast<size_t>(std::min(r, round));
  return last < compiled_in_round.size() && compiled_in_round[last] != 0;
}

void add_visit(JobOutcome& outcome, const Verdict& v) {
  ++outcome.attempts;
  outcome.seconds += v.seconds;
  if (v.cached) ++outcome.cached_attempts;
  switch (v.role) {
    case KF_ROLE_CHECK:
    case KF_ROLE_COMPILE:
    case KF_ROLE_RUN:
      outcome.eval_seconds += v.seconds;
      break;
    case KF_ROLE_GENERATE:
    case KF_ROLE_FIX:
      outcome.gen_seconds += metric(v, KF_METRIC_RECORDED_SECONDS).value_or(v.seconds);
      break;
    case KF_ROLE_OTHER:
      break;
  }
  if (v.role != KF_ROLE_COMPILE && v.role != KF_ROLE_RUN) return;
  outcome.compile_evidence = true;
  const bool built = v.role == KF_ROLE_COMPILE ? v.status == VerdictStatus::Pass
                                               : v.error_class != KF_ERROR_COMPILE && v.error_class != KF_ERROR_SYNTAX;
  if (!built || v.round < 0) return;
  const size_t round = static_cast<size_t>(v.round);
  if (outcome.compiled_in_round.size() <= round) outcome.compiled_in_round.resize(round + 1, 0);
  outcome.compiled_in_round[round] = 1;
}

JobOutcome outcome_of(const Job& job) {
  JobOutcome o;
  o.task = job.task;
  o.task_id = job.task->id();
  o.task_index = job.task->index;
  o.job_index = job.index;
  o.sample = job.sample;
  o.round = job.round;
  o.status = job.final_status();
  if (const Verdict* last = job.last()) {
    o.stage = last->stage;
    o.error_class = last->error_class;
    o.message = last->message;
  }
  auto text = [&](const char* key) {
    const std::string* value = job.find_string(key);
    return value ? *value : std::string();
  };
  o.model = text(KF_KEY_CANDIDATE_MODEL);
  o.language = text(KF_KEY_CANDIDATE_LANGUAGE);
  o.device = text(KF_KEY_CANDIDATE_DEVICE);
  o.environment = text(KF_KEY_RUN_ENVIRONMENT);
  o.code = text(KF_KEY_CANDIDATE_CODE);
  o.tokens_in = job.find_number(KF_KEY_CANDIDATE_TOKENS_IN).value_or(0);
  o.tokens_out = job.find_number(KF_KEY_CANDIDATE_TOKENS_OUT).value_or(0);
  o.cost = job.find_number(KF_KEY_CANDIDATE_COST).value_or(0);
  o.speedup = final_speedup(job);
  for (const auto& [key, value] : job.strings) {
    if (key.starts_with(kCandidatePrefix) && key != KF_KEY_CANDIDATE_CODE && key != KF_KEY_CANDIDATE_DIFF) {
      o.candidate_text.emplace(key, value);
    }
  }
  for (const auto& [key, value] : job.numbers) {
    if (key.starts_with(kCandidatePrefix)) o.candidate_numbers.emplace(key, value);
  }
  for (const Verdict& v : job.verdicts) {
    add_visit(o, v);
    Verdict summary = v;
    summary.log_tail.clear();  // the store keeps log tails; nothing downstream needs them here
    o.verdicts.push_back(std::move(summary));
  }
  return o;
}

}  // namespace kforge
