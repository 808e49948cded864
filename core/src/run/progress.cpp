#include "run/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace kforge {
namespace {

constexpr std::chrono::milliseconds kBarRedraw{250};

std::string total_text(const ProgressCounts& c) {
  const uint64_t finished = c.already_done + c.done;
  return c.expected > 0 ? fmt::format("{}/{}", finished, c.expected) : fmt::format("{}", finished);
}

double rate(const ProgressCounts& c) { return c.elapsed > 0 ? static_cast<double>(c.done) / c.elapsed : 0.0; }

}  // namespace

ProgressMode progress_mode_for(std::FILE* stream) {
  return isatty(fileno(stream)) != 0 ? ProgressMode::Bar : ProgressMode::Lines;
}

std::optional<double> ProgressCounts::eta() const {
  const uint64_t finished = already_done + done;
  if (expected == 0 || done == 0 || elapsed <= 0) return std::nullopt;
  const uint64_t left = expected > finished ? expected - finished : 0;
  return static_cast<double>(left) / rate(*this);
}

std::string format_clock(double seconds) {
  const auto total = static_cast<uint64_t>(std::llround(std::max(0.0, seconds)));
  const uint64_t hours = total / 3600;
  const uint64_t minutes = (total / 60) % 60;
  const uint64_t secs = total % 60;
  return hours > 0 ? fmt::format("{}:{:02}:{:02}", hours, minutes, secs) : fmt::format("{}:{:02}", minutes, secs);
}

std::string progress_bar(const ProgressCounts& c, int bar_width) {
  const uint64_t finished = c.already_done + c.done;
  const double fraction = c.expected > 0 ? std::min(1.0, static_cast<double>(finished) / static_cast<double>(c.expected)) : 0.0;
  const int filled = static_cast<int>(fraction * bar_width);
  const double pass = c.done > 0 ? 100.0 * static_cast<double>(c.passed) / static_cast<double>(c.done) : 0.0;
  const auto eta = c.eta();
  return fmt::format("[{}{}] {}  pass {:.1f}%  fail {}  err {}  {:.1f}/s  ETA {}", std::string(filled, '#'),
                     std::string(bar_width - filled, '-'), total_text(c), pass, c.failed, c.errors, rate(c),
                     eta ? format_clock(*eta) : "?");
}

std::string progress_line(const ProgressCounts& c) {
  const uint64_t finished = c.already_done + c.done;
  std::string share;
  if (c.expected > 0) share = fmt::format(" ({:.1f}%)", 100.0 * static_cast<double>(finished) / static_cast<double>(c.expected));
  const double pass = c.done > 0 ? 100.0 * static_cast<double>(c.passed) / static_cast<double>(c.done) : 0.0;
  const auto eta = c.eta();
  return fmt::format("progress: {} jobs{}, {} passed ({:.1f}%), {} failed, {} errors, {:.1f} jobs/s, elapsed {}, ETA {}",
                     total_text(c), share, c.passed, pass, c.failed, c.errors, rate(c), format_clock(c.elapsed),
                     eta ? format_clock(*eta) : "?");
}

ProgressObserver::ProgressObserver(ProgressMode mode, std::FILE* out, double interval, uint64_t already_done)
    : mode_(mode), out_(out), interval_(interval), already_done_(already_done) {}

ProgressObserver::~ProgressObserver() { finish(); }

void ProgressObserver::run_started(uint64_t expected_jobs) {
  expected_ = expected_jobs;
  started_ = std::chrono::steady_clock::now();
  if (mode_ != ProgressMode::Off) ticker_ = std::thread([this] { tick_loop(); });
  running_ = true;
}

void ProgressObserver::job_finished(const Job&, const JobOutcome& outcome) {
  switch (outcome.status) {
    case VerdictStatus::Pass:
      ++passed_;
      break;
    case VerdictStatus::Fail:
      ++failed_;
      break;
    case VerdictStatus::Error:
      ++errors_;
      break;
  }
  ++done_;
}

ProgressCounts ProgressObserver::counts() const {
  ProgressCounts c;
  c.expected = expected_;
  c.already_done = already_done_;
  c.done = done_;
  c.passed = passed_;
  c.failed = failed_;
  c.errors = errors_;
  c.elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  return c;
}

void ProgressObserver::tick_loop() {
  const auto period = mode_ == ProgressMode::Bar ? std::chrono::duration_cast<std::chrono::steady_clock::duration>(kBarRedraw)
                                                 : std::chrono::duration_cast<std::chrono::steady_clock::duration>(interval_);
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stopping_; })) draw(false);
}

void ProgressObserver::draw(bool last) {
  const ProgressCounts c = counts();
  if (mode_ == ProgressMode::Bar) {
    // \r and erase-line redraw in place; the last draw ends the line.
    fmt::print(out_, "\r\033[K{}{}", progress_bar(c), last ? "\n" : "");
  } else {
    fmt::print(out_, "{}\n", progress_line(c));
  }
  std::fflush(out_);
}

void ProgressObserver::finish() {
  {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    finished_ = true;
    stopping_ = true;
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  if (mode_ != ProgressMode::Off && running_) {
    std::lock_guard lock(mutex_);
    draw(true);
  }
}

}  // namespace kforge
