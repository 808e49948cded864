#include "device_gate.hpp"

#include <algorithm>

namespace kforge::eval {

std::optional<double> DeviceGate::charge_for(const std::string& task, double per_job_mb) const {
  auto known = needs_.find(task);
  if (known != needs_.end()) return known->second + per_job_mb;
  if (needs_.empty()) return std::nullopt;
  double largest = 0;
  for (const auto& [other, mb] : needs_) largest = std::max(largest, mb);
  return largest + per_job_mb;
}

DeviceGate::Budget DeviceGate::Budget::of_detected_memory(double headroom_mb) {
  Budget budget(std::nullopt);
  budget.detected = true;
  budget.headroom_mb = headroom_mb;
  return budget;
}

std::optional<double> DeviceGate::budget_mb(const Budget& budget) const {
  if (budget.fixed_mb) return std::max(0.0, *budget.fixed_mb - budget.headroom_mb);
  if (!budget.detected) return std::nullopt;
  return std::max(0.0, memory_mb_.value_or(0) - budget.headroom_mb);
}

std::optional<DeviceGate::Pass> DeviceGate::enter(Use use, const std::string& task, double per_job_mb,
                                                  const Budget& budget, std::chrono::steady_clock::time_point deadline,
                                                  const std::string& server) {
  Pass pass;
  pass.use = use;
  pass.server = server;
  std::unique_lock lock(mutex_);
  const uint64_t ticket = next_ticket_++;
  waiting_.push_back(ticket);
  std::optional<double> budget_mb;
  const auto admissible = [&] {
    if (waiting_.front() != ticket || alone_) return false;
    budget_mb = this->budget_mb(budget);
    const std::optional<double> charge_mb = charge_for(task, per_job_mb);
    pass.alone = use == Use::Exclusive || (budget_mb && (!charge_mb || *charge_mb > *budget_mb));
    pass.charged_mb = pass.alone && budget_mb ? *budget_mb : charge_mb.value_or(0);
    if (pass.alone || sharers_ == 0) return sharers_ == 0;
    const auto count = [](const std::map<std::string, int>& of, const std::string& key) {
      const auto it = of.find(key);
      return it == of.end() ? 0 : it->second;
    };
    if (use == Use::Timed && count(by_server_, server) != sharers_) return false;  // another server's job runs
    if (timed_ != count(timed_by_server_, server)) return false;  // another server's timed job runs
    return !budget_mb || charged_mb_ + pass.charged_mb <= *budget_mb;
  };
  const bool admitted = changed_.wait_until(lock, deadline, admissible);
  waiting_.erase(std::find(waiting_.begin(), waiting_.end(), ticket));
  if (!admitted) {
    lock.unlock();
    changed_.notify_all();  // the next in line may go now
    return std::nullopt;
  }
  if (budget_mb) pass.share_mb = std::max(0.0, *budget_mb - charged_mb_);
  if (sharers_ > 0) {
    pass.company->store(true);
    for (const auto& other : running_) other->store(true);
  }
  ++sharers_;
  ++by_server_[server];
  if (use == Use::Timed) {
    ++timed_;
    ++timed_by_server_[server];
  }
  alone_ = pass.alone;
  charged_mb_ += pass.charged_mb;
  running_.push_back(pass.company);
  lock.unlock();
  changed_.notify_all();  // the next in line may fit beside this one
  return pass;
}

void DeviceGate::leave(const Pass& pass) {
  {
    std::lock_guard lock(mutex_);
    --sharers_;
    if (--by_server_[pass.server] == 0) by_server_.erase(pass.server);
    if (pass.use == Use::Timed) {
      --timed_;
      if (--timed_by_server_[pass.server] == 0) timed_by_server_.erase(pass.server);
    }
    if (pass.alone) alone_ = false;
    charged_mb_ = sharers_ == 0 ? 0 : charged_mb_ - pass.charged_mb;
    running_.erase(std::find(running_.begin(), running_.end(), pass.company));
  }
  changed_.notify_all();
}

void DeviceGate::recharge(Pass& pass, double charge_mb, const Budget& budget) {
  {
    std::lock_guard lock(mutex_);
    const std::optional<double> budget_mb = this->budget_mb(budget);
    if (std::find(running_.begin(), running_.end(), pass.company) == running_.end()) return;  // it left
    charged_mb_ += charge_mb - pass.charged_mb;
    pass.charged_mb = charge_mb;
    if (pass.alone && pass.use != Use::Exclusive && budget_mb && charge_mb <= *budget_mb) {
      pass.alone = false;
      alone_ = false;
    }
  }
  changed_.notify_all();  // the next in line may fit beside it now
}

void DeviceGate::record_need(const std::string& task, double mb) {
  {
    std::lock_guard lock(mutex_);
    needs_[task] = mb;
  }
  changed_.notify_all();  // a waiting job's charge may be known now
}

std::optional<double> DeviceGate::need(const std::string& task) const {
  std::lock_guard lock(mutex_);
  const auto it = needs_.find(task);
  if (it == needs_.end()) return std::nullopt;
  return it->second;
}

void DeviceGate::record_memory(double mb) {
  {
    std::lock_guard lock(mutex_);
    memory_mb_ = mb;
  }
  changed_.notify_all();  // a budget that was 0 until now may admit the next in line
}

std::optional<double> DeviceGate::budget_now(const Budget& budget) const {
  std::lock_guard lock(mutex_);
  return budget_mb(budget);
}

std::optional<double> DeviceGate::memory_mb() const {
  std::lock_guard lock(mutex_);
  return memory_mb_;
}

DeviceGate& device_gate(const std::string& device) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<DeviceGate>> gates;  // never freed: stages come and go
  std::lock_guard lock(mutex);
  auto& gate = gates[device];
  if (!gate) gate = std::make_unique<DeviceGate>();
  return *gate;
}

}  // namespace kforge::eval
