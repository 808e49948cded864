// A run's cancellation: requested by a signal handler, a failing store or a test; read by
// the executor between stage calls and by plugins through the host API. One per run, so
// two runs in one process (tests, an embedding program) stop independently.
#pragma once

#include "api.hpp"

#include <atomic>

namespace kforge {

class CancelToken {
 public:
  // Async-signal-safe: a lock-free atomic store.
  void request() noexcept { requested_.store(true, std::memory_order_relaxed); }
  bool requested() const noexcept { return requested_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> requested_{false};
};

// Scopes the token that the ABI's run_cancelled() (which names no job) reports on the
// calling thread: set around every stage and source call.
class KFORGE_API CurrentRun {
 public:
  explicit CurrentRun(const CancelToken& token);
  ~CurrentRun();
  CurrentRun(const CurrentRun&) = delete;
  CurrentRun& operator=(const CurrentRun&) = delete;
  static bool cancelled();

 private:
  const CancelToken* previous_;
};

}  // namespace kforge
