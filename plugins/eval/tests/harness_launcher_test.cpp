// Launchers and the pool's faults: srun's command line, the step's placement line, and,
// through a stand-in srun (slurm/fake_srun.sh) that runs the real harness server on a
// made-up node, a step Slurm does not place in time, srun's refusal, a request lost with
// its server and sent to another, a node left out after failing three times in a row, and
// servers started at the run's start. The same on a real one-host cluster:
// slurm_cli_test.sh.
#include "harness_launcher.hpp"
#include "harness_pool.hpp"
#include "harness_stages.hpp"
#include "python_env.hpp"
#include "test_env.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>

namespace kforge::eval {
namespace {

using nlohmann::json;
using testing::bundled_task_job;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A candidate whose first forward call takes 3 s: long enough to lose its server under it.
const char* kSlowRelu =
    "import time\nimport torch\n\n_slept = False\n\n\nclass ModelNew(torch.nn.Module):\n"
    "    def forward(self, x):\n        global _slept\n        if not _slept:\n            _slept = True\n"
    "            time.sleep(3)\n        return torch.relu(x)\n";

json slow_request() {
  return harness_request("run", bundled_task_job("001_relu", kSlowRelu, "python"), "python", ChildLimits{60, 4096, 300});
}

// Polls `done` every 50 ms until it holds or `seconds` pass.
bool eventually(double seconds, const std::function<bool()>& done) {
  const auto start = Clock::now();
  while (seconds_since(start) < seconds) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// ---- srun's command line and what a step says

TEST(LaunchCommand, ALocalServerIsItsOwnCommand) {
  const SpawnSpec command = launch_command({"python3", "-m", "kforge_harness", "serve"}, {{"PYTHONPATH", "/h"}},
                                           std::nullopt, {});
  EXPECT_EQ(command.argv, (std::vector<std::string>{"python3", "-m", "kforge_harness", "serve"}));
  EXPECT_EQ(command.env.at("PYTHONPATH"), "/h");
  EXPECT_TRUE(command.pass.empty());
}

TEST(LaunchCommand, ASlurmServerIsAStepWithItsResourcesThatSaysWhereItRuns) {
  ::setenv("SLURM_CONF", "/etc/slurm/test.conf", 1);
  SlurmLaunch slurm;
  slurm.gpus = 2;
  slurm.cpus = 8;
  slurm.partition = "gpu";
  slurm.account = "kernels";
  slurm.time_limit = "2:00:00";
  slurm.constraint = "h100";
  slurm.extra_args = {"--mem=64G", "--qos=high"};
  const SpawnSpec command = launch_command({"python3", "-m", "kforge_harness", "serve"}, {}, slurm, {"n1", "n7"});
  ::unsetenv("SLURM_CONF");
  const std::vector<std::string> expected = {
      "srun", "--ntasks=1", "--nodes=1", "--job-name=kforge-harness", "--cpus-per-task=8", "--gpus-per-task=2",
      "--partition=gpu", "--account=kernels", "--time=2:00:00", "--constraint=h100", "--exclude=n1,n7",
      "--mem=64G", "--qos=high", "--", "/bin/sh", "-c"};
  ASSERT_GT(command.argv.size(), expected.size());
  EXPECT_EQ(std::vector<std::string>(command.argv.begin(), command.argv.begin() + expected.size()), expected);
  EXPECT_EQ(std::vector<std::string>(command.argv.end() - 4, command.argv.end()),
            (std::vector<std::string>{"python3", "-m", "kforge_harness", "serve"}));
  EXPECT_NE(std::find(command.pass.begin(), command.pass.end(), "SLURM_CONF"), command.pass.end())
      << "srun needs the cluster's configuration and the allocation";

  // The script the step runs prints where it was placed, then becomes the server.
  const std::string script = command.argv[expected.size()];
  const CommandResult placed = run_command(
      {{"/bin/sh", "-c", script, "step", "/bin/echo", "server"}, {{"SLURMD_NODENAME", "gpu07"}, {"SLURM_JOB_ID", "4711"}, {"SLURM_STEP_ID", "3"}}, {}},
      RunLimits::within(10));
  ASSERT_TRUE(placed.ok()) << placed.output;
  const auto newline = placed.output.find('\n');
  const auto step = placement_of(json::parse(placed.output.substr(0, newline)));
  ASSERT_TRUE(step);
  EXPECT_EQ(step->node, "gpu07");
  EXPECT_EQ(step->id(), "4711.3");
  EXPECT_EQ(placed.output.substr(newline + 1), "server\n");
}

TEST(LaunchCommand, SlurmsOwnLinesAreTakenFromAServersStderr) {
  EXPECT_FALSE(placement_of(json{{"ready", true}}));
  const std::string stderr_text =
      "Traceback (most recent call last):\nsrun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
      "slurmstepd: error: *** STEP 12.0 ON gpu07 CANCELLED AT 2026-11-26T17:36:15 DUE TO TIME LIMIT ***\n"
      "srun: error: gpu07: task 0: Killed\n";
  EXPECT_EQ(slurm_messages(stderr_text, 2),
            "slurmstepd: error: *** STEP 12.0 ON gpu07 CANCELLED AT 2026-11-26T17:36:15 DUE TO TIME LIMIT ***; "
            "srun: error: gpu07: task 0: Killed");
  EXPECT_EQ(slurm_messages("nothing of Slurm's\n"), "");
}

// ---- a stand-in srun first on PATH

class FakeSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::fresh_temp_dir("fake-slurm");
    testing::write_file(dir_ + "/srun", testing::read_file(testing::repo_dir() + "/plugins/eval/tests/slurm/fake_srun.sh"));
    testing::write_file(dir_ + "/scancel", "#!/bin/sh\necho \"scancel $*\" >>\"$SLURM_FAKE_LOG\"\n");
    ::chmod((dir_ + "/srun").c_str(), 0755);
    ::chmod((dir_ + "/scancel").c_str(), 0755);
    old_path_ = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
    ::setenv("PATH", (dir_ + ":" + old_path_).c_str(), 1);
    ::setenv("SLURM_FAKE_LOG", log_path().c_str(), 1);
  }
  void TearDown() override {
    ::setenv("PATH", old_path_.c_str(), 1);
    for (const char* name : {"SLURM_FAKE_LOG", "SLURM_FAKE_MODE", "SLURM_FAKE_NODES", "SLURM_FAKE_PENDING_ONCE"}) {
      ::unsetenv(name);
    }
  }

  std::string log_path() const { return dir_ + "/log"; }
  std::string log() const {
    try {
      return testing::read_file(log_path());
    } catch (const std::exception&) {
      return "";
    }
  }

  static SlurmLaunch launch(double place_timeout = 60) {
    SlurmLaunch slurm;
    slurm.place_timeout_seconds = place_timeout;
    return slurm;
  }
  static HarnessServerSpec spec(double place_timeout = 60) {
    HarnessServerSpec spec;
    spec.python = testing::test_python();
    spec.harness_dir = testing::harness_dir();
    spec.device = "cpu";
    spec.mode = "fork";
    spec.max_children = 1;
    spec.slurm = launch(place_timeout);
    return spec;
  }
  static HarnessSettings pool_settings(int servers, double place_timeout = 60) {
    HarnessSettings settings = testing::test_harness_settings(1);
    settings.slurm = launch(place_timeout);
    settings.servers = servers;
    return settings;
  }

  std::string dir_;
  std::string old_path_;
};

TEST_F(FakeSlurm, AServerInAStepAnswersAndSaysWhereItRuns) {
  KFORGE_REQUIRE_TORCH();
  HarnessServer server(spec());
  const HarnessResponse response = server.call(harness_request("run", bundled_task_job("001_relu"), "python", {}),
                                               CallBudget::of(60, 120));
  EXPECT_EQ(response.status, "pass") << response.message << response.log_tail;
  EXPECT_EQ(response.node, "node-a");
  ASSERT_TRUE(server.step());
  EXPECT_EQ(server.step()->node, "node-a");
  EXPECT_EQ(server.step()->id(), std::to_string(server.pid()) + ".0");
  EXPECT_TRUE(contains(log(), "--cpus-per-task=1")) << log();
}

TEST_F(FakeSlurm, AStepNotPlacedInTimeIsWithdrawnAndGivenUp) {
  KFORGE_REQUIRE_TORCH();
  ::setenv("SLURM_FAKE_MODE", "pending", 1);
  HarnessServer server(spec(1.5));
  const auto start = Clock::now();
  const HarnessResponse response = server.call(harness_request("check", bundled_task_job("001_relu", "x = 1\n", "python"), "python", {}),
                                               CallBudget::of(60, 120));
  EXPECT_LT(seconds_since(start), 30);
  EXPECT_EQ(response.error_class, "harness_error");
  EXPECT_TRUE(response.server_lost);
  EXPECT_TRUE(contains(response.message, "Slurm did not place the harness server")) << response.message;
  EXPECT_TRUE(contains(response.message, "queued and waiting for resources")) << response.message;
  EXPECT_TRUE(contains(response.message, "raise slurm_place_timeout,")) << response.message;
  EXPECT_EQ(server.availability(), HarnessServer::Availability::Failed);
  EXPECT_TRUE(eventually(5, [&] { return contains(log(), "withdrawn"); })) << "srun was told to withdraw: " << log();
}

TEST_F(FakeSlurm, SrunsRefusalIsSaidAndNotAskedAgain) {
  ::setenv("SLURM_FAKE_MODE", "refuse", 1);
  HarnessServer server(spec());
  const json request = harness_request("check", bundled_task_job("001_relu", "x = 1\n", "python"), "python", {});
  const HarnessResponse first = server.call(request, CallBudget::of(60, 120));
  EXPECT_EQ(first.error_class, "harness_error");
  EXPECT_TRUE(contains(first.message, "srun could not start the harness server's step")) << first.message;
  EXPECT_TRUE(contains(first.message, "Invalid partition name specified")) << first.message;
  const auto start = Clock::now();
  EXPECT_EQ(server.call(request, CallBudget::of(60, 120)).message, first.message);
  EXPECT_LT(seconds_since(start), 1.0);
}

TEST_F(FakeSlurm, APoolGoesOnWithTheServersSlurmPlacedAndSaysSo) {
  KFORGE_REQUIRE_TORCH();
  ::setenv("SLURM_FAKE_PENDING_ONCE", (dir_ + "/pending-once").c_str(), 1);
  HarnessSettings settings = pool_settings(2, 3);
  std::mutex mutex;
  std::vector<std::string> warnings;
  settings.warn = [&](const std::string& message) {
    std::lock_guard lock(mutex);
    warnings.push_back(message);
  };
  HarnessPool pool(settings);
  pool.start();
  const json request = harness_request("run", bundled_task_job("001_relu"), "python", {});
  for (int i = 0; i < 3; ++i) {
    const HarnessResponse response = pool.call(request, DeviceUse::Shared, CallBudget::of(60, 120));
    EXPECT_EQ(response.status, "pass") << response.message;
  }
  // The pool says so at the first request after the step was given up.
  const auto members = pool.members();
  ASSERT_TRUE(eventually(30, [&] {
    return std::any_of(members.begin(), members.end(),
                       [](const auto& s) { return s->availability() == HarnessServer::Availability::Failed; });
  }));
  EXPECT_EQ(pool.call(request, DeviceUse::Shared, CallBudget::of(60, 120)).status, "pass");
  std::lock_guard lock(mutex);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(contains(warnings[0], "Slurm did not place")) << warnings[0];
  EXPECT_TRUE(contains(warnings[0], "(1 of 2 harness servers left)")) << warnings[0];
}

TEST_F(FakeSlurm, ARequestLostWithItsStepIsSentToAnotherServer) {
  KFORGE_REQUIRE_TORCH();
  HarnessPool pool(pool_settings(2));
  pool.start();
  ASSERT_TRUE(eventually(120, [&] {
    const auto members = pool.members();
    return members.size() == 2 && std::all_of(members.begin(), members.end(), [](const auto& s) {
             return s->availability() == HarnessServer::Availability::Ready;
           });
  }));
  auto answer = std::async(std::launch::async, [&] {
    return pool.call(slow_request(), DeviceUse::Shared, CallBudget::of(60, 120), "relu");
  });
  std::shared_ptr<HarnessServer> busy;
  ASSERT_TRUE(eventually(10, [&] {
    for (const auto& server : pool.members()) {
      if (server->load() > 0) busy = server;
    }
    return busy != nullptr;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the candidate sleeps in forward
  ASSERT_EQ(::kill(busy->pid(), SIGKILL), 0);
  const HarnessResponse response = answer.get();
  EXPECT_EQ(response.status, "pass") << response.message << response.log_tail;
  EXPECT_EQ(response.metrics.value(KF_METRIC_INFRA_RETRIES, 0), 1);
  EXPECT_TRUE(contains(response.log_tail, "died")) << response.log_tail;
  EXPECT_TRUE(contains(response.log_tail, "sent again (1 of at most 2)")) << response.log_tail;
  EXPECT_TRUE(contains(response.device, "node-a/cpu")) << response.device;
  EXPECT_TRUE(eventually(120, [&] { return busy->availability() == HarnessServer::Availability::Ready; }))
      << "the lost server's replacement started";
}

TEST_F(FakeSlurm, ANodeWhoseRequestsKeepFailingIsLeftOut) {
  KFORGE_REQUIRE_TORCH();
  ::setenv("SLURM_FAKE_NODES", "node-a node-b", 1);
  HarnessSettings settings = pool_settings(1);
  settings.server_retries = 0;
  std::mutex mutex;
  std::vector<std::string> warnings;
  settings.warn = [&](const std::string& message) {
    std::lock_guard lock(mutex);
    warnings.push_back(message);
  };
  HarnessPool pool(settings);
  for (int lost = 0; lost < kNodeFailureLimit; ++lost) {
    auto answer = std::async(std::launch::async, [&] {
      return pool.call(slow_request(), DeviceUse::Shared, CallBudget::of(60, 180), "relu");
    });
    ASSERT_TRUE(eventually(120, [&] {
      const auto members = pool.members();
      return !members.empty() && members[0]->load() > 0 && members[0]->pid() > 0;
    }));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    ASSERT_EQ(pool.members()[0]->step()->node, "node-a");
    ASSERT_EQ(::kill(pool.members()[0]->pid(), SIGKILL), 0);
    const HarnessResponse response = answer.get();
    EXPECT_EQ(response.error_class, "harness_error") << "no retries left: the infrastructure's error";
    EXPECT_TRUE(response.server_lost);
    EXPECT_EQ(response.node, "node-a");
  }
  {
    std::lock_guard lock(mutex);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_TRUE(contains(warnings[0], "node node-a is left out of the run")) << warnings[0];
  }
  const HarnessResponse after =
      pool.call(harness_request("run", bundled_task_job("001_relu"), "python", {}), DeviceUse::Shared, CallBudget::of(60, 180));
  EXPECT_EQ(after.status, "pass") << after.message;
  EXPECT_EQ(after.node, "node-b");
  EXPECT_TRUE(contains(log(), "--exclude=node-a")) << log();
}

// ---- the run's start, and a local server lost under a request

TEST(HarnessPool, StartBeginsEveryServerWithoutWaitingForIt) {
  KFORGE_REQUIRE_TORCH();
  HarnessPool pool(testing::test_harness_settings(1));
  EXPECT_TRUE(pool.members().empty()) << "nothing is started before the run starts";
  resolve_python(testing::test_python());  // the stage's run-start check did this
  const auto start = Clock::now();
  pool.start();
  EXPECT_LT(seconds_since(start), 1.0);
  const auto members = pool.members();
  ASSERT_EQ(members.size(), 1u);
  EXPECT_NE(members[0]->availability(), HarnessServer::Availability::Stopped);
  ASSERT_TRUE(eventually(120, [&] { return members[0]->availability() == HarnessServer::Availability::Ready; }));
  const pid_t ready_pid = members[0]->pid();
  const HarnessResponse response =
      pool.call(harness_request("run", bundled_task_job("001_relu"), "python", {}), DeviceUse::Shared, CallBudget::of(60, 120));
  EXPECT_EQ(response.status, "pass") << response.message;
  EXPECT_EQ(members[0]->pid(), ready_pid) << "the first request found the server started, and started no other";
}

TEST(HarnessPool, ALocalServerLostUnderARequestIsRestartedAndTheRequestSentAgain) {
  KFORGE_REQUIRE_TORCH();
  HarnessPool pool(testing::test_harness_settings(1));
  auto answer = std::async(std::launch::async, [&] {
    return pool.call(slow_request(), DeviceUse::Shared, CallBudget::of(60, 180), "relu");
  });
  ASSERT_TRUE(eventually(120, [&] {
    const auto members = pool.members();
    return !members.empty() && members[0]->load() > 0 && members[0]->pid() > 0;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(::kill(pool.members()[0]->pid(), SIGKILL), 0);
  const HarnessResponse response = answer.get();
  EXPECT_EQ(response.status, "pass") << response.message << response.log_tail;
  EXPECT_EQ(response.metrics.value(KF_METRIC_INFRA_RETRIES, 0), 1);
  EXPECT_EQ(response.device, "cpu");
}

}  // namespace
}  // namespace kforge::eval
