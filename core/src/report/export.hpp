// Exports of an output directory for other tools (docs/reports.md#exports): core's own,
// records.jsonl (one JSON object per candidate in the common status vocabulary: passed,
// incorrect shape, ...; with errors, latencies and the environment,
// docs/schemas/records.schema.json), and every exporter a plugin registers (kf_exporter_kind:
// a benchmark's own format lives in its plugin). All read the store read-only, as `kforge
// report` does.
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

#include "report/candidates.hpp"
#include "report/metrics.hpp"

namespace kforge {

struct ExporterKind;

// The format core writes itself; every other is a plugin's exporter.
inline constexpr const char* kRecordsFormat = "records";

// An export that cannot be made from this directory (an exporter refused the run or an
// option); the message says what to do.
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

// A task as the store gives it (with its candidates' verdicts) as an export reads it; moves
// from `task`.
ExportTask export_task_of(TaskJobs& task);

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

struct ExportFile {
  std::string name;  // relative to the export directory
  std::string content;
};

// Where an export's files go: `open` gives the stream a file of that name is written to.
using ExportOpen = std::function<std::ostream&(const std::string& name)>;

// records.jsonl, written in the memory of one task.
KFORGE_API void write_records(const ExportInput& input, const ExportOpen& open);

// A plugin's export: the exporter gets each task as export_task_json gives it, then writes
// its files through the host (kf_host_api::export_write). `options` is a JSON object (the
// user's --option KEY=VALUE). The exporter's refusals are ExportErrors naming the exporter
// and its plugin; a file may be opened before one, so the caller keeps the files aside
// until this returns (as `kforge export` does).
KFORGE_API void write_plugin_export(const ExporterKind& exporter, const ExportInput& input,
                                    const nlohmann::json& options, const ExportOpen& open);

// The files of either held in memory (exporter nullptr: records).
std::vector<ExportFile> export_files(const ExportInput& input, const ExporterKind* exporter,
                                     const nlohmann::json& options = nlohmann::json::object());

// One task as an exporter reads it (kf_exporter_kind in kforge/abi.h lists the fields).
nlohmann::ordered_json export_task_json(const std::string& strategy, const ExportTask& task);

// ---- the mappings, one candidate at a time (tests drive them directly)

// The common vocabulary for a candidate's outcome: "passed", "incorrect shape", "incorrect
// dtype", "incorrect numerical", "compile error", "runtime error", "timeout", "rejected",
// "no candidate", "evaluation error" (the harness, the task or the host failed: not the
// candidate's fault), "failed" (a class kforge does not map; error_class tells).
std::string common_status(const JobOutcome& job);

// One record of records.jsonl; `task` is null when the store has no row for the job's task.
nlohmann::ordered_json export_record(const std::string& strategy, const TaskInfo* task, const JobOutcome& job,
                                     const nlohmann::json& metrics);

}  // namespace kforge
