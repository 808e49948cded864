#include "report/export.hpp"

#include <fmt/format.h>
#include <kforge/abi.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <ostream>
#include <sstream>

#include "engine/host.hpp"
#include "engine/registry.hpp"
#include "store/store.hpp"

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

// The per-call statistics a run stage measured for one party (KF_TIMING_*), by the names
// KernelBench's get_timing_stats uses too: mean, std, min, max and num_trials of the timed
// calls. Empty where the metrics have no mean (not timed, or a store from before the
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

}  // namespace

std::string common_status(const JobOutcome& job) { return outcome_name(outcome_of_job(job)); }

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
    store->visit_tasks(series, true, [&](TaskJobs& task) { visit(export_task_of(task)); });
  };
  return input;
}

ExportTask export_task_of(TaskJobs& task) {
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
  return out;
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

void write_records(const ExportInput& input, const ExportOpen& open) {
  std::ostream& out = open("records.jsonl");
  input.tasks([&](const ExportTask& task) {
    for (size_t i = 0; i < task.jobs.size(); ++i) {
      out << export_record(input.strategy, task.known ? &task.info : nullptr, task.jobs[i], task.metrics[i])
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
          << '\n';
    }
  });
}

ojson export_task_json(const std::string& strategy, const ExportTask& task) {
  ojson t;
  t["strategy"] = strategy;
  t["id"] = task.info.id;
  t["name"] = task.known ? task.info.name : task.info.id;
  t["level"] = task.known ? ojson(task.info.level) : ojson(nullptr);
  t["category"] = task.info.category;
  t["complexity"] = task.info.complexity;
  t["format"] = task.info.format;
  t["known"] = task.known;
  ojson jobs = ojson::array();
  for (size_t i = 0; i < task.jobs.size(); ++i) {
    const JobOutcome& job = task.jobs[i];
    ojson j;
    j["sample"] = job.sample;
    j["round"] = job.round;
    j["status"] = to_string(job.status);
    j["outcome"] = common_status(job);
    j["passed"] = job.passed();
    j["compiled"] = job.compiled();
    j["stage"] = job.stage;
    j["error_class"] = job.error_class;
    j["message"] = job.message;
    j["language"] = job.language;
    j["model"] = job.model;
    j["device"] = job.device;
    j["environment"] = environment_facts(job);
    j["speedup"] = nullable(job.speedup);
    j["metrics"] = task.metrics[i].is_object() ? ojson(task.metrics[i]) : ojson::object();
    jobs.push_back(std::move(j));
  }
  t["jobs"] = std::move(jobs);
  return t;
}

void write_plugin_export(const ExporterKind& exporter, const ExportInput& input, const nlohmann::json& options,
                         const ExportOpen& open) {
  const std::string who = fmt::format("exporter '{}' (plugin {}, {})", exporter.name, exporter.plugin, exporter.file);
  char err[4096] = {0};
  const auto refused = [&](const char* when) {
    return ExportError(fmt::format("{} {}: {}", who, when, err[0] == '\0' ? "it gave no reason" : err));
  };
  const std::string options_text = options.dump();
  void* instance = nullptr;
  if (exporter.create(host_api(), options_text.data(), options_text.size(), &instance, err, sizeof err) != KF_OK) {
    throw refused("refused its options");
  }
  const std::unique_ptr<void, decltype(exporter.destroy)> held(instance, exporter.destroy);
  input.tasks([&](const ExportTask& task) {
    const std::string text = export_task_json(input.strategy, task).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (exporter.task(instance, text.data(), text.size(), err, sizeof err) != KF_OK) throw refused("refused the run");
  });
  std::map<std::string, std::ostream*> files;
  ExportOutput output{[&](const std::string& name, std::string_view data) {
    auto it = files.find(name);
    if (it == files.end()) it = files.emplace(name, &open(name)).first;
    it->second->write(data.data(), static_cast<std::streamsize>(data.size()));
  }};
  if (exporter.finish(instance, reinterpret_cast<kf_export_output*>(&output), err, sizeof err) != KF_OK) {
    throw refused("failed");
  }
}

std::vector<ExportFile> export_files(const ExportInput& input, const ExporterKind* exporter, const nlohmann::json& options) {
  std::vector<std::pair<std::string, std::unique_ptr<std::ostringstream>>> streams;
  const ExportOpen open = [&](const std::string& name) -> std::ostream& {
    streams.emplace_back(name, std::make_unique<std::ostringstream>());
    return *streams.back().second;
  };
  if (exporter == nullptr) {
    write_records(input, open);
  } else {
    write_plugin_export(*exporter, input, options, open);
  }
  std::vector<ExportFile> files;
  for (auto& [name, stream] : streams) files.push_back({name, stream->str()});
  return files;
}

}  // namespace kforge
