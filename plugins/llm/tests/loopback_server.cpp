#include "loopback_server.hpp"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <stdexcept>

namespace kforge::llm::testing {

namespace {

bool send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

// Reads one request from `buffer` + the socket; false on EOF or error.
bool read_request(int fd, std::string& buffer, HttpRequest& request) {
  char chunk[8192];
  size_t header_end;
  while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
  }
  std::string head = buffer.substr(0, header_end);
  buffer.erase(0, header_end + 4);
  size_t line_end = head.find("\r\n");
  std::string request_line = head.substr(0, line_end);
  size_t sp1 = request_line.find(' ');
  size_t sp2 = request_line.find(' ', sp1 + 1);
  request = HttpRequest{};
  request.method = request_line.substr(0, sp1);
  request.path = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    size_t end = head.find("\r\n", pos);
    if (end == std::string::npos) end = head.size();
    std::string line = head.substr(pos, end - pos);
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      request.headers[lower(line.substr(0, colon))] = value;
    }
    pos = end + 2;
  }
  size_t length = 0;
  if (auto it = request.headers.find("content-length"); it != request.headers.end()) {
    length = std::stoul(it->second);
  }
  while (buffer.size() < length) {
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
  }
  request.body = buffer.substr(0, length);
  buffer.erase(0, length);
  return true;
}

}  // namespace

std::string chat_answer(const std::string& content, int prompt_tokens, int completion_tokens,
                        const std::string& model) {
  nlohmann::json answer = {
      {"id", "chatcmpl-test"},
      {"object", "chat.completion"},
      {"model", model},
      {"choices",
       {{{"index", 0},
         {"message", {{"role", "assistant"}, {"content", content}}},
         {"finish_reason", "stop"}}}},
      {"usage",
       {{"prompt_tokens", prompt_tokens},
        {"completion_tokens", completion_tokens},
        {"total_tokens", prompt_tokens + completion_tokens}}}};
  return answer.dump();
}

std::string error_body(const std::string& message) {
  return nlohmann::json{{"error", {{"message", message}, {"type", "invalid_request_error"}}}}.dump();
}

LoopbackServer::LoopbackServer(Handler handler) : handler_(std::move(handler)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listen_fd_ < 0) throw std::runtime_error("socket() failed");
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listen_fd_, 256) != 0) {
    ::close(listen_fd_);
    throw std::runtime_error("cannot listen on 127.0.0.1");
  }
  socklen_t size = sizeof address;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &size);
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

LoopbackServer::~LoopbackServer() { stop(); }

std::string LoopbackServer::base_url() const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/v1";
}

std::vector<HttpRequest> LoopbackServer::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

void LoopbackServer::stop() {
  if (stopping_.exchange(true)) return;
  ::shutdown(listen_fd_, SHUT_RDWR);
  ::close(listen_fd_);
  {
    std::lock_guard lock(mutex_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  stop_signal_.notify_all();
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void LoopbackServer::accept_loop() {
  while (!stopping_) {
    int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) {
      if (stopping_) return;
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard lock(mutex_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    open_fds_.insert(fd);
    threads_.emplace_back([this, fd] { serve(fd); });
  }
}

bool LoopbackServer::wait_or_stop(double seconds) {
  std::unique_lock lock(mutex_);
  return !stop_signal_.wait_for(lock, std::chrono::duration<double>(seconds),
                                [this] { return stopping_.load(); });
}

void LoopbackServer::serve(int fd) {
  std::string buffer;
  HttpRequest request;
  while (!stopping_ && read_request(fd, buffer, request)) {
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(request);
    }
    ++request_count_;
    int now_in_flight = ++in_flight_;
    int peak = peak_in_flight_.load();
    while (now_in_flight > peak && !peak_in_flight_.compare_exchange_weak(peak, now_in_flight)) {
    }
    HttpReply reply = handler_(request);
    bool keep_going = reply.delay_s <= 0 || wait_or_stop(reply.delay_s);
    --in_flight_;
    if (!keep_going || reply.fault == HttpReply::Fault::drop) break;
    if (reply.fault == HttpReply::Fault::no_status_line) {
      send_all(fd, reply.body);
      break;
    }
    std::string head = "HTTP/1.1 " + std::to_string(reply.status) + " " +
                       reason_phrase(reply.status) + "\r\n";
    head += "Content-Type: application/json\r\n";
    head += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
    for (const auto& [name, value] : reply.headers) head += name + ": " + value + "\r\n";
    head += "\r\n";
    if (reply.fault == HttpReply::Fault::truncate) {
      send_all(fd, head + reply.body.substr(0, reply.body.size() / 2));
      break;
    }
    if (!send_all(fd, head + reply.body)) break;
  }
  std::lock_guard lock(mutex_);
  open_fds_.erase(fd);
  ::close(fd);
}

}  // namespace kforge::llm::testing
