// The report options `kforge run` and `kforge report` share, and what both do with them:
// print the text tables, write the report files, check the thresholds.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "report/report.hpp"

namespace kforge::cli {

class ReportOptions {
 public:
  // Adds the formats option (named `formats_option`: run's --report-format, report's
  // --format), --min-pass-rate and --min-fast-p to `command`.
  ReportOptions(CLI::App* command, const char* formats_option);
  // Parses the formats and thresholds; throws CLI::ValidationError naming the bad one.
  void check();

  const std::vector<ReportFormat>& formats() const { return formats_; }
  const Thresholds& thresholds() const { return thresholds_; }

 private:
  const char* formats_option_;
  std::string formats_text_ = "text,md,json,html,junit";
  std::optional<double> min_pass_rate_;
  std::vector<std::string> min_fast_p_;
  std::vector<ReportFormat> formats_;
  Thresholds thresholds_;
};

// Whose report: `kforge report` may read a run's directory on a read-only mount or in an
// archive, where the tables are the report; a run whose directory became read-only (or
// went) under it has not produced what it was asked for.
enum class ReportFor { Reader, Run };

// Prints the text tables and writes the report files; returns the exit code the
// thresholds give (0 when all are met), or kExitRuntime when a run cannot write them.
int report_and_gate(const Report& report, const std::string& out_dir, const ReportOptions& options,
                    ReportFor report_for);

}  // namespace kforge::cli
