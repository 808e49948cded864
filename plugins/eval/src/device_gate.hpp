// Who may use a device now. Correctness work shares a device while the memory its jobs
// need fits under the device's budget (memory-aware admission, on top of each stage's
// concurrency). A timed job shares it only with jobs of its own harness server, which
// gives each timing loop the device alone and lets the rest of the jobs' work run beside
// one another (harness/kforge_harness/server/turns.py); no job of another server runs
// beside it. A job whose need is unknown, a job bigger than the budget and a job retried
// after running out of memory have the device to themselves. Jobs are admitted in
// arrival order, so a big job or a timed one is not starved by a stream of small ones.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kforge::eval {

// How a stage shares its devices by memory (the stage parameters of the same names).
struct MemoryBudget {
  double memory_gb = 0;      // the device's memory for admission; 0: detected (accelerators), none (cpu)
  double headroom_gb = 1;    // kept free of admitted jobs
  double per_job_mb = 512;   // added to each job's measured need: its own CUDA context, slack
};

class DeviceGate {
 public:
  enum class Use { Shared, Timed, Exclusive };

  // The device's budget for admission, found whenever a job is looked at (not when it
  // began to wait): a fixed number of MB, or the device's detected memory (record_memory;
  // 0 until known, so its first jobs run alone) less `headroom_mb`; neither: no admission
  // by memory.
  struct Budget {
    std::optional<double> fixed_mb;
    bool detected = false;
    double headroom_mb = 0;

    Budget(std::nullopt_t) {}
    Budget(double mb) : fixed_mb(mb) {}
    Budget(std::optional<double> mb) : fixed_mb(mb) {}
    static Budget of_detected_memory(double headroom_mb);
  };

  // What a job was admitted with; hand it back to leave().
  struct Pass {
    Use use = Use::Shared;
    std::string server;      // the harness server it was sent to
    bool alone = false;      // nothing else runs on the device while it does
    double charged_mb = 0;   // what it counts against the budget
    double share_mb = 0;     // the memory it may use: the budget less the others' charges (0: no budget)
    // Set once another job was admitted beside it: an out-of-memory then may be a
    // neighbour's doing.
    std::shared_ptr<std::atomic<bool>> company = std::make_shared<std::atomic<bool>>(false);
  };

  // Waits until a job of `task` may run. What it is charged is decided when it is
  // admitted, from what the device knows then: its task's measured need, else the
  // largest need measured on the device (a task of unknown need is assumed as big as the
  // biggest seen), plus `per_job_mb`; with nothing measured yet it runs alone.
  // A job of more than the budget runs alone too. `server`: the harness server the job
  // goes to (a Timed job shares only with that server's jobs). nullopt when `deadline`
  // passed first.
  std::optional<Pass> enter(Use use, const std::string& task, double per_job_mb, const Budget& budget,
                            std::chrono::steady_clock::time_point deadline, const std::string& server = {});
  void leave(const Pass& pass);
  // What a running job was found to need (the server's need line): from now on it is
  // charged `charge_mb` instead of what it was admitted with, and a job that ran alone
  // only because its need was unknown shares the device once that fits the budget.
  // Nothing once it has left.
  void recharge(Pass& pass, double charge_mb, const Budget& budget);

  // What this device has learned, for later admissions: each task's measured need (MB)
  // and the device's own memory (MB). Record a job's need before it leaves, so the jobs
  // admitted after it know it.
  void record_need(const std::string& task, double mb);
  std::optional<double> need(const std::string& task) const;
  void record_memory(double mb);
  std::optional<double> memory_mb() const;
  // What `budget` comes to now (MB; nullopt: no admission by memory).
  std::optional<double> budget_now(const Budget& budget) const;

 private:
  std::optional<double> charge_for(const std::string& task, double per_job_mb) const;  // mutex_ held
  std::optional<double> budget_mb(const Budget& budget) const;                         // mutex_ held

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<uint64_t> waiting_;  // tickets in arrival order
  uint64_t next_ticket_ = 0;
  int sharers_ = 0;
  std::map<std::string, int> by_server_;     // running jobs by server
  std::map<std::string, int> timed_by_server_;  // running Timed jobs by server
  int timed_ = 0;
  bool alone_ = false;
  double charged_mb_ = 0;
  std::vector<std::shared_ptr<std::atomic<bool>>> running_;
  std::map<std::string, double> needs_;
  std::optional<double> memory_mb_;
};

// The process-wide gate of a device name.
DeviceGate& device_gate(const std::string& device);

}  // namespace kforge::eval
