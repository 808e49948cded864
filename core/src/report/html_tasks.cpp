#include "report/html_tasks.hpp"

#include "report/environment.hpp"
#include "report/json_values.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

namespace kforge {
namespace {

using json = nlohmann::ordered_json;

// Appends JSON text that is safe inside <script type="application/json">: the only
// character that can end such a block or open a comment in it is '<', and in JSON it can
// only occur inside strings, where \u003c means the same.
void append_script_json(std::string& out, const json& value) {
  const std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  size_t start = 0;
  for (size_t at = text.find('<'); at != std::string::npos; at = text.find('<', start)) {
    out.append(text, start, at - start);
    out += "\\u003c";
    start = at + 1;
  }
  out.append(text, start, std::string::npos);
}

const char* task_status(const TaskResult& t) { return t.solved ? "solved" : t.only_errors ? "error" : "failed"; }

json stage_json(const StageRecord& s) {
  json metrics = json::object();
  for (const auto& [name, value] : s.metrics) metrics[name] = value;
  return {{"round", s.round}, {"stage", s.stage}, {"kind", s.kind}, {"role", s.role}, {"status", s.status},
          {"route", s.route}, {"error_class", s.error_class}, {"message", s.message}, {"metrics", metrics},
          {"model", s.model}, {"cost", optional_json(s.cost)}, {"seconds", s.seconds}, {"cached", s.cached},
          {"measured", s.measured}, {"log", s.log_hash}};
}

// A task's candidates with the artifacts they name, each once.
json task_detail_json(const std::vector<CandidateRecord>& candidates, const Report& report) {
  json list = json::array();
  std::map<std::string, std::string> contents;  // by hash, as the page has always had them
  auto name = [&](const std::string& hash) {
    if (!hash.empty() && report.artifact && contents.count(hash) == 0) {
      if (auto content = report.artifact(hash)) contents.emplace(hash, std::move(*content));
    }
    return hash;
  };
  for (const CandidateRecord& c : candidates) {
    json rounds = json::array();
    for (const RoundCode& r : candidate_rounds(c)) {
      rounds.push_back({{"round", r.round}, {"code", name(r.code_hash)}, {"diff", name(r.diff_hash)},
                        {"changed", r.code_changed}});
    }
    json stages = json::array();
    for (const StageRecord& s : c.stages) {
      name(s.log_hash);
      stages.push_back(stage_json(s));
    }
    const StageRecord* measured = measurement_verdict(c);
    list.push_back({{"sample", c.sample}, {"run", c.run_id}, {"status", c.status}, {"round", c.round},
                    {"stage", c.stage}, {"error_class", c.error_class}, {"message", c.message},
                    {"model", c.model}, {"language", c.language}, {"device", c.device},
                    {"tokens_in", optional_json(c.tokens_in)}, {"tokens_out", optional_json(c.tokens_out)},
                    {"cost", optional_json(c.cost)}, {"speedup", optional_json(c.speedup)},
                    {"seconds", c.seconds}, {"eval_seconds", optional_json(c.eval_seconds)},
                    {"gen_seconds", optional_json(c.gen_seconds)}, {"finished_at", c.finished_at},
                    {"measurement", measured ? json(measured - c.stages.data()) : json(nullptr)},
                    {"rounds", rounds}, {"stages", stages}});
  }
  json artifacts = json::object();
  for (auto& [hash, content] : contents) artifacts[hash] = std::move(content);
  return {{"candidates", list}, {"artifacts", artifacts}};
}

// A task's entry in the index: the table's row and the filters' values.
json index_entry(const ReportTask& task, bool detail) {
  const TaskResult& t = task.result;
  std::set<std::string> models;
  std::set<std::string> error_classes;
  double cost = 0;
  for (const CandidateRecord& c : task.candidates) {
    if (!c.model.empty()) models.insert(c.model);
    if (c.status != "pass") error_classes.insert(c.error_class.empty() ? "(unclassified)" : c.error_class);
    cost += c.cost.value_or(0);
  }
  return {{"id", t.task_id}, {"category", t.category}, {"complexity", t.complexity},
          {"status", task_status(t)}, {"passed", t.candidates.count}, {"candidates", t.candidates.total},
          {"best_sample", t.best_sample ? json(*t.best_sample) : json(nullptr)},
          {"best_speedup", optional_json(t.best_speedup)}, {"models", models},
          {"error_classes", error_classes},
          {"first_failure", t.failures.empty() ? "" : t.failures.front().describe()}, {"cost", cost},
          {"seconds", t.seconds}, {"detail", detail}};
}

std::string script_json(const json& value) {
  std::string out;
  append_script_json(out, value);
  return out;
}

}  // namespace

TaskBrowserWriter::TaskBrowserWriter(const Report& report, std::ostream& page, const HtmlLimits& limits)
    : report_(report), page_(page), limits_(limits) {}

TaskBrowserWriter::~TaskBrowserWriter() {
  if (blocks_ != nullptr) std::fclose(blocks_);
}

std::string TaskBrowserWriter::markup() const {
  return fmt::format(R"html(<section id="task-browser">
<h2>Tasks ({})</h2>
<p class="note">click a task for its candidates: code per round, the diff of each fix round, every stage's verdict, message and log, correctness and timings, model and cost</p>
<p id="task-limits" class="note" hidden></p>
<div id="environment"></div>
<div class="filters">
<input id="filter-text" type="search" placeholder="task name contains" aria-label="task name contains">
<select id="filter-status" aria-label="status"></select>
<select id="filter-complexity" aria-label="complexity class"></select>
<select id="filter-category" aria-label="category"></select>
<select id="filter-model" aria-label="model"></select>
<select id="filter-error" aria-label="error class"></select>
<span id="filter-count" class="muted"></span>
</div>
<table id="task-table"><thead><tr>
<th data-key="id">Task</th><th data-key="category">Category</th><th data-key="complexity">Class</th><th data-key="status">Status</th><th data-key="passed">Passed</th><th data-key="best_speedup">Best speedup</th><th data-key="models">Models</th><th data-key="cost">Cost</th><th data-key="seconds">Time</th><th data-key="first_failure">First failure</th>
</tr></thead><tbody></tbody></table>
<button id="show-more" type="button" hidden>show more</button>
<noscript><p>The task browser needs JavaScript; report.md lists every task.</p></noscript>
</section>
)html",
                     report_.metrics.tasks);
}

void TaskBrowserWriter::begin() {
  const Metrics& m = report_.metrics;
  // What judged the run (report/environment.hpp), one field per row above the task table;
  // a field whose value differed between the run's servers lists every value. Null for a
  // store that recorded none (older than schema 3).
  std::map<std::string, std::vector<std::string>> fields;  // field -> its values, first seen first
  for (const EnvironmentUse& use : m.environments) {
    for (const auto& [field, value] : use.facts) {
      std::vector<std::string>& values = fields[field];
      if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
    }
  }
  json environment = nullptr;
  for (const auto& [field, values] : fields) environment[field] = fmt::format("{}", fmt::join(values, ", "));
  json timing = {{"parties", kTimingParties}, {"columns", json::array()}};
  for (const TimingStatistic& statistic : kTimingStatistics) {
    timing["columns"].push_back({{"heading", statistic.heading}, {"suffix", statistic.suffix}});
  }
  // The index is one JSON object written in pieces: its tasks as they come, then what the
  // page holds of the run.
  page_ << "<script type=\"application/json\" id=\"kf-index\">{\"strategy\":" << script_json(m.label)
        << ",\"environment\":" << script_json(environment) << ",\"timing\":" << script_json(timing) << ",\"tasks\":[";
  blocks_ = std::tmpfile();
  if (blocks_ == nullptr) {
    throw std::runtime_error(fmt::format("cannot create a temporary file for report.html: {} (check TMPDIR)",
                                         std::strerror(errno)));
  }
}

void TaskBrowserWriter::task(const ReportTask& task) {
  if (index_full_) return;
  std::string block;
  if (detail_bytes_ < limits_.detail_bytes) {
    block = script_json(task_detail_json(task.candidates, report_));
    if (detail_bytes_ + block.size() > limits_.detail_bytes) block.clear();
  }
  const bool detail = !block.empty();
  const std::string entry = (listed_ == 0 ? "" : ",") + script_json(index_entry(task, detail));
  if (index_bytes_ + entry.size() > limits_.index_bytes) {
    index_full_ = true;  // the table lists a prefix of the tasks
    return;
  }
  index_bytes_ += entry.size();
  page_ << entry;
  if (detail) {
    const std::string text = fmt::format("<script type=\"application/json\" id=\"kf-task-{}\">{}</script>\n", listed_, block);
    if (std::fwrite(text.data(), 1, text.size(), blocks_) != text.size()) {
      throw std::runtime_error(fmt::format("cannot write report.html's temporary file: {}", std::strerror(errno)));
    }
    detail_bytes_ += block.size();
    ++detailed_;
  }
  ++listed_;
}

void TaskBrowserWriter::end() {
  const json limits = {{"total", report_.metrics.tasks},
                       {"listed", listed_},
                       {"detailed", detailed_},
                       {"index_mib", static_cast<double>(limits_.index_bytes) / (1 << 20)},
                       {"detail_mib", static_cast<double>(limits_.detail_bytes) / (1 << 20)},
                       {"directory", report_.directory}};
  std::string tail = script_json(limits);  // {"total":...}: its members close the index
  page_ << "]," << tail.substr(1) << "</script>\n<script>kforgeStartTaskBrowser();</script>\n";
  std::rewind(blocks_);
  char buffer[1 << 16];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, blocks_)) > 0;) page_.write(buffer, static_cast<std::streamsize>(n));
  if (std::ferror(blocks_)) throw std::runtime_error(fmt::format("cannot read report.html's temporary file: {}", std::strerror(errno)));
}

}  // namespace kforge
