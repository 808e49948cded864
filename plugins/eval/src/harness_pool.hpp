// A stage's way to the harness: its device(s), one shared server per device, and the
// rule that timing owns a device while it measures.
#pragma once

#include "harness_client.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kforge::eval {

// `cpu`, `cuda:N`, `npu:N` (a bare `cuda`/`npu` means index 0), normalised; throws
// std::invalid_argument naming the accepted forms.
std::string normalise_device(const std::string& device);

// Work on one device: correctness runs and compiles share it, a timing run has it alone
// (it waits until the device is idle, and new work waits until it is done, so timings
// are never taken while another candidate runs on the same device).
class DeviceGate {
 public:
  enum class Use { Shared, Exclusive };
  // False when `deadline` passed first.
  bool enter(Use use, std::chrono::steady_clock::time_point deadline);
  void leave(Use use);

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int sharers_ = 0;
  bool exclusive_ = false;
  int exclusive_waiting_ = 0;  // new sharers yield to these, so timing is not starved
};

// The process-wide gate of a device name.
DeviceGate& device_gate(const std::string& device);

struct HarnessSettings {
  std::string python = "auto";
  std::string harness_dir;            // empty: locate_harness_dir's search
  std::vector<std::string> devices = {"cpu"};
  std::string mode = "fork";
  int max_children = 0;               // 0: one per CPU core, at most 8
  double start_timeout_seconds = 120;
};

enum class DeviceUse { None, Shared, Exclusive };

class HarnessPool {
 public:
  // Validates devices and mode; the interpreter and the servers are found on first use,
  // so creating a stage never spawns anything.
  explicit HarnessPool(HarnessSettings settings);

  // Sends one request to the least-loaded device's server (ties: round robin), through
  // the device's gate as `use` says. Harness trouble comes back as a harness_error
  // response, never as an exception.
  HarnessResponse call(const nlohmann::json& request, DeviceUse use, const CallBudget& budget);

 private:
  // The servers, created on first use; empty with `error` set when that failed.
  const std::vector<std::shared_ptr<HarnessServer>>& servers(std::string& error);

  HarnessSettings settings_;
  std::mutex mutex_;
  bool resolved_ = false;
  std::string resolve_error_;
  std::vector<std::shared_ptr<HarnessServer>> servers_;
  size_t next_ = 0;
};

}  // namespace kforge::eval
