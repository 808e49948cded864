#include "report/report.hpp"

#include <fmt/format.h>
#include <kforge/abi.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "report/export.hpp"
#include "report/json_values.hpp"
#include "report/sections.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

std::string or_dash(const std::optional<double>& value, const char* format) {
  return value ? fmt::format(fmt::runtime(format), *value) : "-";
}

std::string share_cell(const Share& share) { return share.total == 0 ? "-" : format_share(share); }

bool has_named(const std::vector<GroupMetrics>& groups) {
  return std::any_of(groups.begin(), groups.end(), [](const GroupMetrics& g) { return g.name != "(none)"; });
}

// The verdict that measured a task's best candidate; null for a task without a correct
// candidate, or one whose best candidate no verdict measured.
const StageRecord* best_measurement(const ReportTask& task) {
  if (!task.result.best_sample) return nullptr;
  for (const CandidateRecord& c : task.candidates) {
    if (c.sample == *task.result.best_sample) return measurement_verdict(c);
  }
  return nullptr;
}

Table summary_table(const Metrics& m) {
  Table t{"Summary", "pass rate: tasks with a correct candidate; pass@1: correct candidates", {"Metric", "Value"}, {}};
  auto row = [&](std::string name, std::string value) { t.rows.push_back({std::move(name), std::move(value)}); };
  row("Strategy", m.label);
  row("Tasks", std::to_string(m.tasks));
  row("Candidates", std::to_string(m.candidates.total));
  row("Pass rate", format_share(m.solved));
  row("Candidates passed (pass@1)", format_share(m.candidates));
  row("First pass", std::to_string(m.first_pass));
  row("Passed after fixing", std::to_string(m.solved_by_fix));
  row("Fix rounds", std::to_string(m.fix_rounds));
  if (m.not_judged_candidates > 0) {
    row("Not judged", fmt::format("{} candidates (the harness's, the machine's or the task's fault)",
                                  m.not_judged_candidates));
  }
  row("Compile rate", m.compile_known ? format_share(m.compiled) : "-");
  row("Geometric mean speedup", m.geomean_speedup ? fmt::format("{} over {} tasks", format_speedup(m.geomean_speedup), m.speedup_tasks) : "-");
  row("Evaluation time", format_seconds(m.eval_seconds));
  row("Generation time", format_seconds(m.gen_seconds));
  row("Tokens in / out", fmt::format("{:.0f} / {:.0f}", m.tokens_in, m.tokens_out));
  row("Total cost", format_money(m.cost));
  row("Cost per pass", m.cost_per_pass ? format_money(*m.cost_per_pass) : "-");
  row("Cache hits", fmt::format("{} of {} stage verdicts", m.cache_hits, m.attempts));
  row("Infrastructure retries",
      m.infra_retries == 0 ? "0"
                           : fmt::format("{} (work of {} verdicts lost with its server and redone elsewhere)",
                                         m.infra_retries, m.infra_retried_verdicts));
  return t;
}

Table models_table(const Metrics& m) {
  Table t{"Models", "pass rate over the tasks each model had candidates for; fix rounds: back edges taken",
          {"Model", "Pass rate", "First pass", "Fix rounds", "Passed after fixing", "Candidates passed"}, {}};
  for (const ModelMetrics& mm : m.models) {
    t.rows.push_back({mm.model, format_share(mm.solved), std::to_string(mm.first_pass), std::to_string(mm.fix_rounds),
                      std::to_string(mm.solved_by_fix), format_share(mm.candidates)});
  }
  return t;
}

Table model_complexity_table(const Metrics& m) {
  Table t{"Pass rate by complexity", "tasks of each class solved by each model", {"Model"}, {}};
  for (const auto& c : m.complexity_classes) t.columns.push_back(c);
  for (const ModelMetrics& mm : m.models) {
    std::vector<std::string> row{mm.model};
    for (const auto& c : m.complexity_classes) {
      auto it = mm.by_complexity.find(c);
      row.push_back(it == mm.by_complexity.end() ? "-" : share_cell(it->second));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table group_table(const std::string& title, const std::string& first, const std::vector<GroupMetrics>& groups,
                  bool compile_known) {
  Table t{title, "tasks; compiled: some candidate compiled; speedup: mean of the tasks' best",
          {first, "Tasks", "Compiled", "Passed", "Mean speedup"}, {}};
  for (const GroupMetrics& g : groups) {
    t.rows.push_back({g.name, std::to_string(g.solved.total), compile_known ? share_cell(g.compiled) : "-",
                      share_cell(g.solved), format_speedup(g.mean_speedup)});
  }
  return t;
}

Table errors_table(const Metrics& m) {
  Table t{"Error classes", fmt::format("final error class of the {} failed candidates", m.failed_candidates),
          {"Error class", "Candidates", "Share"}, {}};
  for (const ErrorShare& e : m.errors) t.rows.push_back({e.error_class, std::to_string(e.count), format_percent(e.share)});
  return t;
}

Table not_judged_table(const Metrics& m) {
  Table t{"Not judged",
          fmt::format("the {} candidates whose stage could not judge them: the harness's, the machine's or the task's "
                      "fault, not the candidate's (no fix round was spent on them); they count as not passed",
                      m.not_judged_candidates),
          {"Error class", "Candidates", "Share"}, {}};
  for (const ErrorShare& e : m.not_judged) {
    t.rows.push_back({e.error_class, std::to_string(e.count), format_percent(e.share)});
  }
  return t;
}

Table rounds_table(const Metrics& m) {
  Table t{"Fix rounds", "every candidate's state after round r (one that ended earlier keeps its final state)",
          {"Round", "Reached", "Compiled", "Passed", "Mean speedup"}, {}};
  for (const RoundMetrics& r : m.rounds) {
    t.rows.push_back({std::to_string(r.round), std::to_string(r.reached), m.compile_known ? share_cell(r.compiled) : "-",
                      share_cell(r.passed), format_speedup(r.mean_speedup)});
  }
  return t;
}

Table fast_p_table(const Metrics& m) {
  Table t{"fast_p", "tasks with a correct candidate more than p times as fast as the baseline", {"p", "fast_p"}, {}};
  for (const FastP& f : m.fast_p) t.rows.push_back({fmt::format("{:g}", f.p), share_cell(f.tasks)});
  return t;
}

Table pass_at_k_table(const Metrics& m) {
  Table t{"pass@k", "unbiased estimator 1 - C(n-c,k)/C(n,k), mean over tasks", {"k", "pass@k"}, {}};
  for (const PassAtK& p : m.pass_at_k) t.rows.push_back({std::to_string(p.k), format_percent(p.value)});
  return t;
}

Table selection_table(const Metrics& m) {
  Table t{"Model selection", "candidates per chosen model and how they did", {"Model", "Chosen", "Share", "Pass rate"}, {}};
  for (const SelectionRow& s : m.selection) {
    t.rows.push_back({s.model, std::to_string(s.chosen), format_percent(s.share), share_cell(s.passed)});
  }
  return t;
}

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

// A table's title, note and column headings; its rows follow, each a markdown_row.
void markdown_heading(std::string& out, const Table& t) {
  out += fmt::format("## {}\n\n", t.title);
  if (!t.note.empty()) out += fmt::format("_{}_\n\n", t.note);
  std::vector<std::string> cells;
  for (const auto& c : t.columns) cells.push_back(markdown_cell(c));
  out += fmt::format("| {} |\n|", fmt::join(cells, " | "));
  for (size_t i = 0; i < t.columns.size(); ++i) out += i == 0 ? "---|" : "---:|";
  out += "\n";
}

void markdown_row(std::string& out, const std::vector<std::string>& row) {
  std::vector<std::string> cells;
  for (const auto& c : row) cells.push_back(markdown_cell(c));
  out += fmt::format("| {} |\n", fmt::join(cells, " | "));
}

void markdown_table(std::string& out, const Table& t) {
  markdown_heading(out, t);
  for (const auto& row : t.rows) markdown_row(out, row);
  out += "\n";
}

json share_json(const Share& s) { return {{"count", s.count}, {"total", s.total}, {"rate", s.rate()}}; }

json failures_json(const std::vector<CandidateFailure>& failures) {
  json out = json::array();
  for (const auto& f : failures) {
    out.push_back({{"sample", f.sample}, {"round", f.round}, {"error_class", f.error_class}, {"message", f.message}});
  }
  return out;
}

// A task's best candidate's timing statistics by party, null for each one not recorded;
// null as a whole when the task has no correct candidate.
json best_timing_json(const TaskResult& task, const StageRecord* timed) {
  if (!task.best_sample) return nullptr;
  json out = {{"sample", *task.best_sample}};
  for (const char* party : kTimingParties) {
    json& statistics = out[party] = json::object();
    const auto values = timing_statistics(timed, party);
    for (size_t i = 0; i < values.size(); ++i) {
      const TimingStatistic& statistic = kTimingStatistics[i];
      const bool count = statistic.count && values[i];
      statistics[statistic.key] = count ? json(static_cast<int64_t>(*values[i])) : optional_json(values[i]);
    }
  }
  return out;
}

json group_json(const std::vector<GroupMetrics>& groups) {
  json out = json::array();
  for (const auto& g : groups) {
    out.push_back({{"name", g.name}, {"solved", share_json(g.solved)}, {"compiled", share_json(g.compiled)},
                   {"mean_speedup", optional_json(g.mean_speedup)}});
  }
  return out;
}

// The task table of report.md, a row at a time: candidates, best-of-k with its verdict's
// timing medians, first failure.
const Table kTaskTable{"Tasks",
                       "best: the fastest correct candidate (best-of-k); its verdict's timing medians, '-' where not timed",
                       {"Task", "Category", "Class", "Passed", "Best sample", "Best speedup", "Reference median (ms)",
                        "Best median (ms)", "First failure"},
                       {}};

std::vector<std::string> task_row(const ReportTask& task) {
  const TaskResult& r = task.result;
  const StageRecord* timed = best_measurement(task);
  return {r.task_id, r.category.empty() ? "-" : r.category, r.complexity.empty() ? "-" : r.complexity,
          format_share(r.candidates), r.best_sample ? std::to_string(*r.best_sample) : "-",
          format_speedup(r.best_speedup), format_number(recorded_metric(timed, KF_TIMING_REFERENCE KF_TIMING_MS)),
          format_number(recorded_metric(timed, KF_TIMING_CANDIDATE KF_TIMING_MS)),
          r.failures.empty() ? "" : r.failures.front().describe()};
}

class MarkdownWriter : public FormatWriter {
 public:
  MarkdownWriter(const Report& report, std::ostream& out) : report_(report), out_(out) {}
  void begin() override {
    std::string text = fmt::format("# kforge report: {}\n\n", report_.metrics.label);
    for (const RunRecord& r : report_.runs) {
      text += fmt::format("- run {}: `{}` ({}), {} to {}, {}, kforge {}, host {}{}\n", r.id, r.pipeline, r.pipeline_file,
                          r.started_at, r.ended_at.empty() ? "-" : r.ended_at, r.status, r.kforge_version, r.host,
                          r.devices.empty() ? "" : ", devices " + r.devices);
    }
    text += "\n" + render_markdown_tables(report_tables(report_.metrics, report_.section_tables));
    markdown_heading(text, kTaskTable);
    out_ << text;
  }
  void task(const ReportTask& task) override {
    std::string row;
    markdown_row(row, task_row(task));
    out_ << row;
  }
  void end() override { out_ << "\n"; }

 private:
  const Report& report_;
  std::ostream& out_;
};

class JsonWriter : public FormatWriter {
 public:
  JsonWriter(const Report& report, std::ostream& out) : report_(report), out_(out) {}
  void begin() override;
  void task(const ReportTask& task) override;
  void end() override { out_ << (tasks_ == 0 ? "[]\n}\n" : "\n  ]\n}\n"); }

 private:
  const Report& report_;
  std::ostream& out_;
  uint64_t tasks_ = 0;
};

// An ostream into a file beside `path`, renamed to `path` by commit(): readers never see a
// report half written, and a failed write leaves the previous one.
class FileBeside {
 public:
  explicit FileBeside(fs::path path) : path_(std::move(path)), partial_(path_.string() + ".partial") {
    out_.open(partial_, std::ios::binary | std::ios::trunc);
    if (!out_) throw std::runtime_error(fmt::format("cannot write '{}': {}", partial_.string(), std::strerror(errno)));
  }
  ~FileBeside() {
    if (!committed_) {
      std::error_code ignored;
      fs::remove(partial_, ignored);
    }
  }
  std::ostream& stream() { return out_; }
  const fs::path& path() const { return path_; }
  void commit() {
    out_.close();
    if (!out_) throw std::runtime_error(fmt::format("cannot write '{}': {}", partial_.string(), std::strerror(errno)));
    fs::rename(partial_, path_);
    committed_ = true;
  }

 private:
  fs::path path_;
  fs::path partial_;
  std::ofstream out_;
  bool committed_ = false;
};

std::string render(const Report& report, const std::function<std::unique_ptr<FormatWriter>(std::ostream&)>& make) {
  std::ostringstream out;
  const std::unique_ptr<FormatWriter> writer = make(out);
  write_formats(report, {writer.get()});
  return out.str();
}

}  // namespace

std::optional<ReportFormat> parse_report_format(const std::string& name) {
  if (name == "text") return ReportFormat::Text;
  if (name == "md") return ReportFormat::Markdown;
  if (name == "json") return ReportFormat::Json;
  if (name == "html") return ReportFormat::Html;
  if (name == "junit") return ReportFormat::Junit;
  return std::nullopt;
}

Report load_report(const std::string& directory, const Registry* plugins) {
  const std::shared_ptr<Store> store = open_store_read_only(directory);
  const std::optional<RunRecord> latest = store->latest_run();
  if (!latest) throw StoreError(fmt::format("'{}' holds no run yet: run `kforge run PIPELINE --out {}` first", directory, directory));
  const int64_t series = latest->series;
  Report report;
  report.directory = directory;
  report.runs = store->series_runs(series);
  MetricsFold fold(latest->label);
  std::vector<const ReportSectionKind*> sections;
  if (plugins != nullptr) {
    sections = sections_for_run(*plugins, [&](const std::string& format) { return store->has_task_format(format); });
  }
  SectionsFold tables(sections, latest->label);
  // The sections read what an exporter reads, the run stages' metrics too: the verdicts are
  // read only for them.
  store->visit_tasks(series, !tables.empty(), [&](TaskJobs& task) {
    fold.add(task.info, task.jobs);
    if (!tables.empty()) tables.add(export_task_of(task));
  });
  const InfraRetries retried = store->infra_retries(series);
  fold.count_infra_retries(retried.retries, retried.verdicts);
  report.metrics = fold.finish();
  report.section_tables = tables.finish();
  report.tasks = [store, series](bool verdicts, const ReportTaskVisitor& visit) {
    store->visit_tasks(series, verdicts, [&](TaskJobs& task) {
      visit(ReportTask{task_result(task.info, task.jobs), std::move(task.candidates)});
    });
  };
  report.artifact = [store](const std::string& hash) { return store->artifact(hash); };
  return report;
}

Report report_of(const Dataset& data) {
  Report report;
  report.metrics = compute_metrics(data);
  const auto held = std::make_shared<const Dataset>(data);
  report.tasks = [held](bool, const ReportTaskVisitor& visit) {
    for_each_task(*held, [&](const TaskInfo& task, const std::vector<JobOutcome>& jobs) {
      visit(ReportTask{task_result(task, jobs), {}});
    });
  };
  return report;
}

std::string format_share(const Share& share) {
  return fmt::format("{}/{} ({})", share.count, share.total, format_percent(share.rate()));
}

std::string format_percent(double rate) { return fmt::format("{:.1f}%", rate * 100.0); }

std::string format_seconds(double seconds) { return fmt::format("{:.1f} s", seconds); }

std::string format_money(double dollars) {
  return dollars >= 1.0 ? fmt::format("${:.2f}", dollars) : fmt::format("${:.4f}", dollars);
}

std::string format_speedup(std::optional<double> speedup) { return or_dash(speedup, "{:.2f}x"); }

std::string format_number(std::optional<double> value) {
  if (!value) return "-";
  const double v = *value;
  const double a = std::abs(v);
  if (!std::isfinite(v) || (a != 0 && (a < 1e-3 || a >= 1e6))) return fmt::format("{:.3e}", v);
  std::string text = fmt::format("{:.4f}", v);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text;
}

std::vector<Table> report_tables(const Metrics& m, const std::vector<SectionTable>& sections) {
  std::vector<Table> tables{summary_table(m), models_table(m)};
  if (has_named(m.by_complexity)) {
    tables.push_back(model_complexity_table(m));
    tables.push_back(group_table("Complexity classes", "Class", m.by_complexity, m.compile_known));
  }
  if (has_named(m.by_category)) tables.push_back(group_table("Categories", "Category", m.by_category, m.compile_known));
  if (!m.errors.empty()) tables.push_back(errors_table(m));
  if (!m.not_judged.empty()) tables.push_back(not_judged_table(m));
  if (!m.rounds.empty()) tables.push_back(rounds_table(m));
  tables.push_back(fast_p_table(m));
  if (!m.pass_at_k.empty()) tables.push_back(pass_at_k_table(m));
  if (!m.selection.empty()) tables.push_back(selection_table(m));
  for (const SectionTable& s : sections) tables.push_back(s.table);
  if (!m.environments.empty()) tables.push_back(environment_table(m.environments));
  return tables;
}

Table comparison_table(const std::vector<Metrics>& strategies) {
  Table t{"Strategies", "pass rate: tasks solved; cost per pass: total cost / tasks solved",
          {"Strategy", "Pass rate", "Evaluation time", "Generation time", "Total cost", "Cost per pass", "fast_1"}, {}};
  std::vector<std::string> classes;
  for (const Metrics& m : strategies) {
    for (const auto& c : m.complexity_classes) {
      if (c != "(none)" && std::find(classes.begin(), classes.end(), c) == classes.end()) classes.push_back(c);
    }
  }
  std::sort(classes.begin(), classes.end());
  for (const auto& c : classes) t.columns.push_back(c);
  for (const Metrics& m : strategies) {
    std::vector<std::string> row{m.label, format_share(m.solved), format_seconds(m.eval_seconds),
                                 format_seconds(m.gen_seconds), format_money(m.cost),
                                 m.cost_per_pass ? format_money(*m.cost_per_pass) : "-",
                                 share_cell(fast_p_of(m, 1.0))};
    for (const auto& c : classes) {
      auto it = std::find_if(m.by_complexity.begin(), m.by_complexity.end(), [&](const GroupMetrics& g) { return g.name == c; });
      row.push_back(it == m.by_complexity.end() ? "-" : share_cell(it->solved));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string render_text(const std::vector<Table>& tables) {
  std::string out;
  for (const Table& t : tables) {
    std::vector<size_t> width(t.columns.size(), 0);
    auto widen = [&](const std::vector<std::string>& row) {
      for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
    };
    widen(t.columns);
    for (const auto& row : t.rows) widen(row);
    auto line = [&](const std::vector<std::string>& row) {
      std::string text;
      for (size_t i = 0; i < width.size(); ++i) {
        const std::string& cell = i < row.size() ? row[i] : std::string();
        // The first column names the row; the others are numbers, aligned on the right.
        text += i == 0 ? fmt::format("{:<{}}", cell, width[i]) : fmt::format("  {:>{}}", cell, width[i]);
      }
      while (!text.empty() && text.back() == ' ') text.pop_back();
      return text + "\n";
    };
    out += fmt::format("{}\n", t.title);
    if (!t.note.empty()) out += fmt::format("({})\n", t.note);
    out += line(t.columns);
    size_t total = 0;
    for (size_t w : width) total += w + 2;
    out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
    for (const auto& row : t.rows) out += line(row);
    out += "\n";
  }
  return out;
}

std::string render_markdown_tables(const std::vector<Table>& tables) {
  std::string out;
  for (const Table& t : tables) markdown_table(out, t);
  return out;
}

void JsonWriter::begin() {
  const Metrics& m = report_.metrics;
  json out;
  // docs/schemas/report.schema.json; 2 added "environments", 3 tasks' "best_timing", 4 the summary's
  // infrastructure retries and "not_judged", 5 the report sections' "tables" in place of
  // "category_rates" (a plugin's table now) and the environments' "placement"
  out["kforge_report"] = 5;
  out["strategy"] = m.label;
  auto& runs = out["runs"] = json::array();
  for (const RunRecord& r : report_.runs) {
    runs.push_back({{"id", r.id}, {"pipeline", r.pipeline}, {"pipeline_file", r.pipeline_file},
                    {"kforge_version", r.kforge_version}, {"host", r.host}, {"devices", r.devices},
                    {"expected_jobs", r.expected_jobs}, {"started_at", r.started_at}, {"ended_at", r.ended_at},
                    {"status", r.status}});
  }
  auto& environments = out["environments"] = json::array();
  for (const EnvironmentUse& use : m.environments) {
    json facts = use.facts;
    environments.push_back({{"facts", std::move(facts)}, {"placement", use.placement}, {"jobs", use.jobs}});
  }
  out["summary"] = {{"tasks", m.tasks},
                    {"solved", share_json(m.solved)},
                    {"candidates", share_json(m.candidates)},
                    {"first_pass", m.first_pass},
                    {"solved_by_fix", m.solved_by_fix},
                    {"fix_rounds", m.fix_rounds},
                    {"compile_known", m.compile_known},
                    {"compiled", share_json(m.compiled)},
                    {"geomean_speedup", optional_json(m.geomean_speedup)},
                    {"speedup_tasks", m.speedup_tasks},
                    {"eval_seconds", m.eval_seconds},
                    {"gen_seconds", m.gen_seconds},
                    {"tokens_in", m.tokens_in},
                    {"tokens_out", m.tokens_out},
                    {"cost", m.cost},
                    {"cost_per_pass", optional_json(m.cost_per_pass)},
                    {"attempts", m.attempts},
                    {"cache_hits", m.cache_hits},
                    {KF_METRIC_INFRA_RETRIES, m.infra_retries},
                    {"failed_candidates", m.failed_candidates},
                    {"not_judged_candidates", m.not_judged_candidates}};
  auto& models = out["models"] = json::array();
  for (const ModelMetrics& mm : m.models) {
    json by_class = json::object();
    for (const auto& [c, s] : mm.by_complexity) by_class[c] = share_json(s);
    models.push_back({{"model", mm.model}, {"solved", share_json(mm.solved)}, {"candidates", share_json(mm.candidates)},
                      {"first_pass", mm.first_pass}, {"solved_by_fix", mm.solved_by_fix},
                      {"fix_rounds", mm.fix_rounds}, {"by_complexity", by_class}});
  }
  out["complexity"] = group_json(m.by_complexity);
  out["categories"] = group_json(m.by_category);
  auto& errors = out["errors"] = json::array();
  for (const ErrorShare& e : m.errors) errors.push_back({{"error_class", e.error_class}, {"count", e.count}, {"share", e.share}});
  auto& not_judged = out["not_judged"] = json::array();
  for (const ErrorShare& e : m.not_judged) {
    not_judged.push_back({{"error_class", e.error_class}, {"count", e.count}, {"share", e.share}});
  }
  auto& rounds = out["rounds"] = json::array();
  for (const RoundMetrics& r : m.rounds) {
    rounds.push_back({{"round", r.round}, {"reached", r.reached}, {"compiled", share_json(r.compiled)},
                      {"passed", share_json(r.passed)}, {"mean_speedup", optional_json(r.mean_speedup)}});
  }
  auto& fast = out["fast_p"] = json::array();
  for (const FastP& f : m.fast_p) fast.push_back({{"p", f.p}, {"tasks", share_json(f.tasks)}});
  auto& pass = out["pass_at_k"] = json::array();
  for (const PassAtK& p : m.pass_at_k) pass.push_back({{"k", p.k}, {"value", p.value}});
  auto& selection = out["selection"] = json::array();
  for (const SelectionRow& s : m.selection) {
    selection.push_back({{"model", s.model}, {"chosen", s.chosen}, {"share", s.share}, {"passed", share_json(s.passed)}});
  }
  auto& tables = out["tables"] = json::array();
  for (const SectionTable& s : report_.section_tables) {
    tables.push_back({{"section", s.section}, {"plugin", s.plugin}, {"title", s.table.title}, {"note", s.table.note},
                      {"columns", s.table.columns}, {"rows", s.table.rows},
                      {"data", s.data_json.empty() ? json(nullptr) : json::parse(s.data_json)}});
  }
  out["tasks"] = json::array();
  // The tasks follow, each as the whole document's dump would indent it; the text ends in
  // `[]\n}` for none.
  std::string text = out.dump(2, ' ', false, json::error_handler_t::replace);
  text.resize(text.size() - 4);
  out_ << text;
}

void JsonWriter::task(const ReportTask& task) {
  const TaskResult& r = task.result;
  const json entry = {{"task", r.task_id}, {"category", r.category}, {"complexity", r.complexity},
                      {"candidates", share_json(r.candidates)}, {"solved", r.solved},
                      {"best_sample", r.best_sample ? json(*r.best_sample) : json(nullptr)},
                      {"best_speedup", optional_json(r.best_speedup)},
                      {"best_timing", best_timing_json(r, best_measurement(task))}, {"failures", failures_json(r.failures)},
                      {"seconds", r.seconds}};
  std::string text = tasks_++ == 0 ? "[\n" : ",\n";
  const std::string dumped = entry.dump(2, ' ', false, json::error_handler_t::replace);
  size_t start = 0;
  for (size_t end = dumped.find('\n'); ; end = dumped.find('\n', start)) {
    text += "    ";
    text.append(dumped, start, end == std::string::npos ? std::string::npos : end + 1 - start);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  out_ << text;
}

std::unique_ptr<FormatWriter> markdown_writer(const Report& report, std::ostream& out) {
  return std::make_unique<MarkdownWriter>(report, out);
}

std::unique_ptr<FormatWriter> json_writer(const Report& report, std::ostream& out) {
  return std::make_unique<JsonWriter>(report, out);
}

void write_formats(const Report& report, const std::vector<FormatWriter*>& writers) {
  for (FormatWriter* w : writers) w->begin();
  if (report.tasks) {
    report.tasks(true, [&](const ReportTask& task) {
      for (FormatWriter* w : writers) w->task(task);
    });
  }
  for (FormatWriter* w : writers) w->end();
}

std::string render_markdown(const Report& report) {
  return render(report, [&](std::ostream& out) { return markdown_writer(report, out); });
}

std::string render_json(const Report& report) {
  return render(report, [&](std::ostream& out) { return json_writer(report, out); });
}

std::string render_html(const Report& report, const HtmlLimits& limits) {
  return render(report, [&](std::ostream& out) { return html_writer(report, out, limits); });
}

std::string render_junit(const Report& report) {
  return render(report, [&](std::ostream& out) { return junit_writer(report, out); });
}

std::vector<std::string> write_report_files(const Report& report, const std::string& directory,
                                            const std::vector<ReportFormat>& formats) {
  auto wants = [&](ReportFormat f) { return std::find(formats.begin(), formats.end(), f) != formats.end(); };
  std::vector<std::unique_ptr<FileBeside>> files;
  std::vector<std::unique_ptr<FormatWriter>> writers;
  auto add = [&](bool wanted, const char* name, auto make) {
    if (!wanted) return;
    files.push_back(std::make_unique<FileBeside>(fs::path(directory) / name));
    writers.push_back(make(files.back()->stream()));
  };
  add(wants(ReportFormat::Markdown), "report.md", [&](std::ostream& out) { return markdown_writer(report, out); });
  add(wants(ReportFormat::Json), "report.json", [&](std::ostream& out) { return json_writer(report, out); });
  add(wants(ReportFormat::Html), "report.html", [&](std::ostream& out) { return html_writer(report, out, {}); });
  add(wants(ReportFormat::Junit), "junit.xml", [&](std::ostream& out) { return junit_writer(report, out); });
  std::vector<FormatWriter*> all;
  for (const auto& w : writers) all.push_back(w.get());
  write_formats(report, all);
  writers.clear();
  std::vector<std::string> written;
  for (const auto& file : files) {
    file->commit();
    written.push_back(file->path().string());
  }
  return written;
}

std::pair<double, double> parse_fast_p_threshold(const std::string& text) {
  const auto colon = text.find(':');
  auto number = [&](const std::string& part, const char* what) {
    size_t used = 0;
    double value = 0;
    try {
      value = std::stod(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != part.size()) {
      throw std::invalid_argument(fmt::format("--min-fast-p '{}': {} '{}' is not a number (expected P:SHARE, e.g. 1.0:0.2)", text, what, part));
    }
    return value;
  };
  if (colon == std::string::npos) {
    throw std::invalid_argument(fmt::format("--min-fast-p '{}': expected P:SHARE, e.g. 1.0:0.2 (at least 20% of tasks correct and faster than 1.0x)", text));
  }
  const double p = number(text.substr(0, colon), "P");
  const double share = number(text.substr(colon + 1), "SHARE");
  if (p < 0) throw std::invalid_argument(fmt::format("--min-fast-p '{}': P must be >= 0", text));
  if (share < 0 || share > 1) throw std::invalid_argument(fmt::format("--min-fast-p '{}': SHARE must be between 0 and 1", text));
  return {p, share};
}

std::vector<std::string> missed_thresholds(const Report& report, const Thresholds& thresholds) {
  const Metrics& m = report.metrics;
  std::vector<std::string> missed;
  if (thresholds.min_pass_rate && m.solved.rate() < *thresholds.min_pass_rate) {
    missed.push_back(fmt::format("pass rate {} is below --min-pass-rate {:g}", format_share(m.solved), *thresholds.min_pass_rate));
  }
  if (thresholds.min_fast_p.empty()) return missed;
  std::vector<Share> fast(thresholds.min_fast_p.size());
  if (report.tasks) {
    report.tasks(false, [&](const ReportTask& task) {
      for (size_t i = 0; i < fast.size(); ++i) {
        ++fast[i].total;
        if (fast_at(task.result, thresholds.min_fast_p[i].first)) ++fast[i].count;
      }
    });
  }
  for (size_t i = 0; i < fast.size(); ++i) {
    const auto& [p, share] = thresholds.min_fast_p[i];
    if (fast[i].rate() < share) {
      missed.push_back(fmt::format("fast_{:g} {} is below --min-fast-p {:g}:{:g}", p, format_share(fast[i]), p, share));
    }
  }
  return missed;
}

std::string markup_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') continue;
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace kforge
