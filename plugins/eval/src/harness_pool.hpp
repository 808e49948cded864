// A stage's way to the harness: its device(s), one shared server per device, admission
// to a device by memory (device_gate.hpp; timing owns a device while it measures), and an
// out-of-memory beside other jobs retried with the device to itself.
#pragma once

#include "device_gate.hpp"
#include "harness_client.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kforge::eval {

// `cpu`, `cuda:N`, `npu:N` (a bare `cuda`/`npu` means index 0), normalised; throws
// std::invalid_argument naming the accepted forms.
std::string normalise_device(const std::string& device);

struct HarnessSettings {
  std::string python = "auto";
  std::string harness_dir;            // empty: locate_harness_dir's search
  std::vector<std::string> devices = {"cpu"};
  std::string mode = "fork";
  int max_children = 0;               // 0: one per CPU core, at most 8
  double start_timeout_seconds = 120;
  double reference_store_mb = 8192;   // the server's reference store (PROTOCOL.md --reference-store-mb)
  MemoryBudget memory;                // admission of device work by memory
};

enum class DeviceUse { None, Shared, Exclusive };

class HarnessPool {
 public:
  // Validates devices and mode; the interpreter and the servers are found on first use,
  // so creating a stage never spawns anything.
  explicit HarnessPool(HarnessSettings settings);

  // Sends one request to the least-loaded device's server (ties: round robin), through
  // the device's gate as `use` says, admitted by the memory `task` (admission_key) is
  // known to need there; the response teaches the gate the task's need and the device's
  // memory. An out-of-memory while other jobs shared the device is retried once with the device to itself (flag
  // retried_alone): only one alone is a verdict. A
  // task whose reference ran out of memory alone is too big for the device: its later
  // jobs get that task_error without running.
  // Harness trouble comes back as a harness_error response, never as an exception.
  HarnessResponse call(const nlohmann::json& request, DeviceUse use, const CallBudget& budget,
                       const std::string& task = {});

  // The device's budget for admission in MB: memory_gb, else the detected memory of an
  // accelerator (0 until known: its first jobs run alone), less the headroom; nullopt on
  // a cpu without memory_gb (no admission by memory).
  std::optional<double> budget_mb(const std::string& device) const;

  // What judges on these devices, for the verdict cache's key: each server's ready line
  // (versions, device, environment) less its pid and the host's name.
  // Starts the servers; throws std::runtime_error when one cannot start.
  std::string judge_identity();

 private:
  HarnessResponse call_through_gate(HarnessServer& server, nlohmann::json request, DeviceUse use,
                                    const CallBudget& budget, const std::string& task);

  // The servers, created on first use; empty with `error` set when that failed. Waits for
  // the interpreter probe only until `deadline`; a probe that did not answer is not kept.
  std::vector<std::shared_ptr<HarnessServer>> servers(std::chrono::steady_clock::time_point deadline,
                                                      std::string& error);

  HarnessSettings settings_;
  std::mutex mutex_;
  bool resolved_ = false;
  std::string resolve_error_;
  std::vector<std::shared_ptr<HarnessServer>> servers_;
  size_t next_ = 0;
  std::map<std::string, HarnessResponse> too_big_;  // device + task -> its task_error
};

}  // namespace kforge::eval
