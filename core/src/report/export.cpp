#include "report/export.hpp"

#include <fmt/format.h>
#include <kforge/abi.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "run/store/store.hpp"

namespace kforge {
namespace {

using ojson = nlohmann::ordered_json;

enum class Outcome { Passed, Shape, Dtype, Numerical, Compile, Runtime, Timeout, Rejected, NoCandidate, Evaluation, Other };

// The ABI's well-known error classes (KF_ERROR_*) by what they say about the candidate.
// docs/reports.md#exports lists the table.
Outcome outcome_of_job(const JobOutcome& job) {
  if (job.passed()) return Outcome::Passed;
  static const std::map<std::string, Outcome> kByClass = {
      {KF_ERROR_SHAPE_MISMATCH, Outcome::Shape},       {KF_ERROR_DTYPE_MISMATCH, Outcome::Dtype},
      {KF_ERROR_NUMERICAL_MISMATCH, Outcome::Numerical}, {KF_ERROR_SYNTAX, Outcome::Compile},
      {KF_ERROR_COMPILE, Outcome::Compile},            {KF_ERROR_INIT, Outcome::Runtime},
      {KF_ERROR_RUNTIME, Outcome::Runtime},            {KF_ERROR_DEVICE, Outcome::Runtime},
      {KF_ERROR_CRASH, Outcome::Runtime},              {KF_ERROR_OUT_OF_MEMORY, Outcome::Runtime},
      {KF_ERROR_TIMEOUT, Outcome::Timeout},            {KF_ERROR_STAGE_TIMEOUT, Outcome::Timeout},
      {KF_ERROR_CHECKER_REJECTED, Outcome::Rejected},  {KF_ERROR_CHEAT_DETECTED, Outcome::Rejected},
      {KF_ERROR_NO_CANDIDATE, Outcome::NoCandidate}};
  if (job.status == VerdictStatus::Error && !kByClass.count(job.error_class)) return Outcome::Evaluation;
  const auto it = kByClass.find(job.error_class);
  return it == kByClass.end() ? Outcome::Other : it->second;
}

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::Passed: return "passed";
    case Outcome::Shape: return "incorrect shape";
    case Outcome::Dtype: return "incorrect dtype";
    case Outcome::Numerical: return "incorrect numerical";
    case Outcome::Compile: return "compile error";
    case Outcome::Runtime: return "runtime error";
    case Outcome::Timeout: return "timeout";
    case Outcome::Rejected: return "rejected";
    case Outcome::NoCandidate: return "no candidate";
    case Outcome::Evaluation: return "evaluation error";
    case Outcome::Other: return "failed";
  }
  return "failed";
}

std::optional<double> number(const nlohmann::json& metrics, const char* name) {
  if (!metrics.is_object()) return std::nullopt;
  const auto it = metrics.find(name);
  if (it == metrics.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

ojson nullable(std::optional<double> value) { return value ? ojson(*value) : ojson(nullptr); }

std::map<std::string, std::string> environment_facts(const JobOutcome& job) {
  std::map<std::string, std::string> facts;
  const auto parsed = nlohmann::json::parse(job.environment.empty() ? "{}" : job.environment, nullptr, false);
  if (!parsed.is_object()) return facts;
  for (const auto& [key, value] : parsed.items()) facts[key] = value.is_string() ? value.get<std::string>() : value.dump();
  return facts;
}

// KernelBench's "hardware": torch.cuda.get_device_name(), i.e. the GPU's model; kforge's
// environment names it "gpu" (the CPU's model on a cpu device).
std::string hardware_of(const JobOutcome& job) {
  const auto facts = environment_facts(job);
  for (const char* key : {"gpu", "cpu"}) {
    if (auto it = facts.find(key); it != facts.end()) return it->second;
  }
  return job.device.empty() ? "unknown" : job.device;
}

// The per-call statistics a run stage measured for one party (KF_TIMING_*), by
// KernelBench's names (its get_timing_stats): mean, std, min, max and num_trials of the
// timed calls. Empty where the metrics have no mean (not timed, or a store from before the
// harness measured one): the median is another statistic, so nothing is made up from it;
// a statistic the metrics lack is left out.
ojson measured_stats(const nlohmann::json& metrics, const std::string& party) {
  ojson stats = ojson::object();
  const auto mean = number(metrics, (party + KF_TIMING_MS_MEAN).c_str());
  if (!mean) return stats;
  stats["mean"] = *mean;
  for (const auto& [field, suffix] : {std::pair{"std", KF_TIMING_MS_STD}, {"min", KF_TIMING_MS_MIN}, {"max", KF_TIMING_MS_MAX}}) {
    if (auto value = number(metrics, (party + suffix).c_str())) stats[field] = *value;
  }
  if (auto trials = number(metrics, (party + KF_TIMING_TRIALS).c_str())) {
    stats["num_trials"] = static_cast<int64_t>(*trials);
  }
  return stats;
}

// KernelBench's runtime_stats: the measured statistics, then hardware and device.
ojson timing_stats(const nlohmann::json& metrics, const std::string& party, const JobOutcome& job) {
  ojson stats = measured_stats(metrics, party);
  if (stats.empty()) return stats;
  stats["hardware"] = hardware_of(job);
  stats["device"] = job.device.empty() ? "unknown" : job.device;
  return stats;
}

std::string six_decimals(double value) { return fmt::format("{:.6f}", value); }

}  // namespace

std::optional<ExportFormat> parse_export_format(const std::string& name) {
  if (name == "kernelbench") return ExportFormat::KernelBench;
  if (name == "records") return ExportFormat::Records;
  return std::nullopt;
}

std::string common_status(const JobOutcome& job) { return outcome_name(outcome_of_job(job)); }

std::optional<int> problem_id_of(const std::string& task_name) {
  size_t digits = 0;
  while (digits < task_name.size() && digits < 9 && std::isdigit(static_cast<unsigned char>(task_name[digits]))) ++digits;
  if (digits == 0) return std::nullopt;
  return std::stoi(task_name.substr(0, digits));
}

ojson kernelbench_entry(const JobOutcome& job, const nlohmann::json& metrics) {
  ojson metadata = ojson::object();
  metadata["hardware"] = hardware_of(job);
  metadata["device"] = job.device.empty() ? "unknown" : job.device;
  const Outcome outcome = outcome_of_job(job);
  const auto trials = number(metrics, KF_METRIC_TRIALS);
  switch (outcome) {
    case Outcome::Passed:
      if (trials) metadata["correctness_trials"] = fmt::format("({} / {})", static_cast<int64_t>(*trials), static_cast<int64_t>(*trials));
      break;
    case Outcome::Compile:
      metadata["compilation_error_name"] = job.error_class;
      metadata["compilation_error"] = job.message;
      break;
    case Outcome::Runtime:
    case Outcome::Timeout:
      metadata["runtime_error"] = job.message;
      metadata["runtime_error_name"] = job.error_class;
      break;
    case Outcome::Shape:
    case Outcome::Dtype:
    case Outcome::Numerical:
      metadata["correctness_issue"] = job.message;
      if (auto max_diff = number(metrics, KF_METRIC_MAX_ABS_DIFF)) metadata["max_difference"] = ojson::array({six_decimals(*max_diff)});
      if (auto mean_diff = number(metrics, KF_METRIC_MEAN_ABS_DIFF)) metadata["avg_difference"] = ojson::array({six_decimals(*mean_diff)});
      break;
    default:
      break;
  }
  if (!job.passed()) {
    // What KernelBench has no key for stays findable: kforge's own verdict.
    metadata["kforge_status"] = outcome_name(outcome);
    metadata["kforge_error_class"] = job.error_class;
    metadata["kforge_stage"] = job.stage;
    metadata["kforge_message"] = job.message;
  }
  if (number(metrics, KF_METRIC_SUSPICIOUS_SPEEDUP)) metadata["excessive_speedup"] = true;

  ojson entry;
  entry["sample_id"] = job.sample;
  entry["compiled"] = job.compiled();
  entry["correctness"] = job.passed();
  ojson stats = job.passed() ? timing_stats(metrics, KF_TIMING_CANDIDATE, job) : ojson::object();
  entry["metadata"] = std::move(metadata);
  entry["runtime"] = stats.contains("mean") ? stats["mean"].get<double>() : -1.0;
  entry["runtime_stats"] = std::move(stats);
  return entry;
}

ojson export_record(const Dataset& data, const JobOutcome& job, const nlohmann::json& metrics) {
  const auto task = data.tasks.find(job.task_id);
  ojson r;
  r["kforge_record"] = 1;
  r["strategy"] = data.label;
  r["task"] = job.task_id;
  r["task_name"] = task == data.tasks.end() ? job.task_id : task->second.name;
  r["level"] = task == data.tasks.end() ? ojson(nullptr) : ojson(task->second.level);
  r["category"] = task == data.tasks.end() ? "" : task->second.category;
  r["sample"] = job.sample;
  r["round"] = job.round;
  r["status"] = common_status(job);
  r["error_class"] = job.error_class;
  r["message"] = job.message;
  r["stage"] = job.stage;
  r["language"] = job.language;
  r["model"] = job.model;
  r["device"] = job.device;
  r["correctness_trials"] = nullable(number(metrics, KF_METRIC_TRIALS));
  r["max_abs_error"] = nullable(number(metrics, KF_METRIC_MAX_ABS_DIFF));
  r["mean_abs_error"] = nullable(number(metrics, KF_METRIC_MEAN_ABS_DIFF));
  r["max_rel_error"] = nullable(number(metrics, KF_METRIC_MAX_REL_ERROR));
  r["latency_ms"] = nullable(number(metrics, KF_TIMING_CANDIDATE KF_TIMING_MS));
  r["latency_p90_ms"] = nullable(number(metrics, KF_TIMING_CANDIDATE KF_TIMING_MS_P90));
  r["reference_latency_ms"] = nullable(number(metrics, KF_TIMING_REFERENCE KF_TIMING_MS));
  r["reference_latency_p90_ms"] = nullable(number(metrics, KF_TIMING_REFERENCE KF_TIMING_MS_P90));
  for (const auto& [key, party] : {std::pair{"latency_stats", KF_TIMING_CANDIDATE}, {"reference_latency_stats", KF_TIMING_REFERENCE}}) {
    ojson stats = measured_stats(metrics, party);
    r[key] = stats.empty() ? ojson(nullptr) : std::move(stats);
  }
  r["speedup"] = nullable(job.speedup);
  const auto facts = environment_facts(job);
  r["environment"] = facts.empty() ? ojson(nullptr) : ojson(facts);
  return r;
}

ExportInput load_export_input(const std::string& directory) {
  const std::unique_ptr<Store> opened = open_store_read_only(directory);
  Store& store = *opened;
  const std::optional<RunRecord> latest = store.latest_run();
  if (!latest) {
    throw ExportError(fmt::format("'{}' holds no run yet: run `kforge run PIPELINE --out {}` first", directory, directory));
  }
  ExportInput input;
  input.data = store.load_dataset(latest->series);
  for (auto& [key, text] : store.load_run_metrics(latest->series)) {
    auto parsed = nlohmann::json::parse(text, nullptr, false);
    if (parsed.is_object()) input.run_metrics.emplace(key, std::move(parsed));
  }
  return input;
}

namespace {

const nlohmann::json& metrics_of(const ExportInput& input, const JobOutcome& job) {
  static const nlohmann::json kNone = nlohmann::json::object();
  const auto it = input.run_metrics.find({job.task_id, job.sample});
  return it == input.run_metrics.end() ? kNone : it->second;
}

std::vector<ExportFile> kernelbench_files(const ExportInput& input, const ExportOptions& options) {
  const Dataset& data = input.data;
  auto task_of = [&](const JobOutcome& job) -> const TaskInfo& {
    const auto it = data.tasks.find(job.task_id);
    if (it == data.tasks.end()) throw ExportError("the store has no task row for job task '" + job.task_id + "'");
    return it->second;
  };
  std::set<int> levels;
  for (const JobOutcome& job : data.jobs) levels.insert(static_cast<int>(task_of(job).level));
  if (options.level && !levels.count(*options.level)) {
    throw ExportError(fmt::format("the run has no task of level {} (its levels: {})", *options.level, fmt::join(levels, ", ")));
  }
  if (!options.level && levels.size() > 1) {
    throw ExportError(fmt::format(
        "the run has tasks of levels {}; KernelBench keeps one level per eval_results.json: pass --level", fmt::join(levels, ", ")));
  }
  const int level = options.level ? *options.level : (levels.empty() ? 1 : *levels.begin());

  // Problem id -> (task id, entries by sample); KernelBench orders problems by id.
  std::map<int, std::pair<std::string, std::map<int, ojson>>> problems;
  ojson baseline = ojson::object();
  std::map<int, ojson> baseline_by_id;
  std::map<int, std::string> baseline_names;
  for (const JobOutcome& job : data.jobs) {
    const TaskInfo& task = task_of(job);
    if (static_cast<int>(task.level) != level) continue;
    const auto id = problem_id_of(task.name);
    if (!id) {
      throw ExportError("task '" + job.task_id + "' is no KernelBench problem: its name '" + task.name +
                        "' does not start with a problem id");
    }
    auto& [owner, entries] = problems[*id];
    if (owner.empty()) owner = job.task_id;
    if (owner != job.task_id) {
      throw ExportError(fmt::format("tasks '{}' and '{}' both have problem id {} in level {}", owner, job.task_id, *id, level));
    }
    const nlohmann::json& metrics = metrics_of(input, job);
    if (!baseline_by_id.count(*id)) {
      ojson stats = timing_stats(metrics, KF_TIMING_REFERENCE, job);
      if (!stats.empty()) {
        baseline_by_id[*id] = std::move(stats);
        baseline_names[*id] = task.name + ".py";
      }
    }
    // A sample the run folder did not have was never evaluated: KernelBench has no entry for it.
    if (job.error_class == KF_ERROR_NO_CANDIDATE) continue;
    entries[job.sample] = kernelbench_entry(job, metrics);
  }
  ojson results = ojson::object();
  for (auto& [id, problem] : problems) {
    if (problem.second.empty()) continue;
    ojson list = ojson::array();
    for (auto& [sample, entry] : problem.second) list.push_back(std::move(entry));
    results[std::to_string(id)] = std::move(list);
  }
  ojson level_baseline = ojson::object();
  for (auto& [id, stats] : baseline_by_id) level_baseline[baseline_names[id]] = std::move(stats);
  baseline["level" + std::to_string(level)] = std::move(level_baseline);
  const auto dump = [](const ojson& j) { return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"; };
  return {{"eval_results.json", dump(results)}, {"baseline_time_torch.json", dump(baseline)}};
}

}  // namespace

std::vector<ExportFile> export_files(const ExportInput& input, ExportFormat format, const ExportOptions& options) {
  if (format == ExportFormat::KernelBench) return kernelbench_files(input, options);
  std::string lines;
  for (const JobOutcome& job : input.data.jobs) {
    lines += export_record(input.data, job, metrics_of(input, job)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    lines += '\n';
  }
  return {{"records.jsonl", lines}};
}

}  // namespace kforge
