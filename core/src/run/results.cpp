#include "run/results.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
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

namespace {

void drop_partial_last_line(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size == 0) return;
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.back() == '\n') return;
  const size_t keep = text.find_last_of('\n');
  std::filesystem::resize_file(path, keep == std::string::npos ? 0 : keep + 1, ec);
}

}  // namespace

ResultsWriter::ResultsWriter(const std::string& path, Mode mode) {
  if (mode == Mode::Append) drop_partial_last_line(path);
  file_ = std::fopen(path.c_str(), mode == Mode::Append ? "a" : "w");
  if (file_ == nullptr) {
    throw std::runtime_error(fmt::format("cannot write results to '{}': {}", path, std::strerror(errno)));
  }
}

ResultsWriter::~ResultsWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void ResultsWriter::job_finished(const Job&, const JobOutcome& outcome) {
  const std::string line = result_line(outcome);
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fputc('\n', file_);
  std::fflush(file_);
}

}  // namespace kforge
