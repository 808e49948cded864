// Cassettes: recorded LLM answers in a JSONL file, so pipelines run offline, repeatably
// and for free. Two kinds of line:
//
//   {"key": "<sha256 hex of request_key_material>", "model": "...", "sample": 0,
//    "context": {...}, "response": {"content": "...", "usage": {...}}, "duration_s": 1.2}
//   {"match": {"task": "relu", "sample": 0, "round": 0, "purpose": "generate",
//              "model": "deepseek-chat"}, "response": {"content": "..."}}
//
// Keyed lines are what recording writes; selector lines are for cassettes written by
// hand. Lookup: the exact key first; else the selector lines whose every field equals
// the request's context (fields left out match anything), the most specific one winning;
// two equally specific matches are an error, never a silent pick.
#pragma once

#include "chat.hpp"

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

namespace kforge::llm {

// The readable half of a cassette: which requests a hand-written answer is for.
struct Selector {
  std::optional<std::string> task;
  std::optional<int> sample;
  std::optional<int> round;
  std::optional<std::string> purpose;
  std::optional<std::string> model;  // the model as the pipeline names it

  bool matches(const RequestContext& context) const;
  int specificity() const;  // number of fields given
  std::string describe() const;
};

struct CassetteEntry {
  std::optional<std::string> key;   // keyed line
  std::optional<Selector> selector;  // selector line
  std::string content;
  Usage usage;
  std::string model;  // model id that answered, when recorded
  std::string finish_reason;
  double duration_s = 0;
  int line = 0;  // 1-based line in the file
};

class Cassette {
 public:
  // One object per file in the process, so that stages recording into the same file
  // take turns writing whole lines. A file that does not exist is an error unless
  // `create` is set (recording starts a new cassette).
  static std::shared_ptr<Cassette> open(const std::string& path, bool create);

  // Reads a cassette; throws std::runtime_error naming file:line for a bad line.
  explicit Cassette(std::string path, bool create);
  ~Cassette();
  Cassette(const Cassette&) = delete;
  Cassette& operator=(const Cassette&) = delete;

  // The entry for a request (see the lookup rule above), or nullopt. Throws when two
  // selector lines match equally well.
  std::optional<CassetteEntry> find(const std::string& key, const RequestContext& context) const;

  // Appends a keyed line for an answer and flushes it, so an interrupted recording keeps
  // every answer it got.
  void append(const std::string& key, const ChatRequest& request, const ChatResult& result);

  const std::string& path() const { return path_; }
  size_t size() const;

 private:
  void add(CassetteEntry entry);

  std::string path_;
  mutable std::shared_mutex mutex_;
  std::map<std::string, CassetteEntry> by_key_;
  std::vector<CassetteEntry> selectors_;
  int lines_ = 0;
  std::FILE* writer_ = nullptr;  // opened on the first append
};

struct CassetteOptions {
  // A miss with no live backend is an error (LlmError cassette_miss). With a live
  // backend, misses are asked live; `record` then appends the answer to the cassette.
  bool record = false;
  // Served answers wait their recorded duration times this factor (0: answer at once),
  // so a benchmark on a cassette can feel like the real API.
  double latency_scale = 0;
  Pricing pricing;
};

// Serves answers from a cassette; on a miss asks `live` (when given) and, when recording,
// appends what it answered.
class CassetteBackend : public ChatBackend {
 public:
  CassetteBackend(std::shared_ptr<Cassette> cassette, std::shared_ptr<ChatBackend> live,
                  CassetteOptions options);
  ChatResult complete(const ChatRequest& request) override;

 private:
  std::shared_ptr<Cassette> cassette_;
  std::shared_ptr<ChatBackend> live_;
  CassetteOptions options_;
};

}  // namespace kforge::llm
