#include "harness_pool.hpp"

#include "eval_job.hpp"
#include "python_env.hpp"

#include <kforge/abi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <regex>
#include <stdexcept>
#include <thread>

namespace kforge::eval {

std::string normalise_device(const std::string& device) {
  static const std::regex pattern(device_pattern());
  std::smatch match;
  if (!std::regex_match(device, match, pattern)) {
    throw std::invalid_argument("unknown device '" + device + "': use cpu, cuda:N or npu:N");
  }
  if (match[1] == kDeviceCpu) {
    if (match[2].matched) throw std::invalid_argument("device 'cpu' takes no index (got '" + device + "')");
    return kDeviceCpu;
  }
  return match[1].str() + ":" + (match[2].matched ? match[2].str() : "0");
}

HarnessPool::HarnessPool(HarnessSettings settings) : settings_(std::move(settings)) {
  if (settings_.devices.empty()) throw std::invalid_argument("no device given");
  for (std::string& device : settings_.devices) device = normalise_device(device);
  // The stage parameters' choices and ranges (mode, max_children, the memory figures, servers,
  // server_retries, the slurm resources and timeouts) are the host's to check, by the
  // plugin's schema; what is left here is what no single parameter says.
  if (settings_.slurm) {
    if (settings_.devices.size() != 1) {
      throw std::invalid_argument("a Slurm pool takes one device, which names each server's own (cuda:0: the first "
                                  "GPU of its step), not a list of devices: give servers: N instead");
    }
  } else if (settings_.servers != 1) {
    throw std::invalid_argument("servers: " + std::to_string(settings_.servers) +
                                " is for launcher slurm; on this host, list devices instead (one server each)");
  }
  if (settings_.max_children == 0) {
    // One per CPU core the server has: this host's, or its step's.
    const unsigned cores = settings_.slurm ? static_cast<unsigned>(settings_.slurm->cpus) : std::thread::hardware_concurrency();
    settings_.max_children = static_cast<int>(std::clamp(cores, 1u, 8u));
  }
}

std::string gate_of(const HarnessServerSpec& spec) {
  if (!spec.slurm) return spec.device;
  return spec.device + "#slurm" + std::to_string(spec.member) + "#" + std::to_string(std::hash<std::string>{}(spec.key()));
}

void HarnessPool::warn(const std::string& message) const {
  if (settings_.warn) settings_.warn(message);
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
    spec.arena_allocator = locate_arena_allocator();
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
      if (settings_.slurm) {
        spec.device = settings_.devices.front();
        spec.slurm = settings_.slurm;
        for (int member = 0; member < settings_.servers; ++member) {
          spec.member = member;
          servers_.push_back(shared_harness_server(spec));
        }
      } else {
        for (const std::string& device : settings_.devices) {
          spec.device = device;
          servers_.push_back(shared_harness_server(spec));
        }
      }
    }
  }
  error = resolve_error_;
  return servers_;
}

std::vector<std::shared_ptr<HarnessServer>> HarnessPool::members() {
  std::lock_guard lock(mutex_);
  return servers_;
}

void HarnessPool::start() {
  std::string error;
  for (const auto& server : servers(std::chrono::steady_clock::now(), error)) server->start();
}

std::string HarnessPool::judge_identity() {
  std::string error;
  const std::vector<std::shared_ptr<HarnessServer>> all = servers(std::chrono::steady_clock::time_point::max(), error);
  if (all.empty()) throw std::runtime_error(error);
  auto identity_of = [](nlohmann::json ready) {
    ready.erase("pid");
    // Machines alike but for their names and their GPUs' serial numbers judge alike (a
    // cluster's nodes).
    if (ready.contains("environment") && ready["environment"].is_object()) {
      ready["environment"].erase("host");
      ready["environment"].erase(kEnvironmentCard);
    }
    return ready.dump();
  };
  std::set<std::string> identities;
  if (!settings_.slurm) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(settings_.start_timeout_seconds));
    for (const auto& server : all) identities.insert(identity_of(server->started_ready_info(deadline)));
  } else {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(
                              settings_.slurm->place_timeout_seconds + settings_.start_timeout_seconds));
    while (identities.empty()) {
      bool any_left = false;
      for (const auto& server : all) {
        switch (server->availability()) {
          case HarnessServer::Availability::Ready:
            if (const nlohmann::json ready = server->ready_info(); ready.is_object()) identities.insert(identity_of(ready));
            break;
          case HarnessServer::Availability::Stopped:
            server->start();
            any_left = true;
            break;
          case HarnessServer::Availability::Starting:
            any_left = true;
            break;
          case HarnessServer::Availability::Failed:
            error = server->failure();
            break;
        }
      }
      if (!identities.empty()) break;
      if (!any_left) throw std::runtime_error(error);
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("no harness server of the Slurm pool was ready in time");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  std::string text;
  for (const std::string& identity : identities) text += identity + '\n';
  return text;
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

DeviceGate::Budget HarnessPool::budget_rule(const std::string& gate) const {
  const MemoryBudget& memory = settings_.memory;
  const std::string device = gate.substr(0, gate.find('#'));
  if (memory.memory_gb > 0) {
    DeviceGate::Budget budget(memory.memory_gb * 1024);
    budget.headroom_mb = memory.headroom_gb * 1024;
    return budget;
  }
  if (device != kDeviceCpu) return DeviceGate::Budget::of_detected_memory(memory.headroom_gb * 1024);
  return DeviceGate::Budget(std::nullopt);
}

std::optional<double> HarnessPool::budget_mb(const std::string& gate) const {
  return device_gate(gate).budget_now(budget_rule(gate));
}

// One request on `server`, through its device's gate as `use` says.
HarnessResponse HarnessPool::call_through_gate(HarnessServer& server, nlohmann::json request, DeviceUse use,
                                               const CallBudget& budget, const std::string& task) {
  if (use == DeviceUse::None) return server.call(request, budget);
  const std::string& device = server.spec().device;
  const std::string gate_name = gate_of(server.spec());
  const std::string too_big_key = gate_name + '\n' + task;
  {
    std::lock_guard lock(mutex_);
    if (auto it = too_big_.find(too_big_key); it != too_big_.end()) return it->second;
  }
  DeviceGate& gate = device_gate(gate_name);
  // Found at each look, not now: a device's memory is learnt from the first answer.
  const DeviceGate::Budget memory_budget = budget_rule(gate_name);
  bool retried = false;
  DeviceGate::Use gate_use = use == DeviceUse::Timed ? DeviceGate::Use::Timed : DeviceGate::Use::Shared;
  // Jobs of one server share the device with its timed ones: the server takes turns.
  const std::string server_id = std::to_string(reinterpret_cast<std::uintptr_t>(&server));
  // The time this job waited for its device (for another server's timed jobs, or room):
  // part of its stage time that is no work of its own, shown as a metric (the server's
  // own turns show as turn_wait_seconds).
  double waited_s = 0;
  while (true) {
    const auto asked = std::chrono::steady_clock::now();
    const auto admitted =
        gate.enter(gate_use, task, settings_.memory.per_job_mb, memory_budget, budget.stage_deadline, server_id);
    waited_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
    if (!admitted) {
      return HarnessResponse::harness_error("the stage timeout passed while waiting for device " + device +
                                            " (another harness server's timed jobs, or a job of unknown memory "
                                            "need, had it; jobs are admitted while their memory needs fit)");
    }
    // Shared with the need line's listener, which may outlive this call by a moment.
    const auto pass = std::make_shared<DeviceGate::Pass>(*admitted);
    if (pass->share_mb > 0) request["limits"]["device_memory_mb"] = pass->share_mb;
    const double per_job_mb = settings_.memory.per_job_mb;
    HarnessResponse response = server.call(request, budget, [&gate, pass, task, memory_budget, per_job_mb,
                                                             accelerator = device != kDeviceCpu](const Need& told) {
      // Known before the verdict: later jobs of the task are charged it, and this one
      // from now on (it may have been charged the most any task needed, or run alone).
      // The device's memory comes with it: the first job of a run runs alone until
      // that is known (its budget is 0 before), then others fit beside it.
      if (accelerator && told.device_memory_mb) gate.record_memory(*told.device_memory_mb);
      if (!task.empty()) gate.record_need(task, told.need_mb);
      gate.recharge(*pass, told.need_mb + per_job_mb, memory_budget);
    });
    // Learnt before leaving, so that the jobs admitted next are charged what it measured.
    if (const double peak = metric_or(response, "task_peak_mb", -1); peak >= 0 && !task.empty()) {
      gate.record_need(task, peak);
    }
    if (const double memory = metric_or(response, "device_memory_mb", 0); memory > 0 && device != kDeviceCpu) {
      gate.record_memory(memory);
    }
    gate.leave(*pass);
    response.metrics["device_wait_seconds"] = waited_s;
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

std::shared_ptr<HarnessServer> HarnessPool::pick(const std::vector<std::shared_ptr<HarnessServer>>& all,
                                                 const std::set<const HarnessServer*>& avoid, std::string& error) {
  std::vector<std::string> warnings;
  std::shared_ptr<HarnessServer> chosen;
  {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<std::shared_ptr<HarnessServer>, HarnessServer::Availability>> usable;
    std::vector<std::string> newly_failed;
    size_t failed = 0;
    for (size_t step = 0; step < all.size(); ++step) {
      const auto& server = all[(next_ + step) % all.size()];
      HarnessServer::Availability availability = server->availability();
      if (availability == HarnessServer::Availability::Failed) {
        ++failed;
        if (error.empty()) error = server->failure();
        if (reported_failed_.insert(server.get()).second) newly_failed.push_back(server->failure());
        continue;
      }
      if (availability == HarnessServer::Availability::Stopped) {
        server->start();  // a lost server's replacement, or one that never started
        availability = HarnessServer::Availability::Starting;
      }
      usable.emplace_back(server, availability);
    }
    // A server that lost this request is taken again only when no other will do.
    const bool others = std::any_of(usable.begin(), usable.end(), [&](const auto& u) { return !avoid.count(u.first.get()); });
    for (const auto& [server, availability] : usable) {
      if (others && avoid.count(server.get())) continue;
      const auto better = [&](const std::shared_ptr<HarnessServer>& than) {
        const bool ready = availability == HarnessServer::Availability::Ready;
        const bool than_ready = than->availability() == HarnessServer::Availability::Ready;
        if (ready != than_ready) return ready;  // a ready one first: another may wait in a queue for long
        return server->load() < than->load();
      };
      if (!chosen || better(chosen)) chosen = server;
    }
    if (chosen) {
      const auto it = std::find(all.begin(), all.end(), chosen);
      next_ = static_cast<size_t>(it - all.begin()) + 1;
    }
    // A pool says when it loses a member for good; a lone local server's failure is in
    // every verdict it gives anyway.
    if (all.size() > 1 || settings_.slurm) {
      const size_t left = all.size() - failed;
      for (const std::string& why : newly_failed) {
        warnings.push_back(why + (left > 0 ? " (" + std::to_string(left) + " of " + std::to_string(all.size()) +
                                                 " harness servers left)"
                                           : " (no harness server left: every request fails)"));
      }
    }
  }
  for (const std::string& warning : warnings) warn(warning);
  return chosen;
}

void HarnessPool::note_health(const std::vector<std::shared_ptr<HarnessServer>>& all, const HarnessResponse& response) {
  if (!settings_.slurm || response.node.empty()) return;
  const bool host_trouble = response.server_lost ||
                            (response.status == "error" &&
                             (response.error_class == "host_error" || response.error_class == "harness_error"));
  std::vector<std::string> excluded;
  {
    std::lock_guard lock(mutex_);
    int& failures = node_failures_[response.node];
    if (!host_trouble) {
      failures = 0;
      return;
    }
    if (++failures < kNodeFailureLimit ||
        std::find(excluded_nodes_.begin(), excluded_nodes_.end(), response.node) != excluded_nodes_.end()) {
      return;
    }
    excluded_nodes_.push_back(response.node);
    excluded = excluded_nodes_;
  }
  warn("node " + response.node + " is left out of the run: " + std::to_string(kNodeFailureLimit) +
       " requests in a row failed there for the host's reasons (the last: " +
       response.message.substr(0, response.message.find('\n')) + "); its servers are placed elsewhere");
  for (const auto& server : all) {
    const std::optional<SlurmStep> step = server->step();
    server->leave_out(excluded);
    if (step && step->node == response.node) server->start();
  }
}

HarnessResponse HarnessPool::call(const nlohmann::json& request, DeviceUse use, const CallBudget& budget,
                                  const std::string& task) {
  std::string error;
  const std::vector<std::shared_ptr<HarnessServer>> all = servers(budget.stage_deadline, error);
  if (all.empty()) return HarnessResponse::harness_error(error);
  std::set<const HarnessServer*> lost_on;
  std::string notes;
  int retries = 0;
  std::optional<HarnessResponse> last;
  while (true) {
    std::string unavailable;
    const std::shared_ptr<HarnessServer> server = pick(all, lost_on, unavailable);
    if (!server) {
      if (!last) return HarnessResponse::harness_error(unavailable);
      break;  // the lost request's own answer says why
    }
    if (last) {
      ++retries;
      notes += "infrastructure: " + last->message.substr(0, last->message.find('\n')) + "\n  sent again (" +
               std::to_string(retries) + " of at most " + std::to_string(settings_.server_retries) +
               "): the candidate is not blamed for a lost server\n";
    }
    HarnessResponse response = call_through_gate(*server, request, use, budget, task);
    response.device = server->spec().device;
    if (const nlohmann::json ready = server->ready_info(); ready.is_object() && ready.contains("environment")) {
      response.environment = ready["environment"];
    }
    if (!response.node.empty()) response.device = response.node + "/" + response.device;
    note_health(all, response);
    const bool cancelled = budget.cancelled && budget.cancelled();
    const bool again = response.server_lost && retries < settings_.server_retries && !cancelled &&
                       budget.stage_seconds_left() > 1;
    last = std::move(response);
    if (!again) break;
    lost_on.insert(server.get());
    server->start();  // its replacement starts while another server takes the request
  }
  HarnessResponse response = std::move(*last);
  if (retries > 0) {
    response.metrics[KF_METRIC_INFRA_RETRIES] = retries;
    response.log_tail = notes + response.log_tail;
  }
  return response;
}

}  // namespace kforge::eval
