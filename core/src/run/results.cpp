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
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (mode == Mode::Append ? O_APPEND : O_TRUNC), 0644);
  if (fd_ < 0) {
    throw std::runtime_error(fmt::format("cannot write results to '{}': {}", path, std::strerror(errno)));
  }
  struct stat info {};
  if (::fstat(fd_, &info) == 0 && S_ISREG(info.st_mode)) good_length_ = static_cast<uint64_t>(info.st_size);
}

ResultsWriter::~ResultsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

bool ResultsWriter::append(const JobOutcome& outcome) {
  if (!failure_.empty()) return false;
  const std::string line = result_line(outcome) + "\n";
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
  good_length_ += line.size();
  ++lines_;
  return true;
}

}  // namespace kforge
