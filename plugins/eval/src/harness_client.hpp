// The C++ side of the harness protocol (harness/PROTOCOL.md): one long-lived
// `python -m kforge_harness serve` process per (interpreter, harness dir, device, mode,
// launcher, pool member), shared by every stage of this process, spoken to in JSON lines
// over pipes: a local child's, or a Slurm job step's through srun (harness_launcher.hpp).
//
// Any number of threads may call() at once: requests are tagged with ids and a reader
// thread hands each response to the thread waiting for it. A server that dies answers
// every request in flight with a harness_error marked server_lost and is started again
// by the next call (or start()); a server that says it cannot start (not ready), a step
// srun could not submit and a step Slurm did not place in time are not retried, since the
// same request would meet the same refusal.
#pragma once

#include "harness_launcher.hpp"

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
  std::string arena_allocator;  // the arena allocator's library (locate_arena_allocator); empty: none
  std::string device;       // cpu, cuda:N, npu:N
  std::string mode;         // fork or spawn
  int max_children = 1;     // requests the server runs at once (and this client sends at once)
  double start_timeout_seconds = 120;
  double reference_store_mb = 8192;  // bytes of reference outputs the server keeps for reuse
  std::optional<SlurmLaunch> slurm;  // set: the server runs as a Slurm job step (launcher slurm)
  int member = 0;                    // which server of a pool of several alike (slurm's `servers`)

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
  // Infrastructure, not a verdict: the request was not judged because its server died
  // with it (a node lost, a step cancelled or past its time limit, a crash) or could not
  // be started; another server may judge it.
  bool server_lost = false;
  std::string node;  // the Slurm node of the server that answered or was lost; empty for a local one

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

// A request's need line (PROTOCOL.md): the device memory its job holds, and the device's
// memory as the server sees it (absent on a CPU).
struct Need {
  double need_mb = 0;
  std::optional<double> device_memory_mb;
};
using NeedListener = std::function<void(const Need&)>;

class HarnessServer {
 public:
  explicit HarnessServer(HarnessServerSpec spec);
  ~HarnessServer();
  HarnessServer(const HarnessServer&) = delete;
  HarnessServer& operator=(const HarnessServer&) = delete;

  // Sends `request` (its "id" and limits.timeout_s are filled in here, the latter from
  // `budget`) and waits for the answer, starting the server first when none runs.
  // `on_need` (called on the reader thread) hears the request's need line: the device
  // memory its job holds, known before its answer, and the device's memory where the
  // server has an accelerator (PROTOCOL.md).
  HarnessResponse call(nlohmann::json request, const CallBudget& budget, NeedListener on_need = {});

  const HarnessServerSpec& spec() const { return spec_; }
  // Requests sent or waiting for a slot: how loaded this server is.
  int load() const { return load_.load(); }

  enum class Availability { Ready, Starting, Stopped, Failed };
  // Ready to answer; Starting (or waiting for Slurm to place it); Stopped: none runs (it
  // died, or never started), the next call or start() starts one; Failed: it cannot start
  // here (failure() says why), no call will start it again.
  Availability availability() const;
  std::string failure() const;
  // Starts the server when none runs, without waiting for it to be ready: a run's start,
  // or a replacement for a server that was lost.
  void start();
  // Nodes this Slurm server's steps must avoid from now on (srun --exclude). A running
  // step on one of them finishes what it has (EOF) and ends; the next call or start()
  // places a fresh one elsewhere.
  void leave_out(std::vector<std::string> nodes);
  // Where the running server's Slurm step runs (nullopt: local, or not placed yet).
  std::optional<SlurmStep> step() const;
  // The running server's pid (-1 when none runs; srun's for a Slurm server): for tests
  // that kill it.
  pid_t pid() const;
  // The ready line of the running server (empty when none runs).
  nlohmann::json ready_info() const;
  // The ready line, starting the server first when none runs; throws std::runtime_error
  // saying why when it cannot start by `deadline`.
  nlohmann::json started_ready_info(std::chrono::steady_clock::time_point deadline);

 private:
  class Process;

  // The ready process, started first when none runs; nullptr with `error` set (and `lost`
  // when the server could not start, rather than the deadline passing first) otherwise.
  std::shared_ptr<Process> running_process(std::chrono::steady_clock::time_point deadline, std::string& error,
                                           bool* lost = nullptr);
  bool spawn_locked(std::string& error);  // mutex_ held
  bool take_slot(const CallBudget& budget);
  void give_slot();

  const HarnessServerSpec spec_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::shared_ptr<Process> process_;
  std::vector<std::shared_ptr<Process>> retired_;  // dead ones, joined on destruction
  std::string not_ready_error_;                    // sticky: the server cannot start here
  std::vector<std::string> excluded_nodes_;        // where its next Slurm step must not go
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
