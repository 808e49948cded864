// What one finished job came to, built once when it leaves the graph: results.jsonl, the
// run store and the metrics all read it, so they cannot disagree.
#pragma once

#include <kforge/abi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/job.hpp"

namespace kforge {

struct JobOutcome {
  std::shared_ptr<const Task> task;  // absent when read back from the store
  std::string task_id;
  uint64_t task_index = 0;
  uint64_t job_index = 0;  // task_index * k + sample
  int sample = 0;
  int round = 0;  // the final fix round
  // The last verdict's (a job with no stage at all passes).
  VerdictStatus status = VerdictStatus::Pass;
  std::string stage;
  std::string error_class;
  std::string message;

  // The candidate as it ended: the well-known fields, the code (the store keeps it by
  // hash), and every candidate.* attribute but code and diff, for results.jsonl.
  std::string model;
  std::string language;
  std::string device;
  std::string environment;  // KF_KEY_RUN_ENVIRONMENT: a JSON object's text; empty when no stage set it
  double tokens_in = 0;
  double tokens_out = 0;
  double cost = 0;
  std::string code;
  std::optional<double> speedup;  // KF_METRIC_SPEEDUP of the final round, when measured
  std::map<std::string, std::string> candidate_text;
  std::map<std::string, double> candidate_numbers;

  // Folded from the verdicts by role (add_visit).
  std::vector<char> compiled_in_round;  // per fix round: 1 when a verdict shows the code built
  bool compile_evidence = false;        // some verdict came from a compile or run stage
  double seconds = 0;                   // every stage call
  double eval_seconds = 0;              // check, compile and run stages
  double gen_seconds = 0;               // generate and fix stages (recorded seconds when replayed)
  int attempts = 0;
  int cached_attempts = 0;

  // The verdicts in order, without log tails; empty when read back from the store.
  std::vector<Verdict> verdicts;

  bool passed() const { return status == VerdictStatus::Pass; }
  // Passed, or some round compiled: a correct candidate has compiled by definition.
  bool compiled() const;
  // State after round r (a job that ended earlier keeps its final state).
  bool passed_by_round(int r) const { return passed() && round <= r; }
  bool compiled_by_round(int r) const;
};

// The outcome of a finished job.
JobOutcome outcome_of(const Job& job);

// Folds one verdict into the outcome's facts. A round shows the code compiled when it has a
// passing compile verdict, or a run verdict whose error class is not KF_ERROR_COMPILE or
// KF_ERROR_SYNTAX (run stages load the candidate, building it, so reaching one past those
// errors means it built).
void add_visit(JobOutcome& outcome, const Verdict& verdict);

}  // namespace kforge
