#include "throttle.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

namespace kforge::llm {

namespace {
constexpr auto kPollSlice = std::chrono::milliseconds(50);
}

bool sleep_until(Clock::time_point until, const std::function<bool()>& cancelled) {
  while (true) {
    if (cancelled && cancelled()) return false;
    auto now = Clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_for(std::min<Clock::duration>(until - now, kPollSlice));
  }
}

ConcurrencyLimit::ConcurrencyLimit(int slots) : slots_(slots) {}

bool ConcurrencyLimit::acquire(const std::function<bool()>& cancelled,
                               Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  while (slots_ > 0 && in_use_ >= slots_) {
    if (cancelled && cancelled()) return false;
    if (Clock::now() >= deadline) return false;
    freed_.wait_for(lock, kPollSlice);
  }
  ++in_use_;
  return true;
}

void ConcurrencyLimit::release() {
  {
    std::lock_guard lock(mutex_);
    --in_use_;
  }
  freed_.notify_one();
}

RateLimiter::RateLimiter(double requests_per_minute)
    : per_second_(requests_per_minute / 60.0),
      capacity_(std::max(1.0, std::floor(requests_per_minute / 60.0))),
      tokens_(capacity_),
      last_refill_(Clock::now()) {}

Clock::time_point RateLimiter::reserve(Clock::time_point now) {
  if (per_second_ <= 0) return now;
  std::lock_guard lock(mutex_);
  if (now > last_refill_) {
    double elapsed = std::chrono::duration<double>(now - last_refill_).count();
    tokens_ = std::min(capacity_, tokens_ + elapsed * per_second_);
    last_refill_ = now;
  }
  tokens_ -= 1.0;
  // A caller that read the clock before another one refilled must not be sent earlier.
  Clock::time_point base = std::max(now, last_refill_);
  if (tokens_ >= 0) return base;
  // The debt is paid back at the refill rate; later callers queue behind this one.
  // At most a year: a rate of one request per century must not overflow the clock.
  auto wait = std::chrono::duration<double>(std::min(-tokens_ / per_second_, 365.0 * 24 * 3600));
  return base + std::chrono::duration_cast<Clock::duration>(wait);
}

}  // namespace kforge::llm
