// When and how long to wait before trying an LLM request again.
#pragma once

#include <ctime>
#include <optional>
#include <string_view>

namespace kforge::llm {

struct RetryPolicy {
  int max_retries = 5;  // retries after the first attempt
  double initial_backoff_s = 1.0;
  double max_backoff_s = 60.0;

  // Wait before retry number `retry` (1-based): initial * 2^(retry-1), capped at the
  // maximum, then scaled by a random factor in [0.5, 1] so that clients which failed
  // together do not come back together.
  double backoff_s(int retry) const;
};

// HTTP status codes worth another try: 408, 409 (some gateways), 425, 429 and 5xx.
bool is_retryable_status(long status);

// The value of a Retry-After header as seconds from `now`: delta-seconds ("120", also a
// decimal "1.5" some servers send) or an IMF-fixdate ("Wed, 21 Oct 2015 07:28:00 GMT").
// A date in the past gives 0; anything unreadable gives nullopt.
std::optional<double> parse_retry_after(std::string_view value, std::time_t now);

}  // namespace kforge::llm
