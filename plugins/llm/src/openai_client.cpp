#include "openai_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <mutex>
#include <optional>
#include <sstream>

namespace kforge::llm {

namespace {

// An answer larger than this is a misbehaving server, not a kernel.
constexpr size_t kMaxBodyBytes = 32u << 20;
constexpr double kConnectTimeoutS = 30;
constexpr size_t kMaxErrorChars = 600;
// A wait this long (a year) is as good as none, and fits every clock and libcurl's long.
constexpr double kUnboundedSeconds = 365.0 * 24 * 3600;

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string shorten(std::string text, size_t limit) {
  if (text.size() <= limit) return text;
  text.resize(limit);
  return text + "...";
}

std::string format_seconds(double s) {
  std::ostringstream out;
  out.precision(s < 10 ? 2 : 0);
  out << std::fixed << s << " s";
  return out.str();
}

// libcurl failures that another try will not cure: the URL or TLS setup is wrong. Not
// CURLE_UNSUPPORTED_PROTOCOL: the URL's scheme was checked when the model was resolved, so
// curl says it of an answer without a status line (HTTP/0.9), a server's fault of the
// moment like any garbled answer.
bool is_permanent_transport_error(CURLcode code) {
  switch (code) {
    case CURLE_URL_MALFORMAT:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
      return true;
    default:
      return false;
  }
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  size_t bytes = size * count;
  if (body->size() + bytes > kMaxBodyBytes) return 0;
  body->append(data, bytes);
  return bytes;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* cancelled = static_cast<const std::function<bool()>*>(user);
  return (*cancelled && (*cancelled)()) ? 1 : 0;
}

}  // namespace

ChatResult parse_chat_response(const std::string& body) {
  nlohmann::json answer = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded()) {
    throw std::runtime_error("the answer is not valid JSON (" + std::to_string(body.size()) +
                             " bytes): " + shorten(body, 200));
  }
  if (!answer.is_object()) throw std::runtime_error("the answer is not a JSON object");
  auto choices = answer.find("choices");
  if (choices == answer.end() || !choices->is_array() || choices->empty()) {
    if (answer.contains("error")) {
      throw std::runtime_error("the answer carries an error: " + server_error_message(body));
    }
    throw std::runtime_error("the answer has no choices");
  }
  const nlohmann::json& choice = (*choices)[0];
  auto message = choice.find("message");
  if (message == choice.end() || !message->is_object()) {
    throw std::runtime_error("the first choice has no message object");
  }
  ChatResult result;
  if (auto reason = choice.find("finish_reason"); reason != choice.end() && reason->is_string()) {
    result.finish_reason = reason->get<std::string>();
  }
  auto content = message->find("content");
  if (content == message->end() || content->is_null()) {
    // No text at all is the API's failure (a refusal, a filter, an overloaded server), not
    // a candidate that wrote no code: it is retried, then the job's llm_error.
    std::string why = "message.content is " + std::string(content == message->end() ? "missing" : "null");
    if (!result.finish_reason.empty()) why += " (finish_reason: " + result.finish_reason + ")";
    if (auto refusal = message->find("refusal"); refusal != message->end() && refusal->is_string()) {
      why += "; refusal: " + shorten(refusal->get<std::string>(), 200);
    }
    throw std::runtime_error(why + ": the answer holds no text");
  }
  if (!content->is_string()) throw std::runtime_error("message.content is neither a string nor null");
  result.content = content->get<std::string>();
  if (auto model = answer.find("model"); model != answer.end() && model->is_string()) {
    result.model = model->get<std::string>();
  }
  if (auto usage = answer.find("usage"); usage != answer.end() && usage->is_object()) {
    result.usage.prompt_tokens = usage->value("prompt_tokens", int64_t{0});
    result.usage.completion_tokens = usage->value("completion_tokens", int64_t{0});
  }
  return result;
}

std::string server_error_message(const std::string& body) {
  nlohmann::json answer = nlohmann::json::parse(body, nullptr, false);
  if (answer.is_object()) {
    auto error = answer.find("error");
    if (error != answer.end()) {
      if (error->is_string()) return shorten(error->get<std::string>(), kMaxErrorChars);
      if (error->is_object() && error->contains("message") && (*error)["message"].is_string()) {
        return shorten((*error)["message"].get<std::string>(), kMaxErrorChars);
      }
    }
    if (answer.contains("message") && answer["message"].is_string()) {
      return shorten(answer["message"].get<std::string>(), kMaxErrorChars);
    }
  }
  if (body.empty()) return "(empty body)";
  return shorten(body, kMaxErrorChars);
}

// One HTTP exchange: transport outcome, status and body.
struct OpenAiClient::Exchange {
  CURLcode code = CURLE_OK;
  std::string transport_error;
  long status = 0;
  std::string body;
  std::optional<double> retry_after_s;
};

OpenAiClient::OpenAiClient(OpenAiConfig config)
    : config_(std::move(config)),
      concurrency_(config_.max_concurrency),
      rate_(config_.requests_per_minute) {
  init_curl_once();
  url_ = config_.base_url;
  while (!url_.empty() && url_.back() == '/') url_.pop_back();
  url_ += "/chat/completions";
}

OpenAiClient::~OpenAiClient() {
  for (void* handle : idle_handles_) curl_easy_cleanup(static_cast<CURL*>(handle));
}

void* OpenAiClient::take_handle() {
  {
    std::lock_guard lock(pool_mutex_);
    if (!idle_handles_.empty()) {
      void* handle = idle_handles_.back();
      idle_handles_.pop_back();
      return handle;
    }
  }
  CURL* handle = curl_easy_init();
  if (handle == nullptr) throw LlmError(LlmError::Kind::api, "libcurl could not make a handle");
  return handle;
}

void OpenAiClient::return_handle(void* handle) {
  std::lock_guard lock(pool_mutex_);
  idle_handles_.push_back(handle);
}

std::string OpenAiClient::redact(std::string text) const {
  const std::string& key = config_.api_key;
  if (key.empty()) return text;
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at)) {
    text.replace(at, key.size(), "[redacted]");
  }
  return text;
}

OpenAiClient::Exchange OpenAiClient::post(const std::string& body, double timeout_s,
                                          const std::function<bool()>& cancelled) {
  auto* handle = static_cast<CURL*>(take_handle());
  // Returned to the pool on every path, so its connection is kept for the next request.
  struct Release {
    OpenAiClient* client;
    CURL* handle;
    ~Release() { client->return_handle(handle); }
  } release{this, handle};
  curl_easy_reset(handle);

  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Accept: application/json");
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  if (!config_.api_key.empty()) {
    std::string auth = "Authorization: Bearer " + config_.api_key;
    headers = curl_slist_append(headers, auth.c_str());
    std::fill(auth.begin(), auth.end(), '\0');
  }
  struct FreeHeaders {
    curl_slist* list;
    ~FreeHeaders() { curl_slist_free_all(list); }
  } free_headers{headers};

  Exchange exchange;
  char error_buffer[CURL_ERROR_SIZE] = {0};
  auto timeout_ms = static_cast<long>(std::clamp(std::ceil(timeout_s * 1000), 1.0, kUnboundedSeconds * 1000));
  curl_easy_setopt(handle, CURLOPT_URL, url_.c_str());
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(handle, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &exchange.body);
  curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS,
                   std::min(timeout_ms, static_cast<long>(kConnectTimeoutS * 1000)));
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);  // signals and threads do not mix
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(handle, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, &on_progress);
  curl_easy_setopt(handle, CURLOPT_XFERINFODATA, &cancelled);

  exchange.code = curl_easy_perform(handle);
  if (exchange.code != CURLE_OK) {
    exchange.transport_error = error_buffer[0] != '\0' ? std::string(error_buffer)
                                                       : curl_easy_strerror(exchange.code);
    return exchange;
  }
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &exchange.status);
  curl_header* retry_after = nullptr;
  if (curl_easy_header(handle, "Retry-After", 0, CURLH_HEADER, -1, &retry_after) == CURLHE_OK) {
    exchange.retry_after_s = parse_retry_after(retry_after->value, std::time(nullptr));
  }
  return exchange;
}

ChatResult OpenAiClient::complete(const ChatRequest& request) {
  const auto started = Clock::now();
  // A stage timeout is at most 1e9 s; anything beyond a year is "no deadline" here, where
  // it would overflow the clock's nanoseconds.
  const bool bounded = request.seconds_left < kUnboundedSeconds;
  const auto deadline =
      bounded ? started + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(std::max(0.0, request.seconds_left)))
              : Clock::time_point::max();
  const std::string body = dump_json(chat_request_body(request));
  const std::string who = "model " + config_.name + " at " + url_;
  const int max_attempts = 1 + std::max(0, config_.retry.max_retries);
  auto seconds_to_deadline = [&] {
    return bounded ? std::chrono::duration<double>(deadline - Clock::now()).count()
                   : std::numeric_limits<double>::infinity();
  };
  auto cancelled_error = [&](int attempts) {
    return LlmError(LlmError::Kind::cancelled, "request to " + who + " cancelled", attempts);
  };

  std::string last_problem;
  for (int attempt = 1;; ++attempt) {
    if (request.cancelled && request.cancelled()) throw cancelled_error(attempt - 1);
    if (!concurrency_.acquire(request.cancelled, deadline)) {
      if (request.cancelled && request.cancelled()) throw cancelled_error(attempt - 1);
      throw LlmError(LlmError::Kind::api,
                     "stage timeout reached while waiting for a free request slot of " + who +
                         (last_problem.empty() ? "" : "; last problem: " + last_problem),
                     attempt - 1);
    }
    Exchange exchange;
    double budget = 0;
    {
      ConcurrencySlot slot(concurrency_);
      auto send_at = rate_.reserve(Clock::now());
      if (send_at > deadline) {
        throw LlmError(LlmError::Kind::api,
                       "the requests_per_minute limit of " + who +
                           " would delay this request past the stage timeout",
                       attempt - 1);
      }
      if (!sleep_until(send_at, request.cancelled)) throw cancelled_error(attempt - 1);
      budget = std::min(config_.timeout_s, seconds_to_deadline());
      if (budget <= 0) {
        throw LlmError(LlmError::Kind::api, "stage timeout reached before " + who + " answered" +
                                                (last_problem.empty() ? "" : "; last problem: " +
                                                                                 last_problem),
                       attempt - 1);
      }
      exchange = post(body, budget, request.cancelled);
    }
    // Everything said below derives from the body; a server that echoes the key (some
    // put it in their 401 message) must not get it into errors, logs or cassettes, not
    // even a piece of it cut off by a shortened message.
    exchange.body = redact(std::move(exchange.body));

    bool retryable = true;
    if (exchange.code == CURLE_ABORTED_BY_CALLBACK) throw cancelled_error(attempt);
    if (exchange.code == CURLE_OPERATION_TIMEDOUT) {
      last_problem = "timeout: no complete answer within " + format_seconds(budget);
    } else if (exchange.code == CURLE_WRITE_ERROR) {
      last_problem = "the answer is larger than " + std::to_string(kMaxBodyBytes >> 20) + " MiB";
      retryable = false;
    } else if (exchange.code != CURLE_OK) {
      last_problem = "connection error: " + exchange.transport_error;
      retryable = !is_permanent_transport_error(exchange.code);
    } else if (exchange.status == 200) {
      try {
        ChatResult result = parse_chat_response(exchange.body);
        if (result.model.empty()) result.model = request.model;
        result.cost_usd = config_.pricing.cost(result.usage);
        result.attempts = attempt;
        result.latency_s = std::chrono::duration<double>(Clock::now() - started).count();
        return result;
      } catch (const std::exception& e) {
        last_problem = std::string("malformed answer: ") + e.what();
      }
    } else {
      last_problem = "HTTP " + std::to_string(exchange.status) + ": " +
                     server_error_message(exchange.body);
      retryable = is_retryable_status(exchange.status);
    }

    if (!retryable) {
      const char* outcome = exchange.status != 0 ? " refused the request: " : " cannot be used: ";
      throw LlmError(LlmError::Kind::api, who + outcome + last_problem, attempt);
    }
    if (attempt == max_attempts) {
      throw LlmError(LlmError::Kind::api,
                     who + " failed " + std::to_string(attempt) +
                         " times; last problem: " + last_problem,
                     attempt);
    }
    double wait_s = exchange.retry_after_s ? *exchange.retry_after_s
                                           : config_.retry.backoff_s(attempt);
    // A server asking for a longer pause than we would ever back off (a spent daily
    // quota) is better reported now than waited out.
    if (exchange.retry_after_s && wait_s > config_.retry.max_backoff_s) {
      throw LlmError(LlmError::Kind::api,
                     who + ": " + last_problem + "; the server asks to wait " +
                         format_seconds(wait_s) + " (Retry-After), more than backoff_max (" +
                         format_seconds(config_.retry.max_backoff_s) + ")",
                     attempt);
    }
    if (wait_s > seconds_to_deadline()) {
      throw LlmError(LlmError::Kind::api,
                     who + ": " + last_problem + "; the next try (in " + format_seconds(wait_s) +
                         ") would pass the stage timeout",
                     attempt);
    }
    if (config_.notice) {
      config_.notice(who + ": " + last_problem + "; retry " + std::to_string(attempt) + "/" +
                     std::to_string(max_attempts - 1) + " in " + format_seconds(wait_s) +
                     (exchange.retry_after_s ? " (Retry-After)" : ""));
    }
    auto wait = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::min(wait_s, kUnboundedSeconds)));
    if (!sleep_until(Clock::now() + wait, request.cancelled)) throw cancelled_error(attempt);
  }
}

}  // namespace kforge::llm
