// A stage's way to the harness: its servers (one shared server per device here, or N
// Slurm job steps), admission to a server's device by memory (device_gate.hpp; timing owns
// a device while it measures), an out-of-memory beside other jobs retried with the device
// to itself, and a request whose server was lost sent again to another (bounded).
#pragma once

#include "device_gate.hpp"
#include "harness_client.hpp"

#include <kforge/eval/vocabulary.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kforge::eval {

// `cpu`, `cuda:N`, `npu:N` (a bare `cuda`/`npu` means index 0), normalised; throws
// std::invalid_argument naming the accepted forms.
std::string normalise_device(const std::string& device);

struct HarnessSettings {
  std::string python = "auto";
  std::string harness_dir;            // empty: locate_harness_dir's search
  std::vector<std::string> devices = {kDeviceCpu};
  std::string mode = "fork";
  int max_children = 0;               // 0: one per CPU core, at most 8
  double start_timeout_seconds = 120;
  double reference_store_mb = 8192;   // the server's reference store (PROTOCOL.md --reference-store-mb)
  MemoryBudget memory;                // admission of device work by memory
  // Launcher slurm: `servers` job steps, each with `slurm`'s resources, on devices[0] of
  // its own GPUs (cuda:0 is a step's first). Unset: one local server per device.
  std::optional<SlurmLaunch> slurm;
  int servers = 1;
  // A request whose server was lost (harness_client.hpp, server_lost) is sent again, to
  // another server where there is one, at most this many times.
  int server_retries = 2;
  // Where the pool says what the run should know (a server given up, a node left out).
  std::function<void(const std::string&)> warn;
};

// A node whose servers failed this many requests in a row for the host's reasons (lost,
// host_error, the server's own harness_error) is left out of the run.
inline constexpr int kNodeFailureLimit = 3;

// The device gate (device_gate.hpp) of a server: its device's name for a local server
// (stages on one host share a device's gate); for a Slurm server, one of its own, since it
// has its own GPUs wherever it runs: "cuda:0#slurm3#<its spec's hash>".
std::string gate_of(const HarnessServerSpec& spec);

// How a request uses its server's device: not at all (a static check), shared with other
// jobs, or timed (its timing loops have the device alone: device_gate.hpp).
enum class DeviceUse { None, Shared, Timed };

class HarnessPool {
 public:
  // Validates devices, mode and launcher; the interpreter and the servers are found on
  // first use, so creating a stage never spawns anything.
  explicit HarnessPool(HarnessSettings settings);

  // Every server begins starting now, without waiting for any: the run starts, and its
  // first jobs (behind an LLM's first answers) should find them ready. Needs the
  // interpreter resolved already (the stage's run-start check did it); otherwise the
  // first request starts them, as without this call.
  void start();

  // Sends one request to a server: a ready one before one still starting, the least
  // loaded first (ties: round robin); through the server's device gate as `use` says,
  // admitted by the memory `task` (admission_key) is known to need there; the response
  // teaches the gate the task's need and the device's memory. An out-of-memory while other
  // jobs shared the device is retried once with the device to itself (flag retried_alone): only one alone is a verdict. A
  // task whose reference ran out of memory alone is too big for the device: its later
  // jobs get that task_error without running. A request whose server was lost (or could
  // not start) goes to another server, at most server_retries times (metric
  // infra_retries, a note in the log tail), while the lost one's replacement starts.
  // Harness trouble comes back as a harness_error response, never as an exception.
  HarnessResponse call(const nlohmann::json& request, DeviceUse use, const CallBudget& budget,
                       const std::string& task = {});

  // The budget for admission in MB of the device behind `gate` (gate_of; a local
  // server's is its device's name): memory_gb, else the detected memory of an
  // accelerator (0 until known: its first jobs run alone), less the headroom; nullopt on
  // a cpu without memory_gb (no admission by memory).
  std::optional<double> budget_mb(const std::string& gate) const;
  // The same as the gate finds it at each admission.
  DeviceGate::Budget budget_rule(const std::string& gate) const;

  // What judges on these servers, for the verdict cache's key: the distinct ready lines
  // (versions, device, environment) less pid, host and GPU UUID, so that alike machines
  // judge alike whatever the pool's size. Local servers: all of them, started first; a
  // Slurm pool: those ready once one is (a queue may hold the others for long). Throws
  // std::runtime_error when none can start.
  std::string judge_identity();

  // The pool's servers, once the first request or start() made them (empty before): for
  // tests that watch or kill one.
  std::vector<std::shared_ptr<HarnessServer>> members();

 private:
  HarnessResponse call_through_gate(HarnessServer& server, nlohmann::json request, DeviceUse use,
                                    const CallBudget& budget, const std::string& task);

  // The servers, created on first use; empty with `error` set when that failed. Waits for
  // the interpreter probe only until `deadline`; a probe that did not answer is not kept.
  std::vector<std::shared_ptr<HarnessServer>> servers(std::chrono::steady_clock::time_point deadline,
                                                      std::string& error);
  // The server for the next request, avoiding those in `avoid` while another will do; a
  // stopped one met on the way is started again. nullptr with `error` when every server
  // failed for good.
  std::shared_ptr<HarnessServer> pick(const std::vector<std::shared_ptr<HarnessServer>>& all,
                                      const std::set<const HarnessServer*>& avoid, std::string& error);
  // Counts a Slurm node's failures for the host's reasons, and leaves it out at the limit.
  void note_health(const std::vector<std::shared_ptr<HarnessServer>>& all, const HarnessResponse& response);
  void warn(const std::string& message) const;

  HarnessSettings settings_;
  std::mutex mutex_;
  bool resolved_ = false;
  std::string resolve_error_;
  std::vector<std::shared_ptr<HarnessServer>> servers_;
  size_t next_ = 0;
  std::map<std::string, HarnessResponse> too_big_;  // gate + task -> its task_error
  std::set<const HarnessServer*> reported_failed_;  // servers whose failure was said
  std::map<std::string, int> node_failures_;         // node -> host failures in a row
  std::vector<std::string> excluded_nodes_;          // left out, in the order it happened
};

}  // namespace kforge::eval
