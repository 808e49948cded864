#include "throttle.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace kforge::llm {
namespace {

using std::chrono::milliseconds;

TEST(RateLimiter, BurstsUpToOneSecondThenSpacesRequestsEvenly) {
  RateLimiter limiter(600);  // 10 per second, bucket of 10
  const auto t0 = Clock::now();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(limiter.reserve(t0), t0) << "request " << i;
  EXPECT_EQ(limiter.reserve(t0), t0 + milliseconds(100));
  EXPECT_EQ(limiter.reserve(t0), t0 + milliseconds(200));
}

TEST(RateLimiter, RefillsWhileIdleButNeverBeyondTheBucket) {
  RateLimiter limiter(60);  // 1 per second, bucket of 1
  const auto t0 = Clock::now();
  EXPECT_EQ(limiter.reserve(t0), t0);
  const auto later = t0 + std::chrono::seconds(10);
  EXPECT_EQ(limiter.reserve(later), later);
  EXPECT_EQ(limiter.reserve(later), later + std::chrono::seconds(1));
}

TEST(RateLimiter, ZeroMeansNoLimit) {
  RateLimiter limiter(0);
  const auto t0 = Clock::now();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(limiter.reserve(t0), t0);
}

TEST(ConcurrencyLimit, WaitsForAFreeSlotAndGivesUpAtTheDeadline) {
  ConcurrencyLimit limit(2);
  const auto far = Clock::now() + std::chrono::seconds(10);
  ASSERT_TRUE(limit.acquire({}, far));
  ASSERT_TRUE(limit.acquire({}, far));
  const auto started = Clock::now();
  EXPECT_FALSE(limit.acquire({}, Clock::now() + milliseconds(60)));
  EXPECT_GE(Clock::now() - started, milliseconds(55));

  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(30));
    limit.release();
  });
  EXPECT_TRUE(limit.acquire({}, far));
  releaser.join();
}

TEST(ConcurrencyLimit, CancellationEndsTheWait) {
  ConcurrencyLimit limit(1);
  ASSERT_TRUE(limit.acquire({}, Clock::time_point::max()));
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(50));
    cancel = true;
  });
  EXPECT_FALSE(limit.acquire([&] { return cancel.load(); }, Clock::time_point::max()));
  canceller.join();
}

TEST(SleepUntil, StopsEarlyWhenCancelled) {
  const auto started = Clock::now();
  EXPECT_FALSE(sleep_until(started + std::chrono::seconds(5), [] { return true; }));
  EXPECT_LT(Clock::now() - started, milliseconds(100));
  EXPECT_TRUE(sleep_until(Clock::now() + milliseconds(20), {}));
}

}  // namespace
}  // namespace kforge::llm
