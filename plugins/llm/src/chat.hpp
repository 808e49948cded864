// The vocabulary every LLM backend speaks: a chat request, its answer, and the error an
// unrecoverable failure raises. Backends (live API, cassette replay, recording) are
// interchangeable behind ChatBackend, so stages never know which one they talk to.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kforge::llm {

struct Message {
  std::string role;  // system | user | assistant
  std::string content;
};

// The parameters that change the answer; they are sent to the API and hashed into the
// cassette key. Unset optionals are not sent, so the server's own defaults apply.
struct SamplingParams {
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> max_tokens;
  std::optional<int64_t> seed;
  nlohmann::json extra_body = nlohmann::json::object();  // merged into the request body
};

// Who is asking, for readable cassette selectors and error messages. Not sent to the API
// and not part of the cassette key.
struct RequestContext {
  std::string task;        // task id (task.id; task.name when the source sets no id)
  int sample = 0;          // candidate sample index, 0..k-1
  int round = 0;           // candidate fix round
  std::string purpose;     // generate | fix
  std::string model_name;  // the model as the pipeline names it (preset name)
};

struct ChatRequest {
  std::string model;  // model id sent to the API
  std::vector<Message> messages;
  SamplingParams params;
  RequestContext context;
  // Seconds this request may take in all, retries and waits included (the stage timeout).
  double seconds_left = std::numeric_limits<double>::infinity();
  // Polled while waiting; true stops the request with LlmError::Kind::cancelled.
  std::function<bool()> cancelled;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// US dollars per million tokens.
struct Pricing {
  double input_per_million = 0;
  double output_per_million = 0;
  double cost(const Usage& usage) const {
    return (static_cast<double>(usage.prompt_tokens) * input_per_million +
            static_cast<double>(usage.completion_tokens) * output_per_million) /
           1e6;
  }
};

struct ChatResult {
  std::string content;
  Usage usage;
  double cost_usd = 0;
  std::string model;          // model id that answered (as the server reports it)
  std::string finish_reason;  // stop | length | ... (empty when unknown)
  double latency_s = 0;       // wall time of this call, retries and waits included
  int attempts = 1;           // HTTP requests made (0 when served from a cassette)
  // Set when a cassette served the answer: the duration recorded with it, and which
  // entry matched ("key <hex>" or "file:line").
  std::optional<double> recorded_latency_s;
  std::string served_from;
};

// An answer could not be had. `kind` tells the stage which verdict to give.
class LlmError : public std::runtime_error {
 public:
  enum class Kind {
    api,            // the server refused (4xx other than 429) or kept failing after retries
    cassette_miss,  // replay found no entry for the request
    cancelled,      // the run is being cancelled
    config          // the backend is misconfigured (missing key variable, bad preset)
  };
  LlmError(Kind kind, const std::string& message, int attempts = 0)
      : std::runtime_error(message), kind_(kind), attempts_(attempts) {}
  Kind kind() const { return kind_; }
  int attempts() const { return attempts_; }

 private:
  Kind kind_;
  int attempts_;
};

// The JSON body of a chat.completions request: model, messages, the sampling parameters
// that are set, then extra_body merged over them.
nlohmann::json chat_request_body(const ChatRequest& request);

// Compact JSON text with sorted keys (nlohmann's objects are ordered maps), so equal
// values give equal text. Invalid UTF-8 (a task file in another encoding) is replaced
// instead of throwing.
std::string dump_json(const nlohmann::json& value);

class ChatBackend {
 public:
  virtual ~ChatBackend() = default;
  // Thread-safe: called concurrently from the stage's threads. Throws LlmError.
  virtual ChatResult complete(const ChatRequest& request) = 0;
};

}  // namespace kforge::llm
