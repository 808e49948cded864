// The C++ side of the harness protocol (harness/PROTOCOL.md): one long-lived
// `python -m kforge_harness serve` process per (interpreter, harness dir, device, mode),
// shared by every stage of this process, spoken to in JSON lines over pipes.
//
// Any number of threads may call() at once: requests are tagged with ids and a reader
// thread hands each response to the thread waiting for it. A server that dies answers
// every request in flight with a harness_error and is started again by the next call; a
// server that says it cannot start (not ready) is not retried, since the same interpreter
// on the same device would say so again.
#pragma once

#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <limits>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::eval {

struct HarnessServerSpec {
  std::string python;       // interpreter path
  std::string harness_dir;  // the directory holding the kforge_harness package
  std::string device;       // cpu, cuda:N, npu:N
  std::string mode;         // fork or spawn
  int max_children = 1;     // requests the server runs at once (and this client sends at once)
  double start_timeout_seconds = 120;
  double reference_store_mb = 8192;  // bytes of reference outputs the server keeps for reuse

  std::string key() const;
};

// One response, fields as PROTOCOL.md names them. Harness trouble seen from this side
// (dead server, no answer in time, not ready) is also reported this way: status "error",
// error_class "harness_error".
struct HarnessResponse {
  std::string status;  // pass, fail, error
  std::string error_class;
  std::string message;
  std::string log_tail;
  nlohmann::json findings = nlohmann::json::array();
  nlohmann::json extracted = nlohmann::json::object();
  nlohmann::json metrics = nlohmann::json::object();
  std::vector<std::string> flags;
  nlohmann::json task_sizes = nlohmann::json::object();  // the sizes the task ran at (run, compile)
  std::string device;  // the device of the server that answered (set by HarnessPool)
  nlohmann::json environment;  // that server's ready line "environment" (set by HarnessPool)

  static HarnessResponse harness_error(std::string message, std::string log_tail = {});
  static HarnessResponse from_json(const nlohmann::json& body);
};

// How long one request may take: its child's own wall-clock limit, and the deadline of
// the stage that asks (none: time_point::max()), against which waiting for a free slot,
// a device or a starting server counts too.
struct CallBudget {
  double child_timeout_seconds = 60;
  std::chrono::steady_clock::time_point stage_deadline = std::chrono::steady_clock::time_point::max();
  std::function<bool()> cancelled;  // polled while waiting; true gives up (the run is stopping)

  static CallBudget of(double child_timeout_seconds, double stage_seconds_left,
                       std::function<bool()> cancelled = {});
  double stage_seconds_left() const;  // +inf without a deadline
};

// At the moment a request is sent: the child's limit, cut so that the harness (not the
// stage timeout) reports a slow candidate as `timeout`, and how long to wait for the
// answer: `children` times the child's limit (a run may need the task's reference worker
// before the candidate's child, each within the limit) plus time to fork, compare and
// answer. nullopt when the stage has no time left for a child.
struct RequestBudget {
  double child_timeout_seconds = 0;
  double wait_seconds = 0;
};
std::optional<RequestBudget> request_budget(double child_timeout_seconds, double stage_seconds_left,
                                            int children = 1);

class HarnessServer {
 public:
  explicit HarnessServer(HarnessServerSpec spec);
  ~HarnessServer();
  HarnessServer(const HarnessServer&) = delete;
  HarnessServer& operator=(const HarnessServer&) = delete;

  // Sends `request` (its "id" and limits.timeout_s are filled in here, the latter from
  // `budget`) and waits for the answer, starting the server first when none runs.
  HarnessResponse call(nlohmann::json request, const CallBudget& budget);

  const HarnessServerSpec& spec() const { return spec_; }
  // Requests sent or waiting for a slot: how loaded this server is.
  int load() const { return load_.load(); }
  // The running server's pid (-1 when none runs): for tests that kill it.
  pid_t pid() const;
  // The ready line of the running server (empty when none runs).
  nlohmann::json ready_info() const;
  // The ready line, starting the server first when none runs; throws std::runtime_error
  // saying why when it cannot start by `deadline`.
  nlohmann::json started_ready_info(std::chrono::steady_clock::time_point deadline);

 private:
  class Process;

  std::shared_ptr<Process> running_process(std::chrono::steady_clock::time_point deadline, std::string& error);
  bool take_slot(const CallBudget& budget);
  void give_slot();

  const HarnessServerSpec spec_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::shared_ptr<Process> process_;
  std::vector<std::shared_ptr<Process>> retired_;  // dead ones, joined on destruction
  std::string not_ready_error_;                    // sticky: the server cannot start here
  int free_slots_;
  std::atomic<int> load_{0};
  std::atomic<uint64_t> next_id_{1};
};

// The request id an answer line starts with ({"id": "17", ...}), read without parsing
// the rest: how an answer that is not valid JSON (a lone surrogate escape, a stray byte)
// is still given to the request it answers. nullopt when the line does not start so.
std::optional<std::string> leading_answer_id(std::string_view line);

// The process-wide server for `spec`, started lazily and shared by every stage that asks
// for the same key; it stops when the last holder lets go.
std::shared_ptr<HarnessServer> shared_harness_server(const HarnessServerSpec& spec);

}  // namespace kforge::eval
