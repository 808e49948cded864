// A small OpenAI-compatible HTTP/1.1 server on 127.0.0.1 (an ephemeral port) for tests:
// one thread per connection, keep-alive, and faults on demand (slow answers, dropped
// connections, truncated bodies), so the client's behaviour on each can be asserted.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace kforge::llm::testing {

struct HttpRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

struct HttpReply {
  enum class Fault {
    none,
    drop,     // close the connection without answering
    truncate,        // announce the whole body, send half of it, close
    no_status_line   // send the body alone, no status line or headers (HTTP/0.9 style), close
  };
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  double delay_s = 0;  // wait this long before answering
  Fault fault = Fault::none;
};

// A chat.completions answer carrying `content`.
std::string chat_answer(const std::string& content, int prompt_tokens = 10,
                        int completion_tokens = 20, const std::string& model = "test-model");
// An OpenAI-style error body.
std::string error_body(const std::string& message);

class LoopbackServer {
 public:
  using Handler = std::function<HttpReply(const HttpRequest&)>;

  explicit LoopbackServer(Handler handler);
  ~LoopbackServer();
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  std::string base_url() const;  // http://127.0.0.1:PORT/v1
  int port() const { return port_; }
  int request_count() const { return request_count_.load(); }
  int peak_in_flight() const { return peak_in_flight_.load(); }
  std::vector<HttpRequest> requests() const;
  // Closes the listening socket and every connection; later requests are refused.
  void stop();

 private:
  void accept_loop();
  void serve(int fd);
  bool wait_or_stop(double seconds);

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> request_count_{0};
  std::atomic<int> in_flight_{0};
  std::atomic<int> peak_in_flight_{0};
  mutable std::mutex mutex_;
  std::condition_variable stop_signal_;
  std::vector<HttpRequest> requests_;
  std::set<int> open_fds_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

}  // namespace kforge::llm::testing
