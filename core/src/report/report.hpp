// Reports of an output directory: terminal tables, Markdown, JSON, one self-contained HTML
// page with charts, JUnit XML; `kforge compare` tables; CI thresholds. docs/reports.md
// shows each format.
#pragma once

#include "api.hpp"

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/candidates.hpp"
#include "report/metrics.hpp"
#include "report/table.hpp"
#include "store/store.hpp"

namespace kforge {

class Registry;

enum class ReportFormat { Text, Markdown, Json, Html, Junit };

// "text", "md", "json", "html", "junit"; nullopt for anything else.
KFORGE_API std::optional<ReportFormat> parse_report_format(const std::string& name);
inline constexpr const char* kReportFormatNames = "text, md, json, html, junit";

// One task as the formats write it: its row, and its finished jobs with every verdict.
struct ReportTask {
  TaskResult result;
  std::vector<CandidateRecord> candidates;  // in job order; empty without verdicts (report_of)
};
using ReportTaskVisitor = std::function<void(const ReportTask& task)>;

// What every format renders: the metrics of one output directory, the runs behind them,
// and its tasks, read again a task at a time whenever a format goes through them: a
// report of any size is written in the memory of one task.
struct Report {
  std::string directory;
  std::vector<RunRecord> runs;  // the series the jobs come from, oldest first
  Metrics metrics;
  std::vector<SectionTable> section_tables;  // the plugins' report sections' (sections.hpp)
  // Visits every task in task order; with each one's candidates and their verdicts when
  // `verdicts`. Unset: the report has no tasks.
  std::function<void(bool verdicts, const ReportTaskVisitor& visit)> tasks;
  // The content of a code, diff or log artifact the verdicts name; nullopt when unknown.
  // Unset: none are known.
  std::function<std::optional<std::string>(const std::string& hash)> artifact;
};

// The report of the latest series of runs in `directory` (its kforge.db, opened read-only
// for as long as the report lives), with the tables of `plugins`' report sections for the
// run (none without a registry). Computes the metrics and the sections' tables in one pass
// over the store.
KFORGE_API Report load_report(const std::string& directory, const Registry* plugins = nullptr);

// The report of an in-memory series: its tasks without verdicts, no artifacts.
Report report_of(const Dataset& data);

// The tables of seed 000 sections 5-6 and their companions in report order, with the
// report sections' tables (`sections`) before the Environment table; tables with nothing to
// say (no models named, no categories) are left out.
KFORGE_API std::vector<Table> report_tables(const Metrics& m, const std::vector<SectionTable>& sections = {});
// Strategies side by side (seed 000 table 6.2) plus pass rate per complexity class.
KFORGE_API Table comparison_table(const std::vector<Metrics>& strategies);

KFORGE_API std::string render_text(const std::vector<Table>& tables);
KFORGE_API std::string render_markdown_tables(const std::vector<Table>& tables);  // "## title", note, table
// Text for HTML and XML alike: & < > " ' escaped, and the control characters XML 1.0
// cannot carry at all dropped (compiler logs are full of ANSI escapes).
std::string markup_escape(const std::string& text);

// How much of a run report.html embeds, so that a browser can open it: the task table's
// index and the candidates behind its tasks, each within a budget of bytes. The table
// lists the tasks in task order until the next entry would go past its budget (the page
// says how many of the run's tasks it lists; report.md, report.json and junit.xml list
// every one); a listed task whose candidates would go past theirs is listed without them
// (its page says to run `kforge show`). docs/reports.md#large-runs says why these sizes.
struct HtmlLimits {
  size_t index_bytes = size_t{32} << 20;
  size_t detail_bytes = size_t{96} << 20;
};

// A report format written as the tasks are read: what comes before them, each task, and
// what comes after. One pass over the tasks serves every format written at once.
class FormatWriter {
 public:
  virtual ~FormatWriter() = default;
  virtual void begin() = 0;
  virtual void task(const ReportTask& task) = 0;
  virtual void end() = 0;
};
std::unique_ptr<FormatWriter> markdown_writer(const Report& report, std::ostream& out);
std::unique_ptr<FormatWriter> json_writer(const Report& report, std::ostream& out);
std::unique_ptr<FormatWriter> html_writer(const Report& report, std::ostream& out, const HtmlLimits& limits);  // html.cpp
std::unique_ptr<FormatWriter> junit_writer(const Report& report, std::ostream& out);                          // junit.cpp
// Goes through the report's tasks once (with their verdicts), handing each to every writer.
void write_formats(const Report& report, const std::vector<FormatWriter*>& writers);

// One format into a string.
std::string render_markdown(const Report& report);
std::string render_json(const Report& report);
std::string render_html(const Report& report, const HtmlLimits& limits = {});
std::string render_junit(const Report& report);

// Writes report.md, report.json, report.html and junit.xml (those of `formats`) into
// `directory`, reading the tasks once; each file appears whole, or not at all (written
// beside, then renamed). Returns the paths written. Text goes to stdout, not to a file.
KFORGE_API std::vector<std::string> write_report_files(const Report& report, const std::string& directory,
                                            const std::vector<ReportFormat>& formats);

// CI gates: `--min-pass-rate R` and `--min-fast-p P:SHARE` (repeatable).
struct Thresholds {
  std::optional<double> min_pass_rate;
  std::vector<std::pair<double, double>> min_fast_p;  // (p, minimum share of tasks)
};

// Parses "P:SHARE", e.g. "1.0:0.2"; throws std::invalid_argument saying what is wrong.
KFORGE_API std::pair<double, double> parse_fast_p_threshold(const std::string& text);

// One sentence per threshold missed; empty when all are met. fast_p thresholds take one
// more pass over the report's tasks (any p may be asked for).
KFORGE_API std::vector<std::string> missed_thresholds(const Report& report, const Thresholds& thresholds);

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
