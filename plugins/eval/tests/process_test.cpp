#include "process.hpp"
#include "test_env.hpp"

#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>
#include <sstream>

namespace kforge::eval {
namespace {

TEST(RunCommand, CollectsOutputAndExitStatus) {
  const CommandResult result = run_command({{"sh", "-c", "echo out; echo err >&2; exit 3"}, {}, {}}, RunLimits::within(30));
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_FALSE(result.timed_out);
  EXPECT_NE(result.output.find("out\n"), std::string::npos);
  EXPECT_NE(result.output.find("err\n"), std::string::npos);
  EXPECT_EQ(result.describe(), "exit status 3");
}

TEST(RunCommand, PassesEnvironmentAndWorkingDirectory) {
  const CommandResult result =
      run_command({{"sh", "-c", "echo $KFORGE_PROBE; pwd"}, {{"KFORGE_PROBE", "hello"}}, "/"}, RunLimits::within(30));
  ASSERT_TRUE(result.ok()) << result.output;
  EXPECT_EQ(result.output, "hello\n/\n");
}

TEST(RunCommand, PassesOnlyAllowlistedAndNamedVariables) {
  // kforge's own environment holds API keys; a child (the harness, a compiler) runs
  // candidate code and must never see them.
  ::setenv("KFORGE_TEST_API_KEY", "sk-kforge-test-secret", 1);
  ::setenv("OPENAI_API_KEY", "sk-kforge-test-secret", 1);
  ::setenv("KFORGE_NAMED_BY_PIPELINE", "named", 1);
  ::setenv("LC_KFORGE_TEST", "locale", 1);
  SpawnSpec spec{{"env"}, {{"KFORGE_SET", "set"}, {"PATH", "/usr/bin:/bin"}}, {}, {"KFORGE_NAMED_BY_PIPELINE"}};
  const CommandResult result = run_command(spec, RunLimits::within(30));
  ::unsetenv("KFORGE_TEST_API_KEY");
  ::unsetenv("OPENAI_API_KEY");
  ::unsetenv("KFORGE_NAMED_BY_PIPELINE");
  ::unsetenv("LC_KFORGE_TEST");
  ASSERT_TRUE(result.ok()) << result.output;
  EXPECT_EQ(result.output.find("sk-kforge-test-secret"), std::string::npos) << result.output;
  std::multiset<std::string> lines;
  std::istringstream stream(result.output);
  for (std::string line; std::getline(stream, line);) lines.insert(line);
  EXPECT_EQ(lines.count("KFORGE_NAMED_BY_PIPELINE=named"), 1u) << result.output;
  EXPECT_EQ(lines.count("LC_KFORGE_TEST=locale"), 1u);
  EXPECT_EQ(lines.count("KFORGE_SET=set"), 1u);
  EXPECT_EQ(lines.count("PATH=/usr/bin:/bin"), 1u);  // what the spec sets replaces the inherited value
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("PATH=", 0) == 0; }), 1);
}

TEST(RunCommand, AllowlistHoldsToolchainAndDeviceSettingsOnly) {
  for (const char* name : {"PATH", "HOME", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "PYTHONPATH", "CUDA_HOME",
                           "CUDA_VISIBLE_DEVICES", "TRITON_CACHE_DIR", "TORCH_CUDA_ARCH_LIST", "OMP_NUM_THREADS"}) {
    EXPECT_TRUE(passes_to_children(name)) << name;
  }
  for (const char* name : {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY", "AWS_SECRET_ACCESS_KEY",
                           "GITHUB_TOKEN", "KFORGE_CPP_CACHE", "LC_", "CUDA_", "SSH_AUTH_SOCK"}) {
    EXPECT_FALSE(passes_to_children(name)) << name;
  }
}

TEST(RunCommand, TimeoutKillsTheWholeProcessGroup) {
  // The shell starts a grandchild that would hold the output pipe open for a minute: the
  // group kill must end it too, or this would take 60 s.
  const auto start = std::chrono::steady_clock::now();
  const CommandResult result = run_command({{"sh", "-c", "sleep 60 & sleep 60; echo never"}, {}, {}}, RunLimits::within(1));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(result.timed_out);
  EXPECT_FALSE(result.ok());
  EXPECT_LT(seconds, 10);
  EXPECT_EQ(result.output.find("never"), std::string::npos);
}

// A child that closes its output and runs on: the limit holds (a blocking wait for the
// child after the pipe's end held the call for the child's whole life).
TEST(RunCommand, AChildThatClosesItsOutputIsStillKilledAtTheLimit) {
  const CommandResult result = run_command({{"sh", "-c", "exec >/dev/null 2>&1; sleep 60"}, {}, {}}, RunLimits::within(1));
  EXPECT_TRUE(result.timed_out);
  EXPECT_LT(result.seconds, 3);
}

// A grandchild that left the process group (setsid) keeps writing into the output pipe
// after the kill: the call returns about a second after the kill all the same (it read on
// as long as output came).
TEST(RunCommand, OutputThatKeepsComingAfterTheKillDoesNotHoldTheCall) {
  const std::string pid_file = testing::fresh_temp_dir("chatty-grandchild") + "/pid";
  const CommandResult result = run_command(
      {{"sh", "-c", "setsid sh -c 'echo $$ > " + pid_file + "; while :; do echo x; sleep 0.05; done' & sleep 60"}, {}, {}},
      RunLimits::within(1));
  EXPECT_TRUE(result.timed_out);
  EXPECT_LT(result.seconds, 3);
  const pid_t grandchild = std::atoi(testing::read_file(pid_file).c_str());
  if (grandchild > 0) ::kill(-grandchild, SIGKILL);  // a group of its own (setsid)
}

TEST(RunCommand, ReportsTheKillingSignal) {
  const CommandResult result = run_command({{"sh", "-c", "kill -SEGV $$"}, {}, {}}, RunLimits::within(30));
  EXPECT_EQ(result.signal, SIGSEGV);
  EXPECT_EQ(result.describe(), "killed by SIGSEGV");
}

TEST(RunCommand, CancellationStopsTheChild) {
  RunLimits limits = RunLimits::within(60);
  limits.cancelled = [] { return true; };
  const CommandResult result = run_command({{"sleep", "60"}, {}, {}}, limits);
  EXPECT_TRUE(result.cancelled);
  EXPECT_LT(result.seconds, 10);
}

TEST(RunCommand, KeepsAtMostMaxOutputBytes) {
  RunLimits limits = RunLimits::within(30);
  limits.max_output = 100;
  const CommandResult result = run_command({{"sh", "-c", "yes | head -c 100000"}, {}, {}}, limits);
  EXPECT_EQ(result.output.size(), 100u);
  EXPECT_TRUE(result.output_truncated);
}

TEST(SpawnProcess, MissingProgramSaysSo) {
  try {
    run_command({{"kforge-no-such-program"}, {}, {}}, RunLimits::within(5));
    FAIL() << "expected SpawnError";
  } catch (const SpawnError& e) {
    EXPECT_NE(std::string(e.what()).find("kforge-no-such-program"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("not found on PATH"), std::string::npos);
  }
  EXPECT_THROW(run_command({{"sh"}, {}, "/no/such/dir"}, RunLimits::within(5)), SpawnError);
}

TEST(FindProgram, LooksUpPathAndChecksExplicitPaths) {
  const auto sh = find_program("sh");
  ASSERT_TRUE(sh.has_value());
  EXPECT_EQ(sh->front(), '/');
  EXPECT_EQ(find_program(*sh), sh);
  EXPECT_FALSE(find_program("/no/such/sh").has_value());
  EXPECT_FALSE(find_program("").has_value());
}

}  // namespace
}  // namespace kforge::eval
