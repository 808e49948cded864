// Exports of an output directory for other tools (docs/reports.md#exports):
//   kernelbench: KernelBench's eval_results.json and a baseline timing file in its
//                results/timing shape, so KernelBench's own scripts read kforge's results;
//   records:     records.jsonl, one JSON object per candidate in the common status
//                vocabulary (passed, incorrect shape, ...), with errors, latencies and the
//                environment (docs/schemas/records.schema.json).
// Both read the store read-only, as `kforge report` does.
#pragma once

#include "api.hpp"

#include <functional>
#include <iosfwd>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "report/metrics.hpp"

namespace kforge {

enum class ExportFormat { KernelBench, Records };

// "kernelbench", "records"; nullopt for anything else.
KFORGE_API std::optional<ExportFormat> parse_export_format(const std::string& name);
inline constexpr const char* kExportFormatNames = "kernelbench, records";

// An export that cannot be made from this directory (several levels for one KernelBench
// eval_results.json, a task that is no KernelBench problem); the message says what to do.
class ExportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One task as an export reads it: its store row, its finished jobs in job order, and for
// each job the metrics of the last run-role verdict of its final round (the timings and
// differences eval.run measured; an empty object where no run stage judged the job).
struct ExportTask {
  TaskInfo info;       // only the id when the store has no row for the task
  bool known = false;  // the store has a row for the task
  std::vector<JobOutcome> jobs;
  std::vector<nlohmann::json> metrics;  // one per job
};

// What an export reads: the strategy, and its tasks one at a time, as often as asked.
struct ExportInput {
  std::string strategy;
  std::function<void(const std::function<void(const ExportTask& task)>& visit)> tasks;
};

// The latest series of runs in `directory` (its kforge.db, opened read-only for as long
// as the input lives), read a task at a time.
KFORGE_API ExportInput load_export_input(const std::string& directory);

// An in-memory series: `data`'s tasks, with the run metrics of each (task, sample).
ExportInput export_input_of(Dataset data, std::map<std::pair<std::string, int>, nlohmann::json> run_metrics);

struct ExportOptions {
  std::optional<int> level;  // kernelbench: the level to export when the run has several
};

struct ExportFile {
  std::string name;  // relative to the export directory
  std::string content;
};

// Writes the files of one export: kernelbench gives eval_results.json and
// baseline_time_torch.json, records gives records.jsonl. `open` gives the stream a file of
// that name is written to; a run of any size is written in the memory of one task (the
// KernelBench problems wait in a scratch database until they can be written in id order).
// Every ExportError comes before the first byte is written.
KFORGE_API void write_export(const ExportInput& input, ExportFormat format, const ExportOptions& options,
                             const std::function<std::ostream&(const std::string& name)>& open);

// The same files held in memory.
std::vector<ExportFile> export_files(const ExportInput& input, ExportFormat format, const ExportOptions& options);

// ---- the mappings, one candidate at a time (tests drive them directly)

// The common vocabulary for a candidate's outcome: "passed", "incorrect shape", "incorrect
// dtype", "incorrect numerical", "compile error", "runtime error", "timeout", "rejected",
// "no candidate", "evaluation error" (the harness, the task or the host failed: not the
// candidate's fault), "failed" (a class kforge does not map; error_class tells).
std::string common_status(const JobOutcome& job);

// KernelBench's entry for one candidate: {sample_id, compiled, correctness, metadata,
// runtime, runtime_stats}, runtimes in milliseconds as KernelBench's timing.py measures them.
nlohmann::ordered_json kernelbench_entry(const JobOutcome& job, const nlohmann::json& metrics);

// One record of records.jsonl; `task` is null when the store has no row for the job's task.
nlohmann::ordered_json export_record(const std::string& strategy, const TaskInfo* task, const JobOutcome& job,
                                     const nlohmann::json& metrics);

// The leading problem id of a KernelBench task name ("19_ReLU" -> 19); nullopt without one.
std::optional<int> problem_id_of(const std::string& task_name);

}  // namespace kforge
