#include "cassette.hpp"
#include "loopback_server.hpp"
#include "openai_client.hpp"
#include "request_key.hpp"

#include <kforge/sha256.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kforge::llm {
namespace {

using testing::HttpReply;
using testing::HttpRequest;
using testing::LoopbackServer;

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("kforge-llm-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

std::string read_file(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

ChatRequest request_for(const std::string& task, int sample, const std::string& question = "write relu") {
  ChatRequest r;
  r.model = "deepseek-chat";
  r.messages = {{"system", "You write kernels."}, {"user", question}};
  r.params.temperature = 0.7;
  r.params.seed = sample;
  r.context = {task, sample, 0, "generate", "deepseek-chat"};
  return r;
}

// A live server that answers with the question and the seed, so every request gets its own answer.
HttpReply answer_by_question(const HttpRequest& request) {
  auto body = nlohmann::json::parse(request.body);
  std::string question = body["messages"].back()["content"];
  return {200, {}, testing::chat_answer("answer to " + question + " #" + std::to_string(body["seed"].get<int>()), 100, 50)};
}

TEST(RequestKey, CanonicalMaterialCoversWhatChangesTheAnswer) {
  ChatRequest r;
  r.model = "m";
  r.messages = {{"user", "hi"}};
  r.params.temperature = 0.5;
  r.params.seed = 3;
  r.params.extra_body = {{"top_k", 20}};
  r.context.sample = 2;
  EXPECT_EQ(request_key_material(r),
            R"({"messages":[{"content":"hi","role":"user"}],"model":"m","sample":2,"seed":3,"temperature":0.5,"top_k":20})");
  EXPECT_EQ(request_key(r), kforge::sha256_hex(request_key_material(r)));
}

TEST(RequestKey, ChangesWithModelMessagesParametersAndSampleOnly) {
  const ChatRequest base = request_for("relu", 0);
  const std::string key = request_key(base);
  ChatRequest r = base;
  r.seconds_left = 5;
  r.context.task = "other";
  r.context.round = 3;
  EXPECT_EQ(request_key(r), key) << "context and limits are not part of the key";
  r = base;
  r.model = "deepseek-reasoner";
  EXPECT_NE(request_key(r), key);
  r = base;
  r.messages.back().content += ".";
  EXPECT_NE(request_key(r), key);
  r = base;
  r.params.temperature = 0.8;
  EXPECT_NE(request_key(r), key);
  r = base;
  r.params.max_tokens = 100;
  EXPECT_NE(request_key(r), key);
  r = base;
  r.context.sample = 1;
  EXPECT_NE(request_key(r), key);
}

TEST(Cassette, RecordThenReplayRoundTrip) {
  TempDir dir;
  const std::string path = dir.file("tape.jsonl");
  LoopbackServer server(answer_by_question);
  OpenAiConfig config;
  config.name = "deepseek-chat";
  config.base_url = server.base_url();
  config.pricing = {1.0, 2.0};
  auto live = std::make_shared<OpenAiClient>(config);
  std::vector<ChatResult> recorded;
  {
    auto cassette = std::make_shared<Cassette>(path, /*create=*/true);
    CassetteBackend recorder(cassette, live, {true, 0, config.pricing});
    for (int sample = 0; sample < 3; ++sample) recorded.push_back(recorder.complete(request_for("relu", sample)));
    // A request already on the tape is served from it, not asked again.
    recorder.complete(request_for("relu", 1));
    EXPECT_EQ(server.request_count(), 3);
  }
  std::string tape = read_file(path);
  EXPECT_EQ(std::count(tape.begin(), tape.end(), '\n'), 3);
  EXPECT_NE(tape.find(request_key(request_for("relu", 2))), std::string::npos);

  auto cassette = std::make_shared<Cassette>(path, /*create=*/false);
  EXPECT_EQ(cassette->size(), 3u);
  CassetteBackend replay(cassette, nullptr, {false, 0, {1.0, 2.0}});
  for (int sample = 0; sample < 3; ++sample) {
    ChatResult r = replay.complete(request_for("relu", sample));
    EXPECT_EQ(r.content, recorded[sample].content);
    EXPECT_EQ(r.content, "answer to write relu #" + std::to_string(sample));
    EXPECT_EQ(r.usage.prompt_tokens, 100);
    EXPECT_EQ(r.usage.completion_tokens, 50);
    EXPECT_DOUBLE_EQ(r.cost_usd, (100 * 1.0 + 50 * 2.0) / 1e6);
    EXPECT_EQ(r.attempts, 0);
    ASSERT_TRUE(r.recorded_latency_s);
    EXPECT_EQ(r.served_from.rfind("cassette key ", 0), 0u);
  }
  EXPECT_EQ(server.request_count(), 3) << "replay never calls the server";
}

TEST(Cassette, AStrictMissNamesTheKeyAndTheTask) {
  TempDir dir;
  std::ofstream(dir.file("empty.jsonl")) << "";
  CassetteBackend replay(std::make_shared<Cassette>(dir.file("empty.jsonl"), false), nullptr, {});
  ChatRequest r = request_for("softmax_42", 3);
  try {
    replay.complete(r);
    FAIL() << "a miss was served";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), LlmError::Kind::cassette_miss);
    std::string message = e.what();
    EXPECT_NE(message.find(request_key(r)), std::string::npos) << message;
    EXPECT_NE(message.find("softmax_42"), std::string::npos) << message;
    EXPECT_NE(message.find("sample 3"), std::string::npos) << message;
  }
}

TEST(Cassette, ANonStrictMissAsksTheLiveApiWithoutRecording) {
  TempDir dir;
  const std::string path = dir.file("tape.jsonl");
  std::ofstream(path) << "";
  LoopbackServer server(answer_by_question);
  OpenAiConfig config;
  config.base_url = server.base_url();
  CassetteBackend backend(std::make_shared<Cassette>(path, false), std::make_shared<OpenAiClient>(config), {});
  EXPECT_EQ(backend.complete(request_for("relu", 0)).content, "answer to write relu #0");
  EXPECT_EQ(read_file(path), "");
}

TEST(Cassette, SelectorsServeHandWrittenAnswersMostSpecificFirst) {
  TempDir dir;
  const std::string path = dir.file("hand.jsonl");
  const ChatRequest exact = request_for("relu", 5);
  std::ofstream(path)
      << R"({"match": {"task": "relu"}, "response": {"content": "any relu"}})" "\n"
      << R"({"match": {"task": "relu", "sample": 1}, "response": {"content": "relu sample 1", "usage": {"prompt_tokens": 7, "completion_tokens": 9}}, "duration_s": 2.5})" "\n"
      << "\n"
      << R"({"match": {"task": "relu", "purpose": "fix", "round": 1}, "response": {"content": "relu fix 1"}})" "\n"
      << R"({"key": ")" << request_key(exact) << R"(", "response": {"content": "by key"}})" "\n";
  CassetteBackend replay(std::make_shared<Cassette>(path, false), nullptr, {false, 0, {1, 1}});

  EXPECT_EQ(replay.complete(request_for("relu", 0)).content, "any relu");
  ChatResult one = replay.complete(request_for("relu", 1));
  EXPECT_EQ(one.content, "relu sample 1");
  EXPECT_EQ(one.usage.completion_tokens, 9);
  EXPECT_EQ(*one.recorded_latency_s, 2.5);
  EXPECT_EQ(one.served_from, path + ":2");
  EXPECT_EQ(replay.complete(exact).content, "by key") << "the exact key wins over selectors";

  ChatRequest fix = request_for("relu", 0);
  fix.context.purpose = "fix";
  fix.context.round = 1;
  EXPECT_EQ(replay.complete(fix).content, "relu fix 1");
  EXPECT_THROW(replay.complete(request_for("gelu", 0)), LlmError);
}

TEST(Cassette, EquallySpecificSelectorsAreAnErrorNotAGuess) {
  TempDir dir;
  const std::string path = dir.file("hand.jsonl");
  std::ofstream(path) << R"({"match": {"task": "relu", "sample": 0}, "response": {"content": "a"}})" "\n"
                      << R"({"match": {"task": "relu", "round": 0}, "response": {"content": "b"}})" "\n";
  CassetteBackend replay(std::make_shared<Cassette>(path, false), nullptr, {});
  try {
    replay.complete(request_for("relu", 0));
    FAIL();
  } catch (const LlmError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("lines 1"), std::string::npos) << message;
    EXPECT_NE(message.find("and 2"), std::string::npos) << message;
  }
}

std::string load_error(const std::string& text) {
  TempDir dir;
  std::ofstream(dir.file("bad.jsonl")) << text;
  try {
    Cassette cassette(dir.file("bad.jsonl"), false);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Cassette, BadLinesAreErrorsWithTheirLineNumber) {
  const std::string ok = R"({"match": {"task": "a"}, "response": {"content": "x"}})" "\n";
  EXPECT_NE(load_error(ok + "{not json\n").find("bad.jsonl:2: not valid JSON"), std::string::npos);
  EXPECT_NE(load_error(ok + R"({"match": {"tsk": "a"}, "response": {"content": "x"}})").find(":2: unknown selector field \"tsk\""),
            std::string::npos);
  EXPECT_NE(load_error(R"({"match": {"purpose": "review"}, "response": {"content": "x"}})").find("purpose"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"key": "abc", "response": {"content": "x"}})").find("64 lower-case hex"), std::string::npos);
  EXPECT_NE(load_error(R"({"match": {"task": "a"}, "response": {}})").find("string \"content\""), std::string::npos);
  EXPECT_NE(load_error(R"({"response": {"content": "x"}})").find("exactly one of"), std::string::npos);
  EXPECT_NE(load_error(ok + ok).find(":2: repeats the selector of line 1"), std::string::npos);
  const std::string key(64, 'a');
  const std::string keyed = R"({"key": ")" + key + R"(", "response": {"content": "x"}})" "\n";
  EXPECT_NE(load_error(keyed + keyed).find(":2: repeats the key of line 1"), std::string::npos);
}

TEST(Cassette, AMissingFileIsAnErrorUnlessRecording) {
  TempDir dir;
  EXPECT_THROW(Cassette(dir.file("none.jsonl"), false), std::runtime_error);
  Cassette fresh(dir.file("none.jsonl"), true);
  EXPECT_EQ(fresh.size(), 0u);
}

TEST(Cassette, OpenSharesOneObjectPerFile) {
  TempDir dir;
  auto a = Cassette::open(dir.file("t.jsonl"), true);
  auto b = Cassette::open(dir.file("./t.jsonl"), true);
  EXPECT_EQ(a.get(), b.get());
}

TEST(Cassette, LatencyScaleReplaysRecordedDurations) {
  TempDir dir;
  const std::string path = dir.file("slow.jsonl");
  std::ofstream(path) << R"({"match": {"task": "relu"}, "response": {"content": "x"}, "duration_s": 0.2})" "\n";
  auto cassette = std::make_shared<Cassette>(path, false);
  CassetteBackend instant(cassette, nullptr, {false, 0, {}});
  CassetteBackend realistic(cassette, nullptr, {false, 1.0, {}});
  EXPECT_LT(instant.complete(request_for("relu", 0)).latency_s, 0.1);
  double slow = realistic.complete(request_for("relu", 0)).latency_s;
  EXPECT_GE(slow, 0.19);
  EXPECT_LT(slow, 1.0);
}

}  // namespace
}  // namespace kforge::llm
