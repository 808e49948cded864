#include "report/export.hpp"

#include <fmt/format.h>
#include <kforge/abi.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>

#include "run/store/scratch.hpp"
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

ojson export_record(const std::string& strategy, const TaskInfo* task, const JobOutcome& job,
                    const nlohmann::json& metrics) {
  ojson r;
  r["kforge_record"] = 1;
  r["strategy"] = strategy;
  r["task"] = job.task_id;
  r["task_name"] = task == nullptr ? job.task_id : task->name;
  r["level"] = task == nullptr ? ojson(nullptr) : ojson(task->level);
  r["category"] = task == nullptr ? "" : task->category;
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
  const std::shared_ptr<Store> store = open_store_read_only(directory);
  const std::optional<RunRecord> latest = store->latest_run();
  if (!latest) {
    throw ExportError(fmt::format("'{}' holds no run yet: run `kforge run PIPELINE --out {}` first", directory, directory));
  }
  ExportInput input;
  input.strategy = latest->label;
  input.tasks = [store, series = latest->series](const std::function<void(const ExportTask&)>& visit) {
    store->visit_tasks(series, true, [&](TaskJobs& task) {
      ExportTask out{std::move(task.info), task.known, std::move(task.jobs), {}};
      for (const CandidateRecord& c : task.candidates) {
        // The job's final round, its last run-role verdict: ordered as recorded, a later
        // verdict overwrites an earlier one.
        nlohmann::json metrics = nlohmann::json::object();
        for (const StageRecord& s : c.stages) {
          if (s.role != to_string(KF_ROLE_RUN) || s.round != c.round) continue;
          metrics = nlohmann::json::object();
          for (const auto& [name, value] : s.metrics) metrics[name] = value;
        }
        out.metrics.push_back(std::move(metrics));
      }
      visit(out);
    });
  };
  return input;
}

ExportInput export_input_of(Dataset data, std::map<std::pair<std::string, int>, nlohmann::json> run_metrics) {
  const auto held = std::make_shared<const std::pair<Dataset, std::map<std::pair<std::string, int>, nlohmann::json>>>(
      std::move(data), std::move(run_metrics));
  ExportInput input;
  input.strategy = held->first.label;
  input.tasks = [held](const std::function<void(const ExportTask&)>& visit) {
    const Dataset& data = held->first;
    for_each_task(data, [&](const TaskInfo& info, const std::vector<JobOutcome>& jobs) {
      ExportTask task{info, data.tasks.count(info.id) != 0, jobs, {}};
      for (const JobOutcome& job : jobs) {
        const auto it = held->second.find({job.task_id, job.sample});
        task.metrics.push_back(it == held->second.end() ? nlohmann::json::object() : it->second);
      }
      visit(task);
    });
  };
  return input;
}

namespace {

std::string dump_indented(const ojson& value) { return value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace); }

// KernelBench's eval_results.json, {"problem id": [entries by sample]} in problem id order,
// and its baseline file, {"levelL": {"NAME.py": statistics}}. The problems of every level
// wait in a scratch database, one row per task, until the level to write is known and they
// can be written in id order.
void write_kernelbench(const ExportInput& input, const ExportOptions& options,
                       const std::function<std::ostream&(const std::string&)>& open) {
  sql::ScratchDb scratch(
      "CREATE TABLE problems (position INTEGER PRIMARY KEY, level INTEGER NOT NULL, id INTEGER, task TEXT NOT NULL, "
      "name TEXT NOT NULL, entries TEXT, baseline TEXT); CREATE INDEX problems_by_id ON problems (level, id, position)");
  scratch.exec("BEGIN");
  std::set<int> levels;
  {
    sql::Statement insert(scratch.db(), scratch.name(),
                          "INSERT INTO problems (level, id, task, name, entries, baseline) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    input.tasks([&](const ExportTask& task) {
      if (!task.known) throw ExportError("the store has no task row for job task '" + task.info.id + "'");
      const int level = static_cast<int>(task.info.level);
      levels.insert(level);
      std::map<int, ojson> entries;  // by sample
      std::optional<ojson> baseline;
      for (size_t i = 0; i < task.jobs.size(); ++i) {
        const JobOutcome& job = task.jobs[i];
        if (!baseline) {
          ojson stats = timing_stats(task.metrics[i], KF_TIMING_REFERENCE, job);
          if (!stats.empty()) baseline = std::move(stats);
        }
        // A sample the run folder did not have was never evaluated: KernelBench has no entry for it.
        if (job.error_class == KF_ERROR_NO_CANDIDATE) continue;
        entries[job.sample] = kernelbench_entry(job, task.metrics[i]);
      }
      ojson list = ojson::array();
      for (auto& [sample, entry] : entries) list.push_back(std::move(entry));
      const auto id = problem_id_of(task.info.name);
      insert.bind(1, static_cast<int64_t>(level));
      if (id) {
        insert.bind(2, static_cast<int64_t>(*id));
      } else {
        insert.bind_null(2);
      }
      const auto compact = [](const ojson& value) { return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); };
      const std::string list_text = compact(list);
      const std::string baseline_text = baseline ? compact(*baseline) : "";
      insert.bind(3, task.info.id).bind(4, task.info.name).bind(5, list.empty() ? nullptr : &list_text);
      insert.bind(6, baseline ? &baseline_text : nullptr).run();
    });
  }
  if (options.level && !levels.count(*options.level)) {
    throw ExportError(fmt::format("the run has no task of level {} (its levels: {})", *options.level, fmt::join(levels, ", ")));
  }
  if (!options.level && levels.size() > 1) {
    throw ExportError(fmt::format(
        "the run has tasks of levels {}; KernelBench keeps one level per eval_results.json: pass --level", fmt::join(levels, ", ")));
  }
  const int64_t level = options.level ? *options.level : (levels.empty() ? 1 : *levels.begin());

  // Every task of the level is a problem of its own, in task order.
  {
    sql::Statement tasks(scratch.db(), scratch.name(), "SELECT position, id, task, name FROM problems WHERE level = ?1 ORDER BY position");
    sql::Statement owner(scratch.db(), scratch.name(),
                         "SELECT task FROM problems WHERE level = ?1 AND id = ?2 AND position < ?3 ORDER BY position LIMIT 1");
    tasks.bind(1, level);
    while (tasks.step()) {
      if (tasks.is_null(1)) {
        throw ExportError("task '" + tasks.text(2) + "' is no KernelBench problem: its name '" + tasks.text(3) +
                          "' does not start with a problem id");
      }
      owner.bind(1, level).bind(2, tasks.integer(1)).bind(3, tasks.integer(0));
      while (owner.step()) {
        const std::string first = owner.text(0);
        owner.reset();
        throw ExportError(fmt::format("tasks '{}' and '{}' both have problem id {} in level {}", first, tasks.text(2),
                                      tasks.integer(1), level));
      }
    }
  }

  sql::Statement problems(scratch.db(), scratch.name(),
                          "SELECT id, name, entries, baseline FROM problems WHERE level = ?1 ORDER BY id");
  // Each problem's list as the whole document's dump would indent it.
  auto indented = [](const std::string& text, const char* prefix) {
    std::string out;
    size_t start = 0;
    for (size_t end = text.find('\n');; end = text.find('\n', start)) {
      if (start > 0) out += prefix;
      out.append(text, start, end == std::string::npos ? std::string::npos : end + 1 - start);
      if (end == std::string::npos) break;
      start = end + 1;
    }
    return out;
  };
  std::ostream& results = open("eval_results.json");
  uint64_t written = 0;
  problems.bind(1, level);
  while (problems.step()) {
    if (problems.is_null(2)) continue;
    const ojson list = ojson::parse(problems.text(2));
    results << (written++ == 0 ? "{\n  " : ",\n  ") << ojson(std::to_string(problems.integer(0))).dump() << ": "
            << indented(dump_indented(list), "  ");
  }
  results << (written == 0 ? "{}\n" : "\n}\n");

  std::ostream& baseline = open("baseline_time_torch.json");
  const std::string level_key = ojson("level" + std::to_string(level)).dump();
  written = 0;
  problems.bind(1, level);
  while (problems.step()) {
    if (problems.is_null(3)) continue;
    const ojson stats = ojson::parse(problems.text(3));
    baseline << (written++ == 0 ? "{\n  " + level_key + ": {\n    " : ",\n    ")
             << ojson(problems.text(1) + ".py").dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << ": "
             << indented(dump_indented(stats), "    ");
  }
  baseline << (written == 0 ? "{\n  " + level_key + ": {}\n}\n" : "\n  }\n}\n");
}

void write_records(const ExportInput& input, const std::function<std::ostream&(const std::string&)>& open) {
  std::ostream& out = open("records.jsonl");
  input.tasks([&](const ExportTask& task) {
    for (size_t i = 0; i < task.jobs.size(); ++i) {
      out << export_record(input.strategy, task.known ? &task.info : nullptr, task.jobs[i], task.metrics[i])
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
          << '\n';
    }
  });
}

}  // namespace

void write_export(const ExportInput& input, ExportFormat format, const ExportOptions& options,
                  const std::function<std::ostream&(const std::string& name)>& open) {
  if (format == ExportFormat::KernelBench) {
    write_kernelbench(input, options, open);
  } else {
    write_records(input, open);
  }
}

std::vector<ExportFile> export_files(const ExportInput& input, ExportFormat format, const ExportOptions& options) {
  std::vector<std::pair<std::string, std::unique_ptr<std::ostringstream>>> streams;
  write_export(input, format, options, [&](const std::string& name) -> std::ostream& {
    streams.emplace_back(name, std::make_unique<std::ostringstream>());
    return *streams.back().second;
  });
  std::vector<ExportFile> files;
  for (auto& [name, stream] : streams) files.push_back({name, stream->str()});
  return files;
}

}  // namespace kforge
