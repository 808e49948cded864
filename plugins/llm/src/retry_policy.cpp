#include "retry_policy.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <random>
#include <string>

namespace kforge::llm {

double RetryPolicy::backoff_s(int retry) const {
  thread_local std::minstd_rand rng{std::random_device{}()};
  double full = initial_backoff_s * std::pow(2.0, std::max(0, retry - 1));
  full = std::min(full, max_backoff_s);
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  return full * jitter(rng);
}

bool is_retryable_status(long status) {
  return status == 408 || status == 409 || status == 425 || status == 429 || status >= 500;
}

std::optional<double> parse_retry_after(std::string_view value, std::time_t now) {
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front()))) {
    value.remove_prefix(1);
  }
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) {
    value.remove_suffix(1);
  }
  if (value.empty()) return std::nullopt;
  if (std::isdigit(static_cast<unsigned char>(value.front()))) {
    double seconds = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (ec != std::errc() || end != value.data() + value.size() || seconds < 0) {
      return std::nullopt;
    }
    return seconds;
  }
  std::string text(value);
  std::tm when{};
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &when);
  if (end == nullptr || *end != '\0') return std::nullopt;
  std::time_t at = timegm(&when);
  return std::max(0.0, std::difftime(at, now));
}

}  // namespace kforge::llm
