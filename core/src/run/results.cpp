#include "run/results.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace kforge {

std::string result_line(const JobOutcome& o) {
  nlohmann::ordered_json line;
  line["job"] = o.job_index;
  line["task"] = o.task_id;
  line["task_index"] = o.task_index;
  line["sample"] = o.sample;
  line["round"] = o.round;
  line["status"] = to_string(o.status);
  line["stage"] = o.stage;
  line["error_class"] = o.error_class;
  line["message"] = o.message;
  // The candidate's description (model, language, tokens, cost, the file it came from...),
  // but not its code or diff, which the store keeps by content hash.
  constexpr size_t kPrefix = std::string_view("candidate.").size();
  for (const auto& [key, value] : o.candidate_text) line[key.substr(kPrefix)] = value;
  for (const auto& [key, value] : o.candidate_numbers) line[key.substr(kPrefix)] = value;
  if (!o.environment.empty()) {
    auto environment = nlohmann::ordered_json::parse(o.environment, nullptr, false);
    if (environment.is_object()) line["environment"] = std::move(environment);
  }
  auto& stages = line["stages"] = nlohmann::ordered_json::array();
  for (const Verdict& v : o.verdicts) {
    nlohmann::ordered_json s;
    s["stage"] = v.stage;
    s["kind"] = v.kind;
    s["status"] = to_string(v.status);
    if (!v.route.empty()) s["route"] = v.route;
    if (!v.error_class.empty()) s["error_class"] = v.error_class;
    if (!v.message.empty()) s["message"] = v.message;
    s["round"] = v.round;
    s["seconds"] = v.seconds;
    if (v.cached) s["cached"] = true;
    if (!v.metrics.empty()) {
      auto& metrics = s["metrics"] = nlohmann::ordered_json::object();
      for (const auto& [name, value] : v.metrics) metrics[name] = value;
    }
    stages.push_back(std::move(s));
  }
  // Invalid UTF-8 from a plugin's message must not lose the result: replace it.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ResultsWriter::ResultsWriter(const std::string& path, Mode mode) : path_(path) {
  // Always O_APPEND: a line another process appends is not overwritten by the next one of
  // ours (it is found by untouched() instead). O_NONBLOCK: a FIFO without a reader is an
  // error now, not a wait.
  fd_ = ::open(path.c_str(),
               O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND | O_NONBLOCK | (mode == Mode::Truncate ? O_TRUNC : 0), 0644);
  if (fd_ < 0) {
    throw std::runtime_error(fmt::format("cannot write results to '{}': {}", path, std::strerror(errno)));
  }
  std::lock_guard lock(mutex_);
  record_locked();
}

ResultsWriter::~ResultsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void ResultsWriter::record_locked() {
  struct stat info {};
  if (::fstat(fd_, &info) != 0) return;
  good_length_ = static_cast<uint64_t>(info.st_size);
  modified_ = info.st_mtim;
}

std::string ResultsWriter::check_locked() const {
  struct stat mine {}, there {};
  if (::fstat(fd_, &mine) != 0) return fmt::format("'{}' cannot be examined: {}", path_, std::strerror(errno));
  if (::stat(path_.c_str(), &there) != 0) return fmt::format("'{}' was deleted", path_);
  if (there.st_dev != mine.st_dev || there.st_ino != mine.st_ino) {
    return fmt::format("'{}' was replaced by another file", path_);
  }
  const auto size = static_cast<uint64_t>(mine.st_size);
  if (size > good_length_) {
    return fmt::format("'{}' grew by {} bytes this run did not write (another process appended to it)", path_,
                       size - good_length_);
  }
  if (size < good_length_) {
    return fmt::format("'{}' was truncated by another process (from {} to {} bytes)", path_, good_length_, size);
  }
  if (mine.st_mtim.tv_sec != modified_.tv_sec || mine.st_mtim.tv_nsec != modified_.tv_nsec) {
    return fmt::format("'{}' was edited in place by another process", path_);
  }
  return "";
}

namespace {

std::string changed_under_the_run(const std::string& change) {
  return change + " while the run was writing it: its lines can no longer be trusted. The run stops; `--resume` "
                  "(same pipeline and --out) rewrites it to agree with the store";
}

}  // namespace

std::string ResultsWriter::untouched() const {
  std::lock_guard lock(mutex_);
  const std::string change = fd_ < 0 ? "" : check_locked();
  return change.empty() ? change : changed_under_the_run(change);
}

std::string ResultsWriter::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

uint64_t ResultsWriter::lines_written() const {
  std::lock_guard lock(mutex_);
  return lines_;
}

bool ResultsWriter::append(const JobOutcome& outcome) {
  const std::string line = result_line(outcome) + "\n";
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return false;
  if (const std::string change = check_locked(); !change.empty()) {
    failure_ = changed_under_the_run(change);
    return false;
  }
  // One write() for the whole line: a reader (or a crash) never sees two jobs' bytes
  // interleaved. A short write (the disk filled up mid-line) is finished or undone.
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failure_ = fmt::format("cannot write a result line to '{}': {}; fix that (free space) and run again with --resume",
                             path_, n < 0 ? std::strerror(errno) : "nothing was written");
      // Cut the torn line off, so every line in the file stays a whole job.
      if (written > 0 && ::ftruncate(fd_, static_cast<off_t>(good_length_)) != 0) {
        failure_ += fmt::format("; its last line is torn and could not be cut off ({}): --resume drops it",
                                std::strerror(errno));
      }
      return false;
    }
    written += static_cast<size_t>(n);
  }
  // What the file should hold now is what it held plus this line: bytes another process
  // appended between the check above and this look would otherwise be taken for ours.
  const uint64_t expected = good_length_ + line.size();
  record_locked();
  ++lines_;
  if (good_length_ != expected) {
    failure_ = changed_under_the_run(
        good_length_ > expected
            ? fmt::format("'{}' grew by {} bytes this run did not write (another process appended to it)", path_,
                          good_length_ - expected)
            : fmt::format("'{}' was truncated by another process (to {} bytes, {} expected)", path_, good_length_,
                          expected));
    return false;
  }
  return true;
}

}  // namespace kforge
