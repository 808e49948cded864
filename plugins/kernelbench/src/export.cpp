#include "export.hpp"

#include <kforge/abi.h>

#include <cctype>
#include <cstdio>
#include <stdexcept>

namespace kforge::kernelbench {
namespace {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

std::optional<double> number(const json& object, const std::string& name) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(name);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string text(const json& object, const char* name) {
  const auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// KernelBench's "hardware": torch.cuda.get_device_name(), i.e. the GPU's model; kforge's
// environment names it "gpu" (the CPU's model on a cpu device).
std::string hardware_of(const json& job) {
  const json environment = job.value("environment", json::object());
  for (const char* key : {"gpu", "cpu"}) {
    if (environment.contains(key) && environment[key].is_string()) return environment[key].get<std::string>();
  }
  const std::string device = text(job, "device");
  return device.empty() ? "unknown" : device;
}

std::string device_of(const json& job) {
  const std::string device = text(job, "device");
  return device.empty() ? "unknown" : device;
}

// The per-call statistics a run stage measured for one party (KF_TIMING_*), by
// KernelBench's names (its get_timing_stats), then hardware and device. Empty where the
// metrics have no mean (not timed, or a store from before the harness measured one): the
// median is another statistic, so nothing is made up from it.
ojson timing_stats(const json& job, const std::string& party) {
  const json metrics = job.value("metrics", json::object());
  ojson stats = ojson::object();
  const auto mean = number(metrics, party + KF_TIMING_MS_MEAN);
  if (!mean) return stats;
  stats["mean"] = *mean;
  for (const auto& [field, suffix] : {std::pair{"std", KF_TIMING_MS_STD}, {"min", KF_TIMING_MS_MIN}, {"max", KF_TIMING_MS_MAX}}) {
    if (auto value = number(metrics, party + suffix)) stats[field] = *value;
  }
  if (auto trials = number(metrics, party + KF_TIMING_TRIALS)) stats["num_trials"] = static_cast<int64_t>(*trials);
  stats["hardware"] = hardware_of(job);
  stats["device"] = device_of(job);
  return stats;
}

std::string six_decimals(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.6f", value);
  return buffer;
}

std::string dump(const ojson& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// `text` (a dump of indent 2) as a member of a document at one more level of nesting.
std::string indented(const std::string& text, const char* prefix) {
  std::string out;
  size_t start = 0;
  for (size_t end = text.find('\n');; end = text.find('\n', start)) {
    if (start > 0) out += prefix;
    out.append(text, start, end == std::string::npos ? std::string::npos : end + 1 - start);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace

std::optional<int> problem_id_of(const std::string& task_name) {
  size_t digits = 0;
  while (digits < task_name.size() && digits < 9 && std::isdigit(static_cast<unsigned char>(task_name[digits]))) ++digits;
  if (digits == 0) return std::nullopt;
  return std::stoi(task_name.substr(0, digits));
}

ojson kernelbench_entry(const json& job) {
  const json metrics = job.value("metrics", json::object());
  const bool passed = job.value("passed", false);
  const std::string error_class = text(job, "error_class");
  const std::string message = text(job, "message");
  // The common outcome kforge gives every candidate (records.jsonl's status).
  const std::string outcome = text(job, "outcome");
  ojson metadata = ojson::object();
  metadata["hardware"] = hardware_of(job);
  metadata["device"] = device_of(job);
  if (passed) {
    if (auto trials = number(metrics, KF_METRIC_TRIALS)) {
      const auto n = static_cast<int64_t>(*trials);
      metadata["correctness_trials"] = "(" + std::to_string(n) + " / " + std::to_string(n) + ")";
    }
  } else if (outcome == "compile error") {
    metadata["compilation_error_name"] = error_class;
    metadata["compilation_error"] = message;
  } else if (outcome == "runtime error" || outcome == "timeout") {
    metadata["runtime_error"] = message;
    metadata["runtime_error_name"] = error_class;
  } else if (outcome.starts_with("incorrect ")) {
    metadata["correctness_issue"] = message;
    if (auto max_diff = number(metrics, KF_METRIC_MAX_ABS_DIFF)) metadata["max_difference"] = ojson::array({six_decimals(*max_diff)});
    if (auto mean_diff = number(metrics, KF_METRIC_MEAN_ABS_DIFF)) metadata["avg_difference"] = ojson::array({six_decimals(*mean_diff)});
  }
  if (!passed) {
    // What KernelBench has no key for stays findable: kforge's own verdict.
    metadata["kforge_status"] = outcome;
    metadata["kforge_error_class"] = error_class;
    metadata["kforge_stage"] = text(job, "stage");
    metadata["kforge_message"] = message;
  }
  if (number(metrics, KF_METRIC_SUSPICIOUS_SPEEDUP)) metadata["excessive_speedup"] = true;

  ojson entry;
  entry["sample_id"] = job.value("sample", 0);
  entry["compiled"] = job.value("compiled", false);
  entry["correctness"] = passed;
  ojson stats = passed ? timing_stats(job, KF_TIMING_CANDIDATE) : ojson::object();
  entry["metadata"] = std::move(metadata);
  entry["runtime"] = stats.contains("mean") ? stats["mean"].get<double>() : -1.0;
  entry["runtime_stats"] = std::move(stats);
  return entry;
}

KernelBenchExport::KernelBenchExport(std::string_view options_json) {
  const json options = json::parse(options_json);
  for (const auto& [key, value] : options.items()) {
    if (key != "level") {
      throw std::invalid_argument("unknown option '" + key + "': the kernelbench export takes level=L (the level to export)");
    }
    if (!value.is_number_integer() || value.get<int64_t>() < 1) {
      throw std::invalid_argument("option level=" + value.dump() + ": expected a level number, 1 or more");
    }
    level_ = value.get<int>();
  }
}

void KernelBenchExport::task(std::string_view task_json) {
  const json task = json::parse(task_json);
  const std::string id = text(task, "id");
  if (!task.value("known", false)) throw std::runtime_error("the store has no task row for job task '" + id + "'");
  const int level = static_cast<int>(task.value("level", 0.0));
  auto& problems = problems_[level];
  const std::string name = text(task, "name");
  Problem problem{id, name, ojson::array(), std::nullopt};
  std::map<int, ojson> entries;  // by sample
  for (const json& job : task.value("jobs", json::array())) {
    if (!problem.baseline) {
      ojson stats = timing_stats(job, KF_TIMING_REFERENCE);
      if (!stats.empty()) problem.baseline = std::move(stats);
    }
    // A sample the run folder did not have was never evaluated: KernelBench has no entry for it.
    if (text(job, "error_class") == KF_ERROR_NO_CANDIDATE) continue;
    entries[job.value("sample", 0)] = kernelbench_entry(job);
  }
  for (auto& [sample, entry] : entries) problem.entries.push_back(std::move(entry));
  const auto problem_id = problem_id_of(name);
  if (!problem_id) {
    unnumbered_.emplace(level, "task '" + id + "' is no KernelBench problem: its name '" + name +
                                   "' does not start with a problem id");
    return;
  }
  const auto [it, added] = problems.emplace(*problem_id, std::move(problem));
  if (!added && !duplicate_.count(level)) {
    duplicate_[level] = "tasks '" + it->second.task + "' and '" + id + "' both have problem id " +
                        std::to_string(*problem_id) + " in level " + std::to_string(level);
  }
}

std::pair<std::string, std::string> KernelBenchExport::finish() const {
  std::set<int> levels;
  for (const auto& [level, problems] : problems_) levels.insert(level);
  std::string listed;
  for (int level : levels) listed += (listed.empty() ? "" : ", ") + std::to_string(level);
  if (level_ && !levels.count(*level_)) {
    throw std::runtime_error("the run has no task of level " + std::to_string(*level_) + " (its levels: " + listed + ")");
  }
  if (!level_ && levels.size() > 1) {
    throw std::runtime_error("the run has tasks of levels " + listed +
                             "; KernelBench keeps one level per eval_results.json: pass --option level=L");
  }
  const int level = level_ ? *level_ : (levels.empty() ? 1 : *levels.begin());
  if (auto it = unnumbered_.find(level); it != unnumbered_.end()) throw std::runtime_error(it->second);
  if (auto it = duplicate_.find(level); it != duplicate_.end()) throw std::runtime_error(it->second);

  static const std::map<int, Problem> kNone;
  const auto found = problems_.find(level);
  const std::map<int, Problem>& problems = found == problems_.end() ? kNone : found->second;
  // Each problem's list as the whole document's dump would indent it.
  std::string results;
  uint64_t written = 0;
  for (const auto& [id, problem] : problems) {
    if (problem.entries.empty()) continue;
    results += (written++ == 0 ? "{\n  " : ",\n  ") + ojson(std::to_string(id)).dump() + ": " +
               indented(dump(problem.entries, 2), "  ");
  }
  results += written == 0 ? "{}\n" : "\n}\n";

  std::string baseline;
  const std::string level_key = ojson("level" + std::to_string(level)).dump();
  written = 0;
  for (const auto& [id, problem] : problems) {
    if (!problem.baseline) continue;
    baseline += (written++ == 0 ? "{\n  " + level_key + ": {\n    " : ",\n    ") + dump(ojson(problem.name + ".py"), -1) +
                ": " + indented(dump(*problem.baseline, 2), "    ");
  }
  baseline += written == 0 ? "{\n  " + level_key + ": {}\n}\n" : "\n  }\n}\n";
  return {results, baseline};
}

}  // namespace kforge::kernelbench
