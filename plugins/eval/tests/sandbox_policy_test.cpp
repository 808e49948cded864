// What a stage does with this machine's sandbox (sandbox_policy.hpp): refuse, or run partial
// and record it; the probe itself on this machine and under seccomp filters that take
// parts of the sandbox away (tests/lib/restricted.py).
#include "sandbox_policy.hpp"

#include "test_env.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

namespace kforge::eval::testing {
namespace {

// Sets (or, with nullptr, unsets) KFORGE_SANDBOX for one test.
class SandboxVariable {
 public:
  explicit SandboxVariable(const char* value) {
    if (const char* old = std::getenv("KFORGE_SANDBOX")) old_ = old;
    value ? ::setenv("KFORGE_SANDBOX", value, 1) : ::unsetenv("KFORGE_SANDBOX");
  }
  ~SandboxVariable() { old_.empty() ? ::unsetenv("KFORGE_SANDBOX") : ::setenv("KFORGE_SANDBOX", old_.c_str(), 1); }

 private:
  std::string old_;
};

const char* kNoUserNamespace =
    R"({"chroot": false, "device": "cpu", "missing": ["user_namespace", "unprivileged_uid"],
        "outside_uid": 0, "reasons": {"user_namespace": "PermissionError: [Errno 1] unshare(0x10000000): Operation not permitted",
        "unprivileged_uid": "no user namespace"}, "seconds": 0.2})";

TEST(SandboxPolicy, ParameterAndVariable) {
  SandboxVariable unset(nullptr);
  EXPECT_EQ(sandbox_policy("full"), SandboxPolicy::Full);
  EXPECT_EQ(sandbox_policy("partial"), SandboxPolicy::Partial);
  EXPECT_EQ(sandbox_policy("auto"), SandboxPolicy::Full);  // refusing is the default
  {
    SandboxVariable partial("partial");
    EXPECT_EQ(sandbox_policy("auto"), SandboxPolicy::Partial);
    EXPECT_EQ(sandbox_policy("full"), SandboxPolicy::Full);  // a pipeline's own choice wins
  }
  SandboxVariable typo("parital");
  try {
    sandbox_policy("auto");
    FAIL() << "a misspelled KFORGE_SANDBOX was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "KFORGE_SANDBOX must be full or partial, got 'parital'");
  }
}

TEST(SandboxPolicy, AMissingProtectionIsRefusedSayingWhatAndWhatToDo) {
  const SandboxReport report = parse_sandbox_report(kNoUserNamespace);
  ASSERT_TRUE(report.failure.empty()) << report.failure;
  const SandboxDecision full = decide_sandbox(SandboxPolicy::Full, report);
  EXPECT_FALSE(full.partial);
  for (const char* text : {"the candidate sandbox is incomplete on this machine; it lacks user_namespace "
                           "(PermissionError: [Errno 1] unshare(0x10000000): Operation not permitted), "
                           "unprivileged_uid (no user namespace)",
                           "--security-opt seccomp=unconfined", "user.max_user_namespaces",
                           "set KFORGE_SANDBOX=partial (or the stage parameter sandbox: partial)"}) {
    EXPECT_NE(full.refusal.find(text), std::string::npos) << text << "\n" << full.refusal;
  }
  const SandboxDecision partial = decide_sandbox(SandboxPolicy::Partial, report);
  EXPECT_TRUE(partial.refusal.empty()) << partial.refusal;
  EXPECT_TRUE(partial.partial);
  EXPECT_EQ(partial.fact(), "partial: no user_namespace, unprivileged_uid");
}

TEST(SandboxPolicy, AChrootIsNamedAsTheCause) {
  nlohmann::json answer = nlohmann::json::parse(kNoUserNamespace);
  answer["chroot"] = true;
  const SandboxDecision decision = decide_sandbox(SandboxPolicy::Full, parse_sandbox_report(answer.dump()));
  EXPECT_NE(decision.refusal.find("kforge runs in a chroot, where the kernel refuses user namespaces"),
            std::string::npos)
      << decision.refusal;
}

TEST(SandboxPolicy, AChrootThatCannotBeRuledOutIsNamedAsAPossibleCause) {
  nlohmann::json answer = nlohmann::json::parse(kNoUserNamespace);
  for (const bool known : {false, true}) {
    if (known) {
      answer["chroot"] = false;
    } else {
      answer["chroot"] = nullptr;
    }
    const SandboxDecision decision = decide_sandbox(SandboxPolicy::Full, parse_sandbox_report(answer.dump()));
    EXPECT_EQ(decision.refusal.find("could not tell whether it runs in a chroot") == std::string::npos, known)
        << decision.refusal;
  }
}

TEST(SandboxPolicy, NoSandboxAtAllIsRefusedEvenWhenPartialIsAccepted) {
  const SandboxReport report =
      parse_sandbox_report(R"({"chroot": null, "error": "cannot enter a sandbox on this host: PermissionError: x"})");
  EXPECT_EQ(report.failure, "cannot enter a sandbox on this host: PermissionError: x");
  for (SandboxPolicy policy : {SandboxPolicy::Full, SandboxPolicy::Partial}) {
    const SandboxDecision decision = decide_sandbox(policy, report);
    EXPECT_NE(decision.refusal.find("no candidate sandbox can be started on this machine, not even a partial one"),
              std::string::npos)
        << decision.refusal;
  }
  EXPECT_NE(parse_sandbox_report("Traceback (most recent call last):").failure.find("answered no JSON object"),
            std::string::npos);
}

TEST(SandboxPolicy, AVerdictRecordsTheSandboxThatJudgedIt) {
  StageResult result = StageResult::fail("numerical_mismatch", "max diff 1");
  result.attributes.emplace_back(KF_KEY_RUN_ENVIRONMENT, R"({"device": "cpu"})");
  SandboxDecision partial = decide_sandbox(SandboxPolicy::Partial, parse_sandbox_report(kNoUserNamespace));
  record_sandbox(result, partial);
  EXPECT_EQ(result.metric(kMetricSandboxPartial), 1);
  EXPECT_NE(result.log_tail.find("sandbox: partial"), std::string::npos) << result.log_tail;
  EXPECT_EQ(nlohmann::json::parse(*result.attribute(KF_KEY_RUN_ENVIRONMENT))["sandbox"],
            "partial: no user_namespace, unprivileged_uid");
  StageResult full_result = StageResult::pass();
  full_result.attributes.emplace_back(KF_KEY_RUN_ENVIRONMENT, R"({"device": "cpu"})");
  record_sandbox(full_result, SandboxDecision{});
  EXPECT_TRUE(std::isnan(full_result.metric(kMetricSandboxPartial)));
  EXPECT_EQ(nlohmann::json::parse(*full_result.attribute(KF_KEY_RUN_ENVIRONMENT))["sandbox"], "full");
}

TEST(SandboxGate, AJobIsNotRunWhereTheSandboxIsRefused) {
  SandboxVariable unset(nullptr);
  // The probe on this machine, through the real harness: whatever it finds, guard() and
  // preflight() agree with it.
  const SandboxGate gate("auto", test_python(), harness_dir());
  const SandboxDecision decision = gate.decide();
  bool judged = false;
  const StageResult result = gate.guard(EvalJob{}, [&] {
    judged = true;
    return StageResult::pass();
  });
  if (decision.refusal.empty()) {
    EXPECT_TRUE(judged);
    EXPECT_NO_THROW(gate.preflight("eval.run"));
  } else {
    EXPECT_FALSE(judged);
    EXPECT_EQ(result.error_class, "host_error");
    EXPECT_EQ(result.message, decision.refusal);
    EXPECT_THROW(gate.preflight("eval.run"), std::runtime_error);
  }
  EXPECT_THROW(SandboxGate("auto", "kforge-no-such-python", harness_dir()).decide(), std::runtime_error);
}

}  // namespace
}  // namespace kforge::eval::testing
