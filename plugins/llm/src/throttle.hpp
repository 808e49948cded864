// Limits on how hard one endpoint is hit: a cap on requests in flight and a request rate.
// Both wait in short slices so that a cancelled run or an expired stage timeout is
// noticed within ~50 ms instead of after a long sleep.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace kforge::llm {

using Clock = std::chrono::steady_clock;

// Sleeps until `until`; returns false early when `cancelled` (may be empty) turns true.
bool sleep_until(Clock::time_point until, const std::function<bool()>& cancelled);

// A counting semaphore whose waits can be abandoned.
class ConcurrencyLimit {
 public:
  explicit ConcurrencyLimit(int slots);  // slots <= 0: no limit

  // Takes a slot; false when `cancelled` turned true or `deadline` passed first.
  bool acquire(const std::function<bool()>& cancelled, Clock::time_point deadline);
  void release();

 private:
  const int slots_;
  int in_use_ = 0;
  std::mutex mutex_;
  std::condition_variable freed_;
};

// Holds one slot of a ConcurrencyLimit for its lifetime.
class ConcurrencySlot {
 public:
  explicit ConcurrencySlot(ConcurrencyLimit& limit) : limit_(limit) {}
  ~ConcurrencySlot() { limit_.release(); }
  ConcurrencySlot(const ConcurrencySlot&) = delete;
  ConcurrencySlot& operator=(const ConcurrencySlot&) = delete;

 private:
  ConcurrencyLimit& limit_;
};

// Token bucket: `requests_per_minute` tokens refill evenly; the bucket holds one second's
// worth (at least one), so a burst never exceeds what the rate allows in a second.
// Callers reserve a token and are told when they may send; reservations queue up in
// order, so waiting callers are served fairly.
class RateLimiter {
 public:
  explicit RateLimiter(double requests_per_minute);  // <= 0: no limit

  // Takes the next token and returns the time the request may be sent (>= now).
  Clock::time_point reserve(Clock::time_point now);

 private:
  const double per_second_;
  const double capacity_;
  double tokens_;
  Clock::time_point last_refill_;
  std::mutex mutex_;
};

}  // namespace kforge::llm
