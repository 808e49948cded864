#include "harness_pool.hpp"

#include "python_env.hpp"

#include <algorithm>
#include <chrono>
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

HarnessPool::HarnessPool(HarnessSettings settings) : settings_(std::move(settings)) {
  if (settings_.devices.empty()) throw std::invalid_argument("no device given");
  for (std::string& device : settings_.devices) device = normalise_device(device);
  if (settings_.mode != "fork" && settings_.mode != "spawn") {
    throw std::invalid_argument("mode must be fork or spawn, got '" + settings_.mode + "'");
  }
  if (settings_.max_children < 0) throw std::invalid_argument("max_children must be >= 0");
  const MemoryBudget& memory = settings_.memory;
  if (memory.memory_gb < 0 || memory.headroom_gb < 0 || memory.per_job_mb < 0) {
    throw std::invalid_argument("memory_gb, memory_headroom_gb and memory_per_job_mb must be >= 0");
  }
  if (settings_.reference_store_mb < 0) throw std::invalid_argument("reference_store_mb must be >= 0");
  if (settings_.max_children == 0) {
    settings_.max_children = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  }
}

std::vector<std::shared_ptr<HarnessServer>> HarnessPool::servers(std::chrono::steady_clock::time_point deadline,
                                                                  std::string& error) {
  {
    std::lock_guard lock(mutex_);
    if (resolved_) {
      error = resolve_error_;
      return servers_;
    }
  }
  // Found without mutex_: `auto` probes which interpreter imports torch (seconds), and a
  // job must not wait for another job's probe past its own deadline (resolve_python's
  // wait ends there). Two jobs may both get here: the probe runs once, the first to come
  // back below sets up the servers.
  HarnessServerSpec spec;
  std::string problem;
  try {
    spec.python = resolve_python(settings_.python, deadline);
    spec.harness_dir = locate_harness_dir(settings_.harness_dir);
  } catch (const ProbeUnanswered& e) {  // not an answer to keep: the next call asks again
    error = e.what();
    return {};
  } catch (const std::exception& e) {
    problem = e.what();
  }
  std::lock_guard lock(mutex_);
  if (!resolved_) {
    resolved_ = true;
    resolve_error_ = problem;
    if (problem.empty()) {
      spec.mode = settings_.mode;
      spec.max_children = settings_.max_children;
      spec.start_timeout_seconds = settings_.start_timeout_seconds;
      spec.reference_store_mb = settings_.reference_store_mb;
      for (const std::string& device : settings_.devices) {
        spec.device = device;
        servers_.push_back(shared_harness_server(spec));
      }
    }
  }
  error = resolve_error_;
  return servers_;
}

std::string HarnessPool::judge_identity() {
  std::string error;
  const std::vector<std::shared_ptr<HarnessServer>> all = servers(std::chrono::steady_clock::time_point::max(), error);
  if (all.empty()) throw std::runtime_error(error);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(settings_.start_timeout_seconds));
  std::string identity;
  for (const auto& server : all) {
    nlohmann::json ready = server->started_ready_info(deadline);
    ready.erase("pid");
    // Machines alike but for their names judge alike (a cluster's nodes).
    if (ready.contains("environment") && ready["environment"].is_object()) ready["environment"].erase("host");
    identity += ready.dump() + '\n';
  }
  return identity;
}

namespace {

bool has_flag(const HarnessResponse& response, const char* flag) {
  return std::find(response.flags.begin(), response.flags.end(), flag) != response.flags.end();
}

double metric_or(const HarnessResponse& response, const char* name, double fallback) {
  const auto it = response.metrics.find(name);
  return it != response.metrics.end() && it->is_number() ? it->get<double>() : fallback;
}

}  // namespace

std::optional<double> HarnessPool::budget_mb(const std::string& device) const {
  const MemoryBudget& memory = settings_.memory;
  std::optional<double> total;
  if (memory.memory_gb > 0) {
    total = memory.memory_gb * 1024;
  } else if (device != "cpu") {
    total = device_gate(device).memory_mb().value_or(0);
  }
  if (!total) return std::nullopt;
  return std::max(0.0, *total - memory.headroom_gb * 1024);
}

// One request on `server`, through its device's gate as `use` says.
HarnessResponse HarnessPool::call_through_gate(HarnessServer& server, nlohmann::json request, DeviceUse use,
                                               const CallBudget& budget, const std::string& task) {
  if (use == DeviceUse::None) return server.call(request, budget);
  const std::string& device = server.spec().device;
  const std::string too_big_key = device + '\n' + task;
  {
    std::lock_guard lock(mutex_);
    if (auto it = too_big_.find(too_big_key); it != too_big_.end()) return it->second;
  }
  DeviceGate& gate = device_gate(device);
  const std::optional<double> memory_budget = budget_mb(device);
  bool retried = false;
  DeviceGate::Use gate_use = use == DeviceUse::Exclusive ? DeviceGate::Use::Exclusive : DeviceGate::Use::Shared;
  while (true) {
    const auto pass = gate.enter(gate_use, task, settings_.memory.per_job_mb, memory_budget, budget.stage_deadline);
    if (!pass) {
      return HarnessResponse::harness_error("the stage timeout passed while waiting for device " + device +
                                            " (a timing run, or a job of unknown memory need, has its device to "
                                            "itself; jobs are admitted while their memory needs fit)");
    }
    if (pass->share_mb > 0) request["limits"]["device_memory_mb"] = pass->share_mb;
    HarnessResponse response = server.call(request, budget);
    // Learnt before leaving, so that the jobs admitted next are charged what it measured.
    if (const double peak = metric_or(response, "task_peak_mb", -1); peak >= 0 && !task.empty()) {
      gate.record_need(task, peak);
    }
    if (const double memory = metric_or(response, "device_memory_mb", 0); memory > 0 && device != "cpu") {
      gate.record_memory(memory);
    }
    gate.leave(*pass);
    if (retried) response.flags.emplace_back("retried_alone");
    const bool out_of_memory = has_flag(response, "out_of_memory");
    if (out_of_memory && !pass->company->load() && response.error_class == "task_error" && !task.empty()) {
      std::lock_guard lock(mutex_);
      HarnessResponse known = response;
      known.metrics["reference_computed"] = 0;  // later jobs are told, not run
      too_big_.emplace(too_big_key, std::move(known));
    }
    // Out of device memory beside other jobs: maybe theirs. Once more, with the device
    // alone.
    if (retried || !out_of_memory || !pass->company->load()) return response;
    retried = true;
    gate_use = DeviceGate::Use::Exclusive;
  }
}

HarnessResponse HarnessPool::call(const nlohmann::json& request, DeviceUse use, const CallBudget& budget,
                                  const std::string& task) {
  std::shared_ptr<HarnessServer> server;
  std::string error;
  const std::vector<std::shared_ptr<HarnessServer>> all = servers(budget.stage_deadline, error);
  if (all.empty()) return HarnessResponse::harness_error(error);
  {
    std::lock_guard lock(mutex_);
    // Least loaded first; among equals, take turns so idle devices all get work.
    size_t best = next_ % all.size();
    for (size_t step = 1; step < all.size(); ++step) {
      const size_t i = (next_ + step) % all.size();
      if (all[i]->load() < all[best]->load()) best = i;
    }
    next_ = best + 1;
    server = all[best];
  }
  HarnessResponse response = call_through_gate(*server, request, use, budget, task);
  response.device = server->spec().device;
  if (const nlohmann::json ready = server->ready_info(); ready.is_object() && ready.contains("environment")) {
    response.environment = ready["environment"];
  }
  return response;
}

}  // namespace kforge::eval
