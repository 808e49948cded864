// Exports of an output directory for other tools (docs/reports.md#exports):
//   kernelbench: KernelBench's eval_results.json and a baseline timing file in its
//                results/timing shape, so KernelBench's own scripts read kforge's results;
//   records:     records.jsonl, one JSON object per candidate in the common status
//                vocabulary (passed, incorrect shape, ...), with errors, latencies and the
//                environment (docs/schemas/records.schema.json).
// Both read the store read-only, as `kforge report` does.
#pragma once

#include "api.hpp"

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

// What an export reads: the report's dataset and the run stage's metrics per job.
struct ExportInput {
  Dataset data;
  std::map<std::pair<std::string, int>, nlohmann::json> run_metrics;  // (task, sample) -> metrics object
};

// The latest series of runs in `directory` (its kforge.db, opened read-only).
KFORGE_API ExportInput load_export_input(const std::string& directory);

struct ExportOptions {
  std::optional<int> level;  // kernelbench: the level to export when the run has several
};

struct ExportFile {
  std::string name;  // relative to the export directory
  std::string content;
};

// The files of one export: kernelbench gives eval_results.json and baseline_time_torch.json,
// records gives records.jsonl. Throws ExportError.
KFORGE_API std::vector<ExportFile> export_files(const ExportInput& input, ExportFormat format,
                                                const ExportOptions& options);

// ---- the mappings, one candidate at a time (tests drive them directly)

// The common vocabulary for a candidate's outcome: "passed", "incorrect shape", "incorrect
// dtype", "incorrect numerical", "compile error", "runtime error", "timeout", "rejected",
// "no candidate", "evaluation error" (the harness, the task or the host failed: not the
// candidate's fault), "failed" (a class kforge does not map; error_class tells).
std::string common_status(const JobOutcome& job);

// KernelBench's entry for one candidate: {sample_id, compiled, correctness, metadata,
// runtime, runtime_stats}, runtimes in milliseconds as KernelBench's timing.py measures them.
nlohmann::ordered_json kernelbench_entry(const JobOutcome& job, const nlohmann::json& metrics);

// One record of records.jsonl.
nlohmann::ordered_json export_record(const Dataset& data, const JobOutcome& job, const nlohmann::json& metrics);

// The leading problem id of a KernelBench task name ("19_ReLU" -> 19); nullopt without one.
std::optional<int> problem_id_of(const std::string& task_name);

}  // namespace kforge
