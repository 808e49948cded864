// Whether candidates may run on this machine, given what its sandbox can give. The stages
// that run candidate code or a compiler on it ask the harness once per process and
// interpreter (`python -m kforge_harness.sandbox probe --json`): before the first job (their
// run-start check, where a refusal stops the run with exit 2) and, answered from the same
// probe, before every job (a stage must not rely on its run-start check having run).
//
// A sandbox that lacks a protection (a user namespace in a container or a chroot, seccomp
// refused) is refused by default; the user may accept it (the stage parameter `sandbox:
// partial`, or KFORGE_SANDBOX=partial for every stage), and then every verdict of these
// stages records it: the metric sandbox_partial, a line of its log, and the fact "sandbox"
// of the run's environment (the reports' Environment table). Never silently.
#pragma once

#include "eval_job.hpp"
#include "shared_probe.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kforge::eval {

// The verdict metric (1) of a job judged in a sandbox that lacked protections.
inline constexpr const char* kMetricSandboxPartial = "sandbox_partial";
// The fact of the run's environment (KF_KEY_RUN_ENVIRONMENT) that says which sandbox judged.
inline constexpr const char* kEnvironmentSandbox = "sandbox";

enum class SandboxPolicy {
  Full,     // refuse to run where a protection is missing
  Partial,  // run with what the machine gives, recorded with every verdict
};

// The policy a `sandbox` parameter names: full, partial, or auto ($KFORGE_SANDBOX when set,
// else full). Throws std::invalid_argument for anything else, saying where it came from.
SandboxPolicy sandbox_policy(const std::string& setting);

// What the probe found.
struct SandboxReport {
  std::vector<std::string> missing;            // protections it lacked (the harness's PROTECTIONS names)
  std::map<std::string, std::string> reasons;  // missing name -> why (the refused step's error)
  std::optional<bool> chroot;                  // kforge runs in a chroot; nullopt: cannot tell
  std::string failure;                         // no sandbox could be entered at all (or the probe failed)
};

// The probe's JSON line as a report; a line that is not one is a failure saying so.
SandboxReport parse_sandbox_report(const std::string& json_line);

// The probe's answer for `python` and `harness_dir` (resolved), asked once per process;
// nullopt when `deadline` passed first.
std::optional<SandboxReport> probe_sandbox(const std::string& python, const std::string& harness_dir,
                                           ProbeClock::time_point deadline);

// What a stage does on this machine under `policy`.
struct SandboxDecision {
  std::string refusal;  // not empty: candidates must not run here; says what is missing and what to do
  bool partial = false;  // they run in a sandbox that lacks `missing` (policy partial)
  std::vector<std::string> missing;
  // The environment fact: "full", or "partial: no user_namespace, unprivileged_uid".
  std::string fact() const;
};

SandboxDecision decide_sandbox(SandboxPolicy policy, const SandboxReport& report);

// Records the decision on a verdict: a partial sandbox as the metric sandbox_partial and a
// line of the log; the fact "sandbox" in the run's environment when the verdict has one.
void record_sandbox(StageResult& result, const SandboxDecision& decision);

// A stage's side of it: its `sandbox`, `python` and `harness_dir` parameters.
class SandboxGate {
 public:
  SandboxGate(std::string setting, std::string python, std::string harness_dir);
  // This machine's answer under the stage's policy. Throws std::runtime_error when there is
  // no interpreter or harness to ask, or the policy is not one; ProbeUnanswered when
  // `deadline` passed first.
  SandboxDecision decide(ProbeClock::time_point deadline = ProbeClock::time_point::max()) const;
  // The run-start check: throws std::runtime_error with the refusal; logs a partial sandbox.
  void preflight(const std::string& stage_kind) const;
  // `judge` run for `job` and its verdict recorded (record_sandbox), or, where candidates
  // must not run here, a host_error verdict that says why: `judge` is not called.
  StageResult guard(const EvalJob& job, const std::function<StageResult()>& judge) const;
  // What the verdict cache must tell apart: "" for a full sandbox, else its fact. A verdict
  // judged in a partial sandbox is never replayed as one judged in a full one.
  std::string cache_key() const;

 private:
  std::string setting_;
  std::string python_;
  std::string harness_dir_;
};

}  // namespace kforge::eval
