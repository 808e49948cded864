// A fact about this host that a slow subprocess finds once per process (`g++ --version`,
// whether a python imports torch, torch's include directories), shared by every job that
// needs it. The probe runs in a thread of its own under its own time limit; each job waits
// for it only until its own deadline, so a hanging or slow probe never holds a job past
// its stage timeout (a lock held around the probe did: a second job waited for the whole
// probe, whatever its own timeout).
#pragma once

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace kforge::eval {

using ProbeClock = std::chrono::steady_clock;

template <class Value>
class SharedProbe {
 public:
  struct Found {
    Value value;
    // True when the answer holds for the process' life (the probe ran to its end, whatever
    // it said); false when it is an accident of the moment (the probe hit its own time
    // limit, could not start), handed to the jobs that waited for this probe and asked
    // again by the next job.
    bool settled = false;
  };
  // Runs in the probe's thread; polls `stopping` (true when the process is exiting) and
  // then ends at once. An exception it throws reaches the waiters and is not kept.
  using Probe = std::function<Found(const std::function<bool()>& stopping)>;

  SharedProbe() = default;
  SharedProbe(const SharedProbe&) = delete;
  SharedProbe& operator=(const SharedProbe&) = delete;
  // Stops the probes still running (their `stopping` turns true) and joins them.
  ~SharedProbe() {
    std::map<std::thread::id, std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      threads.swap(threads_);
    }
    for (auto& [id, thread] : threads) thread.join();
  }

  // The value for `key`: a settled one at once; else that of the probe running for `key`
  // (started with `probe` when none is), waited for until `deadline`. nullopt when the
  // deadline passed first; the probe runs on for the jobs after.
  std::optional<Value> get(const std::string& key, ProbeClock::time_point deadline, Probe probe) {
    std::shared_future<Value> answer;
    {
      std::lock_guard lock(mutex_);
      if (auto it = settled_.find(key); it != settled_.end()) return it->second;
      join_finished();
      if (auto it = running_.find(key); it != running_.end()) {
        answer = it->second;
      } else {
        auto promise = std::make_shared<std::promise<Value>>();
        answer = promise->get_future().share();
        running_.emplace(key, answer);
        std::thread thread([this, key, promise, probe = std::move(probe)] { run(key, *promise, probe); });
        threads_.emplace(thread.get_id(), std::move(thread));
      }
    }
    if (deadline == ProbeClock::time_point::max()) {
      answer.wait();  // no deadline: the probe's own limit bounds this
    } else if (answer.wait_until(deadline) != std::future_status::ready) {
      return std::nullopt;
    }
    return answer.get();
  }

 private:
  void run(const std::string& key, std::promise<Value>& promise, const Probe& probe) {
    std::optional<Found> found;
    std::exception_ptr failure;
    try {
      found = probe([this] {
        std::lock_guard lock(mutex_);
        return stopping_;
      });
    } catch (...) {
      failure = std::current_exception();
    }
    std::lock_guard lock(mutex_);
    // Settled before the waiters hear it: a job asking after them never probes again.
    if (found && found->settled) settled_[key] = found->value;
    running_.erase(key);
    finished_.push_back(std::this_thread::get_id());
    if (found) {
      promise.set_value(std::move(found->value));
    } else {
      promise.set_exception(failure);
    }
  }

  // Called with mutex_ held. A finished thread no longer needs the mutex (it pushed its id
  // last), so joining it here cannot wait on us.
  void join_finished() {
    for (const std::thread::id& id : finished_) {
      if (auto it = threads_.find(id); it != threads_.end()) {
        it->second.join();
        threads_.erase(it);
      }
    }
    finished_.clear();
  }

  std::mutex mutex_;
  bool stopping_ = false;
  std::map<std::string, Value> settled_;
  std::map<std::string, std::shared_future<Value>> running_;
  std::map<std::thread::id, std::thread> threads_;
  std::vector<std::thread::id> finished_;
};

// A deadline `seconds` from now (+inf, or a negative count, are handled).
inline ProbeClock::time_point probe_deadline_after(double seconds) {
  if (!(seconds < 1e9)) return ProbeClock::time_point::max();
  return ProbeClock::now() + std::chrono::duration_cast<ProbeClock::duration>(
                                 std::chrono::duration<double>(std::max(0.0, seconds)));
}

}  // namespace kforge::eval
