// A client for the OpenAI-compatible `POST {base_url}/chat/completions` protocol, which
// DeepSeek, Zhipu GLM, DashScope (Qwen), vLLM, llama.cpp server and Ollama all speak.
//
// Blocking by design: LLM stages are flagged KF_STAGE_WAITS, so the host calls them on
// threads of their own (one per unit of stage concurrency). Nothing in here serialises
// requests: each call uses its own libcurl easy handle (taken from a pool so connections
// are reused), and the only shared state is the concurrency cap and the rate limiter.
#pragma once

#include "chat.hpp"
#include "retry_policy.hpp"
#include "throttle.hpp"

#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace kforge::llm {

struct OpenAiConfig {
  std::string name;      // the model as the pipeline names it, for messages
  std::string base_url;  // e.g. https://api.deepseek.com, http://127.0.0.1:8000/v1
  // The secret itself (read from the variable api_key_env names). Empty: no
  // Authorization header (local servers). Never logged; redacted from every text the
  // client returns or reports.
  std::string api_key;
  double timeout_s = 300;  // one HTTP request; the request's seconds_left bounds them all
  int max_concurrency = 0;         // requests in flight through this client; <= 0: no cap
  double requests_per_minute = 0;  // <= 0: no limit
  RetryPolicy retry;
  Pricing pricing;
  // Told about each retry ("HTTP 429 ..., retry 2/5 in 1.0 s"); the key never reaches it.
  std::function<void(const std::string&)> notice;
};

// Reads content, usage, model and finish_reason from a chat.completions answer; throws
// std::runtime_error saying what is missing or malformed.
ChatResult parse_chat_response(const std::string& body);

// The human-readable error in an API error body ({"error": {"message": ...}} and the
// variants servers use), else the body itself, shortened.
std::string server_error_message(const std::string& body);

class OpenAiClient : public ChatBackend {
 public:
  explicit OpenAiClient(OpenAiConfig config);
  ~OpenAiClient() override;
  OpenAiClient(const OpenAiClient&) = delete;
  OpenAiClient& operator=(const OpenAiClient&) = delete;

  ChatResult complete(const ChatRequest& request) override;

 private:
  struct Exchange;
  Exchange post(const std::string& body, double timeout_s,
                const std::function<bool()>& cancelled);
  std::string redact(std::string text) const;
  void* take_handle();
  void return_handle(void* handle);

  OpenAiConfig config_;
  std::string url_;
  ConcurrencyLimit concurrency_;
  RateLimiter rate_;
  std::mutex pool_mutex_;
  std::vector<void*> idle_handles_;  // CURL*, kept to reuse their connections
};

}  // namespace kforge::llm
