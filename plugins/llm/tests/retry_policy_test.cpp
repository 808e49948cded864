#include "retry_policy.hpp"

#include <gtest/gtest.h>

namespace kforge::llm {
namespace {

std::time_t utc(int year, int month, int day, int hour, int minute, int second) {
  std::tm t{};
  t.tm_year = year - 1900;
  t.tm_mon = month - 1;
  t.tm_mday = day;
  t.tm_hour = hour;
  t.tm_min = minute;
  t.tm_sec = second;
  return timegm(&t);
}

TEST(RetryAfter, ReadsDeltaSeconds) {
  EXPECT_EQ(parse_retry_after("3", 0), 3.0);
  EXPECT_EQ(parse_retry_after(" 120 ", 0), 120.0);
  EXPECT_EQ(parse_retry_after("1.5", 0), 1.5);
  EXPECT_EQ(parse_retry_after("0", 0), 0.0);
}

TEST(RetryAfter, ReadsHttpDatesRelativeToNow) {
  std::time_t now = utc(2015, 10, 21, 7, 27, 30);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now), 30.0);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now), 0.0) << "a past date";
}

TEST(RetryAfter, RejectsWhatItCannotRead) {
  EXPECT_FALSE(parse_retry_after("", 0));
  EXPECT_FALSE(parse_retry_after("-1", 0));
  EXPECT_FALSE(parse_retry_after("soon", 0));
  EXPECT_FALSE(parse_retry_after("3 seconds", 0));
  EXPECT_FALSE(parse_retry_after("Wed, 21 Oct 2015", 0));
}

TEST(RetryPolicy, BackoffDoublesWithJitterAndIsCapped) {
  RetryPolicy policy{10, 1.0, 5.0};
  for (int trial = 0; trial < 50; ++trial) {
    double first = policy.backoff_s(1);
    EXPECT_GE(first, 0.5);
    EXPECT_LE(first, 1.0);
    double third = policy.backoff_s(3);
    EXPECT_GE(third, 2.0);
    EXPECT_LE(third, 4.0);
    double capped = policy.backoff_s(9);
    EXPECT_GE(capped, 2.5);
    EXPECT_LE(capped, 5.0);
  }
}

TEST(RetryPolicy, RetriesOnlyTransientStatuses) {
  for (long status : {408L, 429L, 500L, 502L, 503L, 504L}) EXPECT_TRUE(is_retryable_status(status)) << status;
  for (long status : {400L, 401L, 403L, 404L, 422L}) EXPECT_FALSE(is_retryable_status(status)) << status;
}

}  // namespace
}  // namespace kforge::llm
