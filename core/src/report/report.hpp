// Reports of an output directory: terminal tables, Markdown, JSON, one self-contained HTML
// page with charts, JUnit XML; `kforge compare` tables; CI thresholds. docs/reports.md
// shows each format.
#pragma once

#include "api.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/candidates.hpp"
#include "report/metrics.hpp"
#include "run/store/store.hpp"

namespace kforge {

enum class ReportFormat { Text, Markdown, Json, Html, Junit };

// "text", "md", "json", "html", "junit"; nullopt for anything else.
KFORGE_API std::optional<ReportFormat> parse_report_format(const std::string& name);
inline constexpr const char* kReportFormatNames = "text, md, json, html, junit";

// What every format renders: the metrics of one output directory and the runs behind them.
struct Report {
  std::string directory;
  std::vector<RunRecord> runs;  // the series the jobs come from, oldest first
  Metrics metrics;
  CandidateRecords candidates;  // every verdict of every candidate: the HTML report's detail views
};

// The report of the latest series of runs in `directory` (its kforge.db).
KFORGE_API Report load_report(const std::string& directory);

// A titled table of display strings, rendered as text, Markdown or HTML.
struct Table {
  std::string title;
  std::string note;  // what the numbers mean, one line
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

// The tables of seed 000 sections 5-6 and their KernelBench/KernelBenchX companions, in
// report order; tables with nothing to say (no models named, no categories) are left out.
KFORGE_API std::vector<Table> report_tables(const Metrics& m);
// One row per task: candidates, best-of-k with its timing medians, first failure.
Table task_table(const Report& report);
// Strategies side by side (seed 000 table 6.2) plus pass rate per complexity class.
KFORGE_API Table comparison_table(const std::vector<Metrics>& strategies);

KFORGE_API std::string render_text(const std::vector<Table>& tables);
KFORGE_API std::string render_markdown_tables(const std::vector<Table>& tables);  // "## title", note, table
std::string render_markdown(const Report& report);
std::string render_json(const Report& report);
// Text for HTML and XML alike: & < > " ' escaped, and the control characters XML 1.0
// cannot carry at all dropped (compiler logs are full of ANSI escapes).
std::string markup_escape(const std::string& text);
std::string render_html(const Report& report);   // report_html.cpp
std::string render_junit(const Report& report);  // report_junit.cpp

// Writes report.md, report.json, report.html and junit.xml (those of `formats`) into
// `directory`; returns the paths written. Text goes to stdout, not to a file.
KFORGE_API std::vector<std::string> write_report_files(const Report& report, const std::string& directory,
                                            const std::vector<ReportFormat>& formats);

// CI gates: `--min-pass-rate R` and `--min-fast-p P:SHARE` (repeatable).
struct Thresholds {
  std::optional<double> min_pass_rate;
  std::vector<std::pair<double, double>> min_fast_p;  // (p, minimum share of tasks)
};

// Parses "P:SHARE", e.g. "1.0:0.2"; throws std::invalid_argument saying what is wrong.
KFORGE_API std::pair<double, double> parse_fast_p_threshold(const std::string& text);

// One sentence per threshold missed; empty when all are met.
KFORGE_API std::vector<std::string> missed_thresholds(const Metrics& m, const Thresholds& thresholds);

// Formatting shared by the renderers.
std::string format_share(const Share& share);  // "27/66 (40.9%)"
std::string format_percent(double rate);       // "40.9%"
std::string format_seconds(double seconds);    // "5460.0 s"
std::string format_money(double dollars);      // "$0.4010", "$12.50"
std::string format_speedup(std::optional<double> speedup);  // "1.58x", "-"
// Up to four decimals without trailing zeros, exponent notation for the very small or
// large: "2.1", "0.0296", "4.768e-07"; "-" for a value not there.
std::string format_number(std::optional<double> value);

}  // namespace kforge
