#include "harness_pool.hpp"

#include "python_env.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <stdexcept>
#include <thread>

namespace kforge::eval {

std::string normalise_device(const std::string& device) {
  static const std::regex pattern(R"(^(cpu|cuda|npu)(?::(\d+))?$)");
  std::smatch match;
  if (!std::regex_match(device, match, pattern)) {
    throw std::invalid_argument("unknown device '" + device + "': use cpu, cuda:N or npu:N");
  }
  if (match[1] == "cpu") {
    if (match[2].matched) throw std::invalid_argument("device 'cpu' takes no index (got '" + device + "')");
    return "cpu";
  }
  return match[1].str() + ":" + (match[2].matched ? match[2].str() : "0");
}

bool DeviceGate::enter(Use use, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  if (use == Use::Shared) {
    if (!changed_.wait_until(lock, deadline, [&] { return !exclusive_ && exclusive_waiting_ == 0; })) return false;
    ++sharers_;
    return true;
  }
  ++exclusive_waiting_;
  const bool got = changed_.wait_until(lock, deadline, [&] { return !exclusive_ && sharers_ == 0; });
  --exclusive_waiting_;
  if (got) exclusive_ = true;
  lock.unlock();
  if (!got) changed_.notify_all();  // sharers held back for this waiter may go now
  return got;
}

void DeviceGate::leave(Use use) {
  {
    std::lock_guard lock(mutex_);
    if (use == Use::Shared) {
      --sharers_;
    } else {
      exclusive_ = false;
    }
  }
  changed_.notify_all();
}

DeviceGate& device_gate(const std::string& device) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<DeviceGate>> gates;  // never freed: stages come and go
  std::lock_guard lock(mutex);
  auto& gate = gates[device];
  if (!gate) gate = std::make_unique<DeviceGate>();
  return *gate;
}

HarnessPool::HarnessPool(HarnessSettings settings) : settings_(std::move(settings)) {
  if (settings_.devices.empty()) throw std::invalid_argument("no device given");
  for (std::string& device : settings_.devices) device = normalise_device(device);
  if (settings_.mode != "fork" && settings_.mode != "spawn") {
    throw std::invalid_argument("mode must be fork or spawn, got '" + settings_.mode + "'");
  }
  if (settings_.max_children < 0) throw std::invalid_argument("max_children must be >= 0");
  if (settings_.max_children == 0) {
    settings_.max_children = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  }
}

const std::vector<std::shared_ptr<HarnessServer>>& HarnessPool::servers(std::string& error) {
  // Called with mutex_ held.
  if (!resolved_) {
    resolved_ = true;
    try {
      HarnessServerSpec spec;
      spec.python = resolve_python(settings_.python);
      spec.harness_dir = locate_harness_dir(settings_.harness_dir);
      spec.mode = settings_.mode;
      spec.max_children = settings_.max_children;
      spec.start_timeout_seconds = settings_.start_timeout_seconds;
      for (const std::string& device : settings_.devices) {
        spec.device = device;
        servers_.push_back(shared_harness_server(spec));
      }
    } catch (const std::exception& e) {
      resolve_error_ = e.what();
      servers_.clear();
    }
  }
  error = resolve_error_;
  return servers_;
}

namespace {

// One request on `server`, through its device's gate as `use` says.
HarnessResponse call_through_gate(HarnessServer& server, const nlohmann::json& request, DeviceUse use,
                                  const CallBudget& budget) {
  if (use == DeviceUse::None) return server.call(request, budget);
  const std::string& device = server.spec().device;
  const DeviceGate::Use gate_use = use == DeviceUse::Exclusive ? DeviceGate::Use::Exclusive : DeviceGate::Use::Shared;
  DeviceGate& gate = device_gate(device);
  if (!gate.enter(gate_use, budget.stage_deadline)) {
    return HarnessResponse::harness_error("the stage timeout passed while waiting for device " + device +
                                          " (a timing run has its device to itself)");
  }
  HarnessResponse response = server.call(request, budget);
  gate.leave(gate_use);
  return response;
}

}  // namespace

HarnessResponse HarnessPool::call(const nlohmann::json& request, DeviceUse use, const CallBudget& budget) {
  std::shared_ptr<HarnessServer> server;
  {
    std::lock_guard lock(mutex_);
    std::string error;
    const auto& all = servers(error);
    if (all.empty()) return HarnessResponse::harness_error(error);
    // Least loaded first; among equals, take turns so idle devices all get work.
    size_t best = next_ % all.size();
    for (size_t step = 1; step < all.size(); ++step) {
      const size_t i = (next_ + step) % all.size();
      if (all[i]->load() < all[best]->load()) best = i;
    }
    next_ = best + 1;
    server = all[best];
  }
  HarnessResponse response = call_through_gate(*server, request, use, budget);
  response.device = server->spec().device;
  return response;
}

}  // namespace kforge::eval
