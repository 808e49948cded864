#include "harness_client.hpp"
#include "harness_pool.hpp"
#include "harness_stages.hpp"
#include "process.hpp"
#include "python_env.hpp"
#include "test_env.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

namespace kforge::eval {
namespace {

using nlohmann::json;
using testing::bundled_task_job;
using testing::examples_dir;
using testing::read_file;

HarnessServerSpec cpu_spec(int max_children = 2) {
  HarnessServerSpec spec;
  spec.python = testing::test_python();
  spec.harness_dir = testing::harness_dir();
  spec.device = "cpu";
  spec.mode = "fork";
  spec.max_children = max_children;
  return spec;
}

// One request, as a stage asks: the child's limit and the stage's time left.
HarnessResponse ask(HarnessServer& server, const std::string& action, const EvalJob& job, double child_timeout = 60,
                    double stage_seconds_left = std::numeric_limits<double>::infinity()) {
  return server.call(harness_request(action, job, job.language, ChildLimits{child_timeout, 4096, 300}),
                     CallBudget::of(child_timeout, stage_seconds_left));
}

const char* kEndlessCandidate =
    "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        while True:\n"
    "            pass\n";
const char* kBrokenSyntax = "import torch\n\nclass ModelNew(torch.nn.Module:\n    pass\n";

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(HarnessServer, StartsSaysReadyAndAnswers) {
  KFORGE_REQUIRE_TORCH();
  HarnessServer server(cpu_spec());
  EXPECT_EQ(server.pid(), -1);  // nothing runs before the first request
  const auto response = ask(server, "run", bundled_task_job("001_relu"));
  EXPECT_EQ(response.status, "pass") << response.message << response.log_tail;
  EXPECT_GT(server.pid(), 0);
  const json ready = server.ready_info();
  EXPECT_EQ(ready.value("device", ""), "cpu");
  EXPECT_FALSE(ready.value("torch", "").empty());
  EXPECT_TRUE(response.metrics.contains("max_abs_diff"));
}

TEST(HarnessServer, ARunsNeedIsToldBeforeItsAnswer) {
  KFORGE_REQUIRE_TORCH();
  HarnessServer server(cpu_spec());
  const EvalJob job = bundled_task_job("001_relu");
  std::vector<double> needs;
  const auto response = server.call(harness_request("run", job, job.language, ChildLimits{60, 4096, 300}),
                                    CallBudget::of(60, std::numeric_limits<double>::infinity()),
                                    [&](const Need& told) {
                                      needs.push_back(told.need_mb);
                                      EXPECT_FALSE(told.device_memory_mb);  // a CPU server's
                                    });
  ASSERT_EQ(response.status, "pass") << response.message << response.log_tail;
  ASSERT_EQ(needs.size(), 1u);  // a need line, not taken for the answer
  EXPECT_GT(needs[0], 0);
  EXPECT_DOUBLE_EQ(needs[0], response.metrics.value("task_peak_mb", -1.0));
}

TEST(HarnessServer, NotReadyNamesWhatIsMissingAndIsNotRetried) {
  KFORGE_REQUIRE_TORCH();
  HarnessServerSpec spec = cpu_spec();
  spec.device = "npu:0";  // no torch_npu here
  HarnessServer server(spec);
  const auto first = ask(server, "check", bundled_task_job("001_relu", "x = 1\n", "python"));
  EXPECT_EQ(first.status, "error");
  EXPECT_EQ(first.error_class, "harness_error");
  EXPECT_NE(first.message.find("not ready"), std::string::npos) << first.message;
  EXPECT_NE(first.message.find("torch_npu"), std::string::npos) << first.message;
  const auto start = std::chrono::steady_clock::now();
  const auto second = ask(server, "check", bundled_task_job("001_relu", "x = 1\n", "python"));
  EXPECT_EQ(second.message, first.message);
  EXPECT_LT(seconds_since(start), 1.0);  // answered from memory, no second start
}

TEST(HarnessServer, MissingInterpreterIsAHarnessError) {
  HarnessServerSpec spec = cpu_spec();
  spec.python = "/no/such/python3";
  HarnessServer server(spec);
  const auto response = ask(server, "check", bundled_task_job("001_relu", "x = 1\n", "python"));
  EXPECT_EQ(response.error_class, "harness_error");
  EXPECT_NE(response.message.find("/no/such/python3"), std::string::npos) << response.message;
}

TEST(HarnessServer, InterpreterWithoutTheHarnessExitsBeforeReady) {
  KFORGE_REQUIRE_TORCH();
  HarnessServerSpec spec = cpu_spec();
  spec.harness_dir = testing::fresh_temp_dir("no-harness");
  HarnessServer server(spec);
  const auto response = ask(server, "check", bundled_task_job("001_relu", "x = 1\n", "python"));
  EXPECT_EQ(response.error_class, "harness_error");
  EXPECT_NE(response.message.find("exited before it was ready"), std::string::npos) << response.message;
  EXPECT_NE(response.message.find("kforge_harness"), std::string::npos) << response.message;  // stderr tail
}

TEST(HarnessServer, ManyThreadsShareOneServerAndGetTheirOwnAnswers) {
  KFORGE_REQUIRE_TORCH();
  HarnessServer server(cpu_spec(2));
  const std::string good = read_file(examples_dir() + "/candidates/cpp/001_relu.py");
  std::vector<std::future<bool>> results;
  for (int i = 0; i < 8; ++i) {
    results.push_back(std::async(std::launch::async, [&, i] {
      const bool broken = i % 2 == 1;
      const auto response =
          ask(server, "check", bundled_task_job("001_relu", broken ? kBrokenSyntax : good, "cpp"));
      return broken ? response.error_class == "syntax_error" : response.status == "pass";
    }));
  }
  for (auto& result : results) EXPECT_TRUE(result.get());
  EXPECT_EQ(server.load(), 0);
}

TEST(HarnessServer, DeathFailsRequestsInFlightAndTheNextRequestRestartsIt) {
  KFORGE_REQUIRE_TORCH();
  HarnessServer server(cpu_spec(2));
  const EvalJob reference = bundled_task_job("001_relu");
  ASSERT_EQ(ask(server, "run", reference).status, "pass");
  const pid_t first_pid = server.pid();
  ASSERT_GT(first_pid, 0);

  // A request in flight when the server is killed gets a harness_error, promptly.
  auto endless = std::async(std::launch::async, [&] {
    return ask(server, "run", bundled_task_job("001_relu", kEndlessCandidate, "python"));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(first_pid, SIGKILL), 0);
  const auto lost = endless.get();
  EXPECT_LT(seconds_since(killed_at), 10);
  EXPECT_EQ(lost.status, "error");
  EXPECT_EQ(lost.error_class, "harness_error");
  EXPECT_NE(lost.message.find("died"), std::string::npos) << lost.message;

  // The next request starts a fresh server.
  const auto after = ask(server, "run", reference);
  EXPECT_EQ(after.status, "pass") << after.message;
  EXPECT_GT(server.pid(), 0);
  EXPECT_NE(server.pid(), first_pid);

  // Killed between requests: the next one notices and restarts as well.
  const pid_t second_pid = server.pid();
  ASSERT_EQ(::kill(second_pid, SIGKILL), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto again = ask(server, "run", reference);
  EXPECT_EQ(again.status, "pass") << again.message;
  EXPECT_NE(server.pid(), second_pid);
}

TEST(HarnessServer, FitsRequestsIntoTheStageTimeout) {
  KFORGE_REQUIRE_TORCH();
  HarnessServer server(cpu_spec(1));
  ASSERT_EQ(ask(server, "run", bundled_task_job("001_relu")).status, "pass");  // started

  // No time left for a child at all (a tenth of a second, less the answer's fifth: under the
  // least a child is given): said at once, as a timeout the stage could not judge.
  const auto late = ask(server, "run", bundled_task_job("001_relu"), 60, 0.1);
  EXPECT_EQ(late.status, "error");
  EXPECT_EQ(late.error_class, "timeout") << late.message;

  // The child's limit is cut to fit: the harness itself reports the timeout in time.
  auto start = std::chrono::steady_clock::now();
  const auto cut = ask(server, "run", bundled_task_job("001_relu", kEndlessCandidate, "python"), 60, 5);
  EXPECT_LT(seconds_since(start), 5);
  EXPECT_EQ(cut.status, "fail");
  EXPECT_EQ(cut.error_class, "timeout") << cut.message;

  // A server that stops answering: the wait ends with the stage's deadline.
  const pid_t pid = server.pid();
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  start = std::chrono::steady_clock::now();
  const auto silent = ask(server, "run", bundled_task_job("001_relu"), 60, 4);
  const double waited = seconds_since(start);
  ::kill(pid, SIGCONT);
  EXPECT_GT(waited, 3);
  EXPECT_LT(waited, 10);
  EXPECT_EQ(silent.error_class, "harness_error");
  EXPECT_NE(silent.message.find("no answer"), std::string::npos) << silent.message;
}

TEST(HarnessServer, SlowChildEndsAsTimeoutOrWhenTheRunIsCancelled) {
  KFORGE_REQUIRE_TORCH();
  HarnessServer server(cpu_spec(2));
  const EvalJob endless = bundled_task_job("001_relu", kEndlessCandidate, "python");
  const auto response = ask(server, "run", endless, 3);
  EXPECT_EQ(response.status, "fail");
  EXPECT_EQ(response.error_class, "timeout") << response.message;

  const auto start = std::chrono::steady_clock::now();
  CallBudget budget = CallBudget::of(60, std::numeric_limits<double>::infinity(),
                                     [&] { return seconds_since(start) > 1; });
  const auto cancelled = server.call(harness_request("run", endless, "python", ChildLimits{60, 4096, 300}), budget);
  EXPECT_LT(seconds_since(start), 5);
  EXPECT_EQ(cancelled.error_class, "harness_error");
  EXPECT_NE(cancelled.message.find("cancelled"), std::string::npos) << cancelled.message;
}

TEST(SharedHarnessServer, OneServerPerKeyWhileHeld) {
  auto a = shared_harness_server(cpu_spec(3));
  auto b = shared_harness_server(cpu_spec(3));
  EXPECT_EQ(a.get(), b.get());
  HarnessServerSpec other = cpu_spec(3);
  other.mode = "spawn";
  EXPECT_NE(shared_harness_server(other).get(), a.get());
}

// A stand-in for the harness server that answers each request as its candidate code
// says: valid JSON, a lone surrogate escape or a raw invalid byte inside an answer that
// starts with its id, or a line that names no request. Plain Python, no torch.
const char* kHostileServer = R"PY(import json, sys
out = sys.stdout.buffer
out.write(json.dumps({"ready": True, "device": "cpu", "torch": "none"}).encode() + b"\n")
out.flush()
for line in sys.stdin.buffer:
    request = json.loads(line)
    code = (request.get("candidate") or {}).get("code") or ""
    head = b'{"id":' + json.dumps(request["id"]).encode()
    if code == "lone-surrogate":
        out.write(head + b',"status":"fail","error_class":"runtime_error","message":"boom \\ud800 here"}\n')
    elif code == "raw-bytes":
        out.write(head + b',"status":"fail","error_class":"runtime_error","log_tail":"\xff\xfe\x80"}\n')
    elif code == "no-id":
        out.write(b"Traceback (most recent call last): \xff\n")
    else:
        out.write(json.dumps({"id": request["id"], "status": "pass"}).encode() + b"\n")
    out.flush()
)PY";

HarnessResponse ask_hostile(HarnessServer& server, const std::string& code) {
  const json request = {{"action", "check"}, {"candidate", {{"code", code}, {"language", "python"}}}};
  return server.call(request, CallBudget::of(60, std::numeric_limits<double>::infinity()));
}

HarnessServerSpec hostile_spec() {
  const std::string dir = testing::fresh_temp_dir("hostile-harness");
  ::mkdir((dir + "/kforge_harness").c_str(), 0755);
  testing::write_file(dir + "/kforge_harness/__init__.py", "");
  testing::write_file(dir + "/kforge_harness/__main__.py", kHostileServer);
  HarnessServerSpec spec = cpu_spec(2);
  spec.python = "/usr/bin/python3";
  spec.harness_dir = dir;
  return spec;
}

TEST(HarnessServer, AnAnswerThatIsNotValidJsonIsAHarnessErrorAtOnce) {
  // Before, the line was dropped and the request waited out its budget (90 s here).
  HarnessServer server(hostile_spec());
  ASSERT_EQ(ask_hostile(server, "fine").status, "pass");
  const pid_t pid = server.pid();
  for (const char* code : {"lone-surrogate", "raw-bytes"}) {
    const auto start = std::chrono::steady_clock::now();
    const auto response = ask_hostile(server, code);
    EXPECT_LT(seconds_since(start), 5) << code;
    EXPECT_EQ(response.status, "error") << code;
    EXPECT_EQ(response.error_class, "harness_error") << code;
    EXPECT_NE(response.message.find("not valid JSON"), std::string::npos) << response.message;
    EXPECT_NE(response.message.find("parse error"), std::string::npos) << response.message;
    EXPECT_FALSE(json(response.message).dump(-1, ' ', false, json::error_handler_t::strict).empty());
  }
  EXPECT_EQ(server.pid(), pid);  // the server is fine: only that answer was lost
  EXPECT_EQ(ask_hostile(server, "fine").status, "pass");
}

TEST(HarnessServer, ALineThatNamesNoRequestRestartsTheServer) {
  HarnessServer server(hostile_spec());
  ASSERT_EQ(ask_hostile(server, "fine").status, "pass");
  const pid_t pid = server.pid();
  const auto start = std::chrono::steady_clock::now();
  const auto lost = ask_hostile(server, "no-id");
  EXPECT_LT(seconds_since(start), 5);
  EXPECT_EQ(lost.error_class, "harness_error");
  EXPECT_NE(lost.message.find("names no request"), std::string::npos) << lost.message;
  EXPECT_NE(lost.message.find("\\xff"), std::string::npos) << lost.message;  // the byte, escaped
  const auto after = ask_hostile(server, "fine");
  EXPECT_EQ(after.status, "pass") << after.message;
  EXPECT_NE(server.pid(), pid);
}

TEST(LeadingAnswerId, ReadsTheIdOfALineThatDoesNotParse) {
  EXPECT_EQ(leading_answer_id(R"({"id":"17","message":"\ud800"})"), "17");
  EXPECT_EQ(leading_answer_id(R"( { "id" : "3" , "status":"pass")"), "3");
  EXPECT_EQ(leading_answer_id(R"({"id":42})"), "42");
  EXPECT_EQ(leading_answer_id(R"({"status":"pass","id":"1"})"), std::nullopt);
  EXPECT_EQ(leading_answer_id(R"({"id":"1x"})"), std::nullopt);
  EXPECT_EQ(leading_answer_id(R"({"id":"12)"), std::nullopt);
  EXPECT_EQ(leading_answer_id("Traceback (most recent call last):"), std::nullopt);
  EXPECT_EQ(leading_answer_id(""), std::nullopt);
}

TEST(HarnessServer, HostileTextFromACandidateKeepsItsVerdict) {
  // A lone surrogate in the candidate's exception reaches the answer as U+FFFD: the
  // verdict is the candidate's runtime_error, at once, not a harness_error after the budget.
  KFORGE_REQUIRE_TORCH();
  HarnessServer server(cpu_spec(1));
  const std::string code =
      "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
      "        raise ValueError('bad \\ud800 text \\udfff')\n";
  const auto response = ask(server, "run", bundled_task_job("001_relu", code, "python"));
  EXPECT_EQ(response.status, "fail") << response.message;
  EXPECT_EQ(response.error_class, "runtime_error") << response.message;
  EXPECT_NE(response.message.find("bad \xef\xbf\xbd text \xef\xbf\xbd"), std::string::npos) << response.message;
}

TEST(HarnessResponse, RejectsUnknownStatus) {
  const auto response = HarnessResponse::from_json({{"id", "1"}, {"status", "maybe"}});
  EXPECT_EQ(response.status, "error");
  EXPECT_EQ(response.error_class, "harness_error");
}

TEST(NormaliseDevice, AcceptsTheThreeKinds) {
  EXPECT_EQ(normalise_device("cpu"), "cpu");
  EXPECT_EQ(normalise_device("cuda"), "cuda:0");
  EXPECT_EQ(normalise_device("cuda:3"), "cuda:3");
  EXPECT_EQ(normalise_device("npu:1"), "npu:1");
  EXPECT_THROW(normalise_device("gpu:0"), std::invalid_argument);
  EXPECT_THROW(normalise_device("cpu:1"), std::invalid_argument);
}

TEST(HarnessPool, UnusableInterpreterBecomesAHarnessError) {
  HarnessSettings settings = testing::test_harness_settings();
  settings.python = "kforge-no-such-python";
  HarnessPool pool(settings);
  const auto response = pool.call(harness_request("check", bundled_task_job("001_relu", "x = 1\n", "python"), "python", {}),
                                  DeviceUse::None, CallBudget::of(5, 10));
  EXPECT_EQ(response.error_class, "harness_error");
  EXPECT_NE(response.message.find("kforge-no-such-python"), std::string::npos);
  settings.devices = {"tpu"};
  EXPECT_THROW(HarnessPool{settings}, std::invalid_argument);
}

TEST(ResolvePython, ExplicitAndEnvironmentChoices) {
  KFORGE_REQUIRE_TORCH();
  EXPECT_EQ(resolve_python(testing::test_python()), testing::test_python());
  EXPECT_THROW(resolve_python("kforge-no-such-python"), std::runtime_error);
  ::setenv("KFORGE_PYTHON", testing::test_python().c_str(), 1);
  EXPECT_EQ(resolve_python("auto"), testing::test_python());
  ::unsetenv("KFORGE_PYTHON");
  // Whatever auto picks must be able to import torch (here, at least the test interpreter can).
  const std::string picked = resolve_python("auto");
  EXPECT_TRUE(run_command({{picked, "-c", "import torch"}, {}, {}}, RunLimits::within(120)).ok()) << picked;
}

TEST(LocateHarnessDir, ParameterThenEnvironmentThenSourceTree) {
  EXPECT_EQ(locate_harness_dir(testing::harness_dir()), testing::harness_dir());
  EXPECT_THROW(locate_harness_dir("/no/such/harness"), std::runtime_error);
  ::setenv("KFORGE_HARNESS_DIR", "/no/such/harness", 1);
  EXPECT_THROW(locate_harness_dir(""), std::runtime_error);
  ::unsetenv("KFORGE_HARNESS_DIR");
  EXPECT_EQ(locate_harness_dir(""), testing::harness_dir());
}

// A test binary is no installed plugin: the library comes from the build tree it was built in.
TEST(LocateArenaAllocator, TheBuildTreesLibraryOutsideAnInstall) {
  EXPECT_EQ(locate_arena_allocator(), KFORGE_ARENA_ALLOCATOR_FILE);
}

}  // namespace
}  // namespace kforge::eval
