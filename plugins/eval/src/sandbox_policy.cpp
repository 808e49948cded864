#include "sandbox_policy.hpp"

#include "joined.hpp"
#include "process.hpp"
#include "python_env.hpp"

#include <kforge/abi.h>
#include <kforge/sdk.hpp>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <stdexcept>

namespace kforge::eval {
namespace {

// Entering a throwaway sandbox takes a fraction of a second; more means the host is stuck.
constexpr double kSandboxProbeSeconds = 60;
// The probe's exit status when no sandbox could be entered (it still prints its JSON line).
constexpr int kProbeFailed = 125;

constexpr const char* kOptionHint =
    "To run anyway in the sandbox this machine can give, set KFORGE_SANDBOX=partial (or the stage parameter "
    "sandbox: partial): every verdict, results.jsonl and the report's Environment table then say what it lacked "
    "(plugins/eval/README.md#the-candidate-sandbox)";

bool lacks(const SandboxReport& report, const std::string& name) {
  for (const std::string& missing : report.missing) {
    if (missing == name) return true;
  }
  return false;
}

// What the user can change, by the cause the probe points at.
std::string remedy(const SandboxReport& report) {
  std::vector<std::string> advice;
  if (report.chroot.value_or(false)) {
    advice.push_back(
        "kforge runs in a chroot, where the kernel refuses user namespaces: run it in a container or as the root of a "
        "mount namespace (unshare --mount --pid --fork, then pivot_root; systemd-nspawn; docker) instead");
  } else if (lacks(report, "user_namespace") || lacks(report, "mount_namespace") || lacks(report, "pid_namespace")) {
    advice.push_back(
        "this machine refuses namespaces to kforge: in a container (Docker's default seccomp profile and its missing "
        "CAP_SYS_ADMIN refuse them) start it with --security-opt seccomp=unconfined --cap-add SYS_ADMIN, or "
        "--privileged; on a host, allow user namespaces (sysctl user.max_user_namespaces=15000, and "
        "kernel.apparmor_restrict_unprivileged_userns=0 where AppArmor restricts them) or run kforge as root");
    if (!report.chroot) {
      // PID 1's root was out of sight (another PID namespace, a restricted /proc): a chroot
      // cannot be ruled out, and as root it is the likeliest cause.
      advice.push_back(
          "kforge could not tell whether it runs in a chroot; if it does, the kernel refuses user namespaces there: "
          "run it as the root of a mount namespace (unshare --mount --pid --fork, then pivot_root; systemd-nspawn; "
          "docker) instead");
    }
  }
  if (lacks(report, "seccomp")) {
    advice.push_back(
        "seccomp filters are refused (a kernel without CONFIG_SECCOMP_FILTER, or a container profile that denies "
        "seccomp()): allow them");
  }
  return joined(advice, "; ");
}

std::string describe_missing(const SandboxReport& report) {
  std::vector<std::string> items;
  for (const std::string& name : report.missing) {
    auto why = report.reasons.find(name);
    items.push_back(name + (why == report.reasons.end() || why->second.empty() ? "" : " (" + why->second + ")"));
  }
  return joined(items, ", ");
}

}  // namespace

SandboxPolicy sandbox_policy(const std::string& setting) {
  std::string value = setting;
  std::string origin = "the stage parameter sandbox";
  if (value == "auto") {
    const char* env = std::getenv("KFORGE_SANDBOX");
    value = env != nullptr && *env != '\0' ? env : "full";
    origin = "KFORGE_SANDBOX";
  }
  if (value == "full") return SandboxPolicy::Full;
  if (value == "partial") return SandboxPolicy::Partial;
  throw std::invalid_argument(origin + " must be full or partial, got '" + value + "'");
}

SandboxReport parse_sandbox_report(const std::string& json_line) {
  SandboxReport report;
  const nlohmann::json answer = nlohmann::json::parse(json_line, nullptr, false);
  if (!answer.is_object()) {
    report.failure = "the sandbox probe answered no JSON object: " + json_line.substr(0, 2000);
    return report;
  }
  if (auto chroot = answer.find("chroot"); chroot != answer.end() && chroot->is_boolean()) {
    report.chroot = chroot->get<bool>();
  }
  if (auto error = answer.find("error"); error != answer.end()) {
    report.failure = error->is_string() ? error->get<std::string>() : error->dump();
    return report;
  }
  auto missing = answer.find("missing");
  if (missing == answer.end() || !missing->is_array()) {
    report.failure = "the sandbox probe's answer has no list of missing protections: " + answer.dump();
    return report;
  }
  const nlohmann::json reasons = answer.value("reasons", nlohmann::json::object());
  for (const auto& name : *missing) {
    if (!name.is_string()) continue;
    const std::string text = name.get<std::string>();
    report.missing.push_back(text);
    if (auto why = reasons.find(text); why != reasons.end() && why->is_string()) report.reasons[text] = *why;
  }
  return report;
}

std::optional<SandboxReport> probe_sandbox(const std::string& python, const std::string& harness_dir,
                                           ProbeClock::time_point deadline) {
  static SharedProbe<SandboxReport> probes;
  const std::string key = python + '\n' + harness_dir;
  return probes.get(key, deadline, [python, harness_dir](const std::function<bool()>& stopping) {
    SharedProbe<SandboxReport>::Found found;
    RunLimits limits = RunLimits::within(kSandboxProbeSeconds);
    limits.cancelled = stopping;
    CommandResult result;
    try {
      result = run_command({{python, "-I", "-S", "-c",
                             "import sys; sys.path.insert(0, sys.argv[1]); from kforge_harness import sandbox; "
                             "sandbox.main(sys.argv[2:])",
                             harness_dir, "probe", "--json"},
                            {},
                            {}},
                           limits);
    } catch (const SpawnError& e) {
      found.value.failure = std::string("the sandbox probe could not start: ") + e.what();
      return found;
    }
    // A probe cut short says nothing lasting about the machine: the next job asks again.
    found.settled = result.exited();
    // Its answer is its last line; anything before it is the interpreter's noise.
    std::string output = result.output;
    while (!output.empty() && output.back() == '\n') output.pop_back();
    const std::string last_line = output.substr(output.rfind('\n') == std::string::npos ? 0 : output.rfind('\n') + 1);
    if (!result.exited() || (!result.ok() && result.exit_code != kProbeFailed) || last_line.rfind('{', 0) != 0) {
      found.value.failure = "the sandbox probe (" + python + " -m kforge_harness.sandbox probe) failed (" +
                            result.describe() + "): " + output.substr(0, 2000);
      return found;
    }
    found.value = parse_sandbox_report(last_line);
    return found;
  });
}

std::string SandboxDecision::fact() const { return partial ? "partial: no " + joined(missing, ", ") : "full"; }

SandboxDecision decide_sandbox(SandboxPolicy policy, const SandboxReport& report) {
  SandboxDecision decision;
  if (!report.failure.empty()) {
    const std::string advice = remedy(report);
    decision.refusal = "no candidate sandbox can be started on this machine, not even a partial one: " +
                       report.failure + (advice.empty() ? "" : ". " + advice);
    return decision;
  }
  if (report.missing.empty()) return decision;
  if (policy == SandboxPolicy::Partial) {
    decision.partial = true;
    decision.missing = report.missing;
    return decision;
  }
  const std::string advice = remedy(report);
  decision.refusal = "the candidate sandbox is incomplete on this machine; it lacks " + describe_missing(report) +
                     ". " + (advice.empty() ? "" : advice + ". ") + kOptionHint;
  return decision;
}

void record_sandbox(StageResult& result, const SandboxDecision& decision) {
  for (auto& [name, value] : result.attributes) {
    if (name != KF_KEY_RUN_ENVIRONMENT) continue;
    nlohmann::json environment = nlohmann::json::parse(value, nullptr, false);
    if (!environment.is_object()) continue;
    environment[kEnvironmentSandbox] = decision.fact();
    value = environment.dump();
  }
  if (!decision.partial) return;
  result.metrics.emplace_back(kMetricSandboxPartial, 1);
  result.log_tail = "sandbox: partial (accepted with sandbox: partial or KFORGE_SANDBOX=partial): this machine's "
                    "candidate sandbox lacks " + joined(decision.missing, ", ") + "\n" + result.log_tail;
}

SandboxGate::SandboxGate(std::string setting, std::string python, std::string harness_dir)
    : setting_(std::move(setting)), python_(std::move(python)), harness_dir_(std::move(harness_dir)) {}

SandboxDecision SandboxGate::decide(ProbeClock::time_point deadline) const {
  const SandboxPolicy policy = sandbox_policy(setting_);
  const std::string python = resolve_python(python_, deadline);
  const std::string harness_dir = locate_harness_dir(harness_dir_);
  const std::optional<SandboxReport> report = probe_sandbox(python, harness_dir, deadline);
  if (!report) {
    throw ProbeUnanswered("the stage timeout passed while waiting for the sandbox probe (" + python +
                          " -m kforge_harness.sandbox probe, asked once per process)");
  }
  return decide_sandbox(policy, *report);
}

void SandboxGate::preflight(const std::string& stage_kind) const {
  const SandboxDecision decision = decide();
  if (!decision.refusal.empty()) throw std::runtime_error(decision.refusal);
  if (decision.partial) {
    kforge::sdk::log(KF_LOG_WARN, "eval",
                     stage_kind + " runs candidates in a partial sandbox, as accepted (sandbox: partial or "
                     "KFORGE_SANDBOX=partial): it lacks " + joined(decision.missing, ", ") +
                     "; every verdict records it");
  }
}

StageResult SandboxGate::guard(const EvalJob& job, const std::function<StageResult()>& judge) const {
  SandboxDecision decision;
  try {
    decision = decide(probe_deadline_after(job.seconds_left()));
  } catch (const std::exception& e) {
    return StageResult::error("host_error", std::string("cannot tell what the candidate sandbox gives here: ") +
                                                e.what());
  }
  if (!decision.refusal.empty()) return StageResult::error("host_error", decision.refusal);
  StageResult result = judge();
  record_sandbox(result, decision);
  return result;
}

std::string SandboxGate::cache_key() const {
  try {
    const SandboxDecision decision = decide();
    return decision.refusal.empty() && !decision.partial ? "" : "sandbox " + decision.fact();
  } catch (const std::exception&) {
    return "sandbox unknown";  // guard() refuses such a job: nothing is cached under this
  }
}

}  // namespace kforge::eval
