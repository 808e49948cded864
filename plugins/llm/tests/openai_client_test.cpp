#include "cassette.hpp"
#include "loopback_server.hpp"
#include "openai_client.hpp"

#include <gtest/gtest.h>

#include <limits>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

namespace kforge::llm {
namespace {

using testing::chat_answer;
using testing::error_body;
using testing::HttpReply;
using testing::HttpRequest;
using testing::LoopbackServer;
using Fault = HttpReply::Fault;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

ChatRequest simple_request() {
  ChatRequest r;
  r.model = "test-model";
  r.messages = {{"user", "write relu"}};
  return r;
}

// Answers from a script, one reply per request in order; the last one repeats.
class Script {
 public:
  explicit Script(std::vector<HttpReply> replies) : replies_(std::move(replies)) {}
  HttpReply operator()(const HttpRequest&) {
    std::lock_guard lock(mutex_);
    HttpReply reply = replies_[std::min(next_, replies_.size() - 1)];
    ++next_;
    return reply;
  }

 private:
  std::mutex mutex_;
  std::vector<HttpReply> replies_;
  size_t next_ = 0;
};

// Retries after 10 ms instead of a second, so fault tests stay fast.
OpenAiConfig fast() {
  OpenAiConfig config;
  config.retry.initial_backoff_s = 0.01;
  return config;
}

struct Harness {
  explicit Harness(std::vector<HttpReply> replies, OpenAiConfig base = fast())
      : script(std::move(replies)), server([this](const HttpRequest& r) { return script(r); }) {
    base.name = "test";
    base.base_url = server.base_url();
    base.notice = [this](const std::string& line) {
      std::lock_guard lock(mutex);
      notices.push_back(line);
    };
    client = std::make_unique<OpenAiClient>(base);
  }
  Script script;
  LoopbackServer server;
  std::unique_ptr<OpenAiClient> client;
  std::mutex mutex;
  std::vector<std::string> notices;
};

HttpReply ok(const std::string& content = "done") { return {200, {}, chat_answer(content, 12, 34)}; }

std::string failure_of(OpenAiClient& client, const ChatRequest& request, int* attempts = nullptr) {
  try {
    client.complete(request);
  } catch (const LlmError& e) {
    if (attempts) *attempts = e.attempts();
    return e.what();
  }
  return "(no error)";
}

TEST(OpenAiClient, SendsTheRequestAndReadsTheAnswer) {
  OpenAiConfig config = fast();
  config.api_key = "sk-visible-in-header-only";
  config.pricing = {2.0, 8.0};
  Harness h({ok("```python\nx = 1\n```")}, config);
  ChatRequest request = simple_request();
  request.messages.insert(request.messages.begin(), {"system", "be brief"});
  request.params.temperature = 0.2;
  request.params.top_p = 0.9;
  request.params.max_tokens = 512;
  request.params.seed = 7;
  request.params.extra_body = {{"top_k", 20}};

  ChatResult r = h.client->complete(request);
  EXPECT_EQ(r.content, "```python\nx = 1\n```");
  EXPECT_EQ(r.usage.prompt_tokens, 12);
  EXPECT_EQ(r.usage.completion_tokens, 34);
  EXPECT_DOUBLE_EQ(r.cost_usd, (12 * 2.0 + 34 * 8.0) / 1e6);
  EXPECT_EQ(r.model, "test-model");
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.attempts, 1);
  EXPECT_GT(r.latency_s, 0);

  auto sent = h.server.requests();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].method, "POST");
  EXPECT_EQ(sent[0].path, "/v1/chat/completions");
  EXPECT_EQ(sent[0].headers["authorization"], "Bearer sk-visible-in-header-only");
  EXPECT_EQ(sent[0].headers["content-type"], "application/json");
  auto body = nlohmann::json::parse(sent[0].body);
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][1]["content"], "write relu");
  EXPECT_EQ(body["temperature"], 0.2);
  EXPECT_EQ(body["top_p"], 0.9);
  EXPECT_EQ(body["max_tokens"], 512);
  EXPECT_EQ(body["seed"], 7);
  EXPECT_EQ(body["top_k"], 20);
}

TEST(OpenAiClient, NoKeyMeansNoAuthorizationHeader) {
  Harness h({ok()});
  h.client->complete(simple_request());
  EXPECT_EQ(h.server.requests()[0].headers.count("authorization"), 0u);
}

TEST(OpenAiClient, HonoursRetryAfterOn429) {
  Harness h({{429, {{"Retry-After", "1"}}, error_body("rate limited")}, ok()});
  auto start = Clock::now();
  ChatResult r = h.client->complete(simple_request());
  EXPECT_GE(seconds_since(start), 0.95) << "waited what Retry-After asked, not the 10 ms backoff";
  EXPECT_EQ(r.attempts, 2);
  ASSERT_EQ(h.notices.size(), 1u);
  EXPECT_NE(h.notices[0].find("HTTP 429: rate limited"), std::string::npos) << h.notices[0];
  EXPECT_NE(h.notices[0].find("Retry-After"), std::string::npos) << h.notices[0];
}

TEST(OpenAiClient, ARetryAfterLongerThanBackoffMaxFailsAtOnce) {
  OpenAiConfig config = fast();
  config.retry.max_backoff_s = 5;
  Harness h({{429, {{"Retry-After", "3600"}}, error_body("daily quota spent")}}, config);
  auto start = Clock::now();
  int attempts = 0;
  std::string message = failure_of(*h.client, simple_request(), &attempts);
  EXPECT_LT(seconds_since(start), 1.0);
  EXPECT_EQ(attempts, 1);
  EXPECT_NE(message.find("daily quota spent"), std::string::npos) << message;
  EXPECT_NE(message.find("Retry-After"), std::string::npos) << message;
}

TEST(OpenAiClient, RetriesServerErrorsWithGrowingBackoff) {
  OpenAiConfig config = fast();
  config.retry.initial_backoff_s = 0.1;
  Harness h({{500, {}, error_body("overloaded")}, {503, {}, "upstream down"}, ok()}, config);
  auto start = Clock::now();
  ChatResult r = h.client->complete(simple_request());
  EXPECT_EQ(r.attempts, 3);
  // Waits of [0.05, 0.1] then [0.1, 0.2] seconds.
  EXPECT_GE(seconds_since(start), 0.15);
  EXPECT_EQ(h.notices.size(), 2u);
}

TEST(OpenAiClient, GivesUpAfterMaxRetriesWithTheLastProblem) {
  OpenAiConfig config = fast();
  config.retry.max_retries = 2;
  Harness h({{500, {}, error_body("model crashed")}}, config);
  int attempts = 0;
  std::string message = failure_of(*h.client, simple_request(), &attempts);
  EXPECT_EQ(attempts, 3);
  EXPECT_EQ(h.server.request_count(), 3);
  EXPECT_NE(message.find("failed 3 times"), std::string::npos) << message;
  EXPECT_NE(message.find("HTTP 500: model crashed"), std::string::npos) << message;
}

TEST(OpenAiClient, A400FailsAtOnceWithTheServersMessage) {
  Harness h({{400, {}, error_body("max_tokens must be <= 8192")}, ok()});
  int attempts = 0;
  std::string message = failure_of(*h.client, simple_request(), &attempts);
  EXPECT_EQ(attempts, 1);
  EXPECT_EQ(h.server.request_count(), 1);
  EXPECT_NE(message.find("HTTP 400: max_tokens must be <= 8192"), std::string::npos) << message;
  EXPECT_NE(message.find("refused"), std::string::npos) << message;
}

TEST(OpenAiClient, RetriesMalformedJson) {
  Harness h({{200, {}, "{\"choices\": [oops"}, ok("fine")});
  ChatResult r = h.client->complete(simple_request());
  EXPECT_EQ(r.content, "fine");
  EXPECT_EQ(r.attempts, 2);
  ASSERT_EQ(h.notices.size(), 1u);
  EXPECT_NE(h.notices[0].find("not valid JSON"), std::string::npos) << h.notices[0];
}

TEST(OpenAiClient, AlwaysMalformedAnswersEndInAnErrorSayingSo) {
  OpenAiConfig config = fast();
  config.retry.max_retries = 1;
  Harness h({{200, {}, R"({"object": "chat.completion"})"}}, config);
  std::string message = failure_of(*h.client, simple_request());
  EXPECT_NE(message.find("malformed answer: the answer has no choices"), std::string::npos) << message;
}

TEST(OpenAiClient, AnAnswerWithNullContentIsAnApiErrorNotAnEmptyCandidate) {
  OpenAiConfig config = fast();
  config.retry.max_retries = 1;
  Harness h({{200, {}, R"({"choices": [{"message": {"role": "assistant", "content": null}, "finish_reason": "content_filter"}]})"}},
            config);
  std::string message = failure_of(*h.client, simple_request());
  EXPECT_NE(message.find("message.content is null (finish_reason: content_filter): the answer holds no text"),
            std::string::npos)
      << message;
}

TEST(OpenAiClient, RetriesATruncatedBody) {
  Harness h({{200, {}, chat_answer("never arrives whole"), 0, Fault::truncate}, ok("whole")});
  ChatResult r = h.client->complete(simple_request());
  EXPECT_EQ(r.content, "whole");
  EXPECT_EQ(r.attempts, 2);
}

TEST(OpenAiClient, RetriesADroppedConnection) {
  Harness h({{200, {}, "", 0, Fault::drop}, ok("after drop")});
  ChatResult r = h.client->complete(simple_request());
  EXPECT_EQ(r.content, "after drop");
  EXPECT_EQ(r.attempts, 2);
  EXPECT_NE(h.notices.at(0).find("connection error"), std::string::npos) << h.notices[0];
}

// A proxy or a crashed server that answers without a status line is a fault of the moment
// (curl calls it an unsupported protocol, HTTP/0.9), not a misconfigured URL.
TEST(OpenAiClient, RetriesAnAnswerWithoutAStatusLine) {
  Harness h({{200, {}, "garbage without a status line\r\n", 0, Fault::no_status_line}, ok("after garbage")});
  ChatResult r = h.client->complete(simple_request());
  EXPECT_EQ(r.content, "after garbage");
  EXPECT_EQ(r.attempts, 2);
}

// A stage timeout of the longest duration a pipeline may give (1e9 s) is no deadline to
// the client, not a clock overflow that fails every request at once.
TEST(OpenAiClient, AHugeStageTimeoutIsNoDeadline) {
  Harness h({ok("in time")});
  ChatRequest request = simple_request();
  for (const double seconds : {1e9, 1e20, std::numeric_limits<double>::max()}) {
    request.seconds_left = seconds;
    EXPECT_EQ(h.client->complete(request).content, "in time") << seconds;
  }
}

TEST(OpenAiClient, WaitsForASlowAnswerWithinTheTimeout) {
  OpenAiConfig config = fast();
  config.timeout_s = 2;
  Harness h({{200, {}, chat_answer("slow"), 0.3}}, config);
  auto start = Clock::now();
  EXPECT_EQ(h.client->complete(simple_request()).content, "slow");
  EXPECT_GE(seconds_since(start), 0.29);
}

TEST(OpenAiClient, RetriesAnAnswerSlowerThanTheTimeout) {
  OpenAiConfig config = fast();
  config.timeout_s = 0.2;
  config.retry.max_retries = 1;
  Harness h({{200, {}, chat_answer("late"), 3.0}}, config);
  auto start = Clock::now();
  int attempts = 0;
  std::string message = failure_of(*h.client, simple_request(), &attempts);
  EXPECT_LT(seconds_since(start), 1.5);
  EXPECT_EQ(attempts, 2);
  EXPECT_NE(message.find("timeout: no complete answer within 0.20 s"), std::string::npos) << message;
}

TEST(OpenAiClient, RetriesARefusedConnection) {
  OpenAiConfig config = fast();
  config.retry.max_retries = 2;
  Harness h({ok()}, config);
  h.server.stop();
  int attempts = 0;
  std::string message = failure_of(*h.client, simple_request(), &attempts);
  EXPECT_EQ(attempts, 3);
  EXPECT_NE(message.find("connection error"), std::string::npos) << message;
}

TEST(OpenAiClient, TheStageTimeoutBoundsAllRetries) {
  OpenAiConfig config = fast();
  config.retry.initial_backoff_s = 2;
  Harness h({{500, {}, error_body("busy")}}, config);
  ChatRequest request = simple_request();
  request.seconds_left = 0.5;
  auto start = Clock::now();
  std::string message = failure_of(*h.client, request);
  EXPECT_LT(seconds_since(start), 0.5);
  EXPECT_NE(message.find("would pass the stage timeout"), std::string::npos) << message;
}

TEST(OpenAiClient, CancellationStopsAWaitingRequest) {
  Harness h({{200, {}, chat_answer("too late"), 10.0}});
  std::atomic<bool> cancel{false};
  ChatRequest request = simple_request();
  request.cancelled = [&] { return cancel.load(); };
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  auto start = Clock::now();
  try {
    h.client->complete(request);
    ADD_FAILURE() << "a cancelled request returned";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), LlmError::Kind::cancelled);
  }
  EXPECT_LT(seconds_since(start), 2.0);
  canceller.join();
}

// The host runs a waiting stage on one thread per unit of concurrency; nothing in the
// client may serialise those threads.
TEST(OpenAiClient, ThirtyTwoConcurrentRequestsOverlap) {
  OpenAiConfig config = fast();
  config.max_concurrency = 32;
  Harness h({{200, {}, chat_answer("ok"), 0.2}}, config);
  std::vector<std::thread> threads;
  std::atomic<int> succeeded{0};
  auto start = Clock::now();
  for (int i = 0; i < 32; ++i) {
    threads.emplace_back([&] {
      if (h.client->complete(simple_request()).content == "ok") ++succeeded;
    });
  }
  for (auto& t : threads) t.join();
  double wall = seconds_since(start);
  EXPECT_EQ(succeeded, 32);
  EXPECT_LT(wall, 1.0) << "32 requests of 200 ms each took " << wall << " s";
  EXPECT_GE(h.server.peak_in_flight(), 16);
}

TEST(OpenAiClient, MaxConcurrencyCapsRequestsInFlight) {
  OpenAiConfig config = fast();
  config.max_concurrency = 2;
  Harness h({{200, {}, chat_answer("ok"), 0.1}}, config);
  std::vector<std::thread> threads;
  auto start = Clock::now();
  for (int i = 0; i < 8; ++i) threads.emplace_back([&] { h.client->complete(simple_request()); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(h.server.peak_in_flight(), 2);
  EXPECT_GE(seconds_since(start), 0.39);
}

TEST(OpenAiClient, RequestsPerMinuteSpacesRequests) {
  OpenAiConfig config = fast();
  config.requests_per_minute = 1200;  // 20 per second, a bucket of 20
  Harness h({ok()}, config);
  std::vector<std::thread> threads;
  auto start = Clock::now();
  for (int i = 0; i < 30; ++i) threads.emplace_back([&] { h.client->complete(simple_request()); });
  for (auto& t : threads) t.join();
  double wall = seconds_since(start);
  EXPECT_GE(wall, 0.45) << "10 requests past the bucket need 0.5 s at 20/s";
  EXPECT_LT(wall, 2.0);
  EXPECT_EQ(h.server.request_count(), 30);
}

// A recognisable key must reach the server and nothing else: not error messages, not
// notices, not cassettes, not even when the server echoes it back.
TEST(OpenAiClient, TheApiKeyNeverLeaks) {
  const std::string key = "sk-kforge-SECRET-0123456789abcdef";
  std::atomic<int> calls{0};
  LoopbackServer server([&](const HttpRequest& request) -> HttpReply {
    std::string echoed = request.headers.count("authorization") ? request.headers.at("authorization") : "none";
    switch (calls++ % 5) {
      case 0: return {401, {}, error_body("Incorrect API key provided: " + echoed)};
      case 1: return {500, {}, "internal error while checking " + echoed};
      case 2: return {200, {}, "{broken " + echoed};
      case 3: return {200, {}, chat_answer("your key was " + echoed)};
      default: return {429, {{"Retry-After", "0"}}, error_body("slow down, " + echoed)};
    }
  });
  std::vector<std::string> texts;
  OpenAiConfig config = fast();
  config.name = "leaky";
  config.base_url = server.base_url();
  config.api_key = key;
  config.retry.initial_backoff_s = 0.001;
  config.retry.max_retries = 1;
  config.notice = [&](const std::string& line) { texts.push_back(line); };
  auto client = std::make_shared<OpenAiClient>(config);

  const auto dir = std::filesystem::temp_directory_path() / ("kforge-leak-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string tape = (dir / "tape.jsonl").string();
  CassetteBackend recorder(std::make_shared<Cassette>(tape, true), client, {true, 0, {}});
  for (int i = 0; i < 10; ++i) {
    ChatRequest request = simple_request();
    request.context.sample = i;
    request.params.seed = i;
    try {
      texts.push_back(recorder.complete(request).content);
    } catch (const LlmError& e) {
      texts.push_back(e.what());
    }
  }
  std::stringstream written;
  written << std::ifstream(tape).rdbuf();
  texts.push_back(written.str());
  std::filesystem::remove_all(dir);

  ASSERT_GE(calls.load(), 10);
  EXPECT_EQ(server.requests().front().headers.at("authorization"), "Bearer " + key) << "the key was sent";
  EXPECT_NE(written.str().find("[redacted]"), std::string::npos) << "an echoed key was recorded, redacted";
  for (const std::string& text : texts) {
    EXPECT_EQ(text.find(key), std::string::npos) << text;
    EXPECT_EQ(text.find("SECRET"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace kforge::llm
