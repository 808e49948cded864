#include "report/html_tasks.hpp"

#include "report/environment.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace kforge {
namespace {

using json = nlohmann::ordered_json;

json optional_json(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

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
json task_detail_json(const std::vector<const CandidateRecord*>& candidates,
                      const std::map<std::string, std::string>& artifacts) {
  json list = json::array();
  std::set<std::string> named;
  auto name = [&](const std::string& hash) {
    if (!hash.empty() && artifacts.count(hash) != 0) named.insert(hash);
    return hash;
  };
  for (const CandidateRecord* c : candidates) {
    json rounds = json::array();
    for (const RoundCode& r : candidate_rounds(*c)) {
      rounds.push_back({{"round", r.round}, {"code", name(r.code_hash)}, {"diff", name(r.diff_hash)},
                        {"changed", r.code_changed}});
    }
    json stages = json::array();
    for (const StageRecord& s : c->stages) {
      name(s.log_hash);
      stages.push_back(stage_json(s));
    }
    const StageRecord* measured = measurement_verdict(*c);
    list.push_back({{"sample", c->sample}, {"run", c->run_id}, {"status", c->status}, {"round", c->round},
                    {"stage", c->stage}, {"error_class", c->error_class}, {"message", c->message},
                    {"model", c->model}, {"language", c->language}, {"device", c->device},
                    {"tokens_in", optional_json(c->tokens_in)}, {"tokens_out", optional_json(c->tokens_out)},
                    {"cost", optional_json(c->cost)}, {"speedup", optional_json(c->speedup)},
                    {"seconds", c->seconds}, {"eval_seconds", optional_json(c->eval_seconds)},
                    {"gen_seconds", optional_json(c->gen_seconds)}, {"finished_at", c->finished_at},
                    {"measurement", measured ? json(measured - c->stages.data()) : json(nullptr)},
                    {"rounds", rounds}, {"stages", stages}});
  }
  json contents = json::object();
  for (const std::string& hash : named) contents[hash] = artifacts.at(hash);
  return {{"candidates", list}, {"artifacts", contents}};
}

}  // namespace

TaskBrowserHtml task_browser_html(const Report& report) {
  const Metrics& m = report.metrics;
  std::map<std::string, std::vector<const CandidateRecord*>> by_task;
  for (const CandidateRecord& c : report.candidates.candidates) by_task[c.task_id].push_back(&c);

  json tasks = json::array();
  std::string details;
  for (size_t i = 0; i < m.per_task.size(); ++i) {
    const TaskResult& t = m.per_task[i];
    const auto found = by_task.find(t.task_id);
    const std::vector<const CandidateRecord*> none;
    const auto& candidates = found == by_task.end() ? none : found->second;
    std::set<std::string> models;
    std::set<std::string> error_classes;
    double cost = 0;
    for (const CandidateRecord* c : candidates) {
      if (!c->model.empty()) models.insert(c->model);
      if (c->status != "pass") error_classes.insert(c->error_class.empty() ? "(unclassified)" : c->error_class);
      cost += c->cost.value_or(0);
    }
    tasks.push_back({{"id", t.task_id}, {"category", t.category}, {"complexity", t.complexity},
                     {"status", task_status(t)}, {"passed", t.candidates.count}, {"candidates", t.candidates.total},
                     {"best_sample", t.best_sample ? json(*t.best_sample) : json(nullptr)},
                     {"best_speedup", optional_json(t.best_speedup)}, {"models", models},
                     {"error_classes", error_classes},
                     {"first_failure", t.failures.empty() ? "" : t.failures.front().describe()}, {"cost", cost},
                     {"seconds", t.seconds}});
    details += fmt::format("<script type=\"application/json\" id=\"kf-task-{}\">", i);
    append_script_json(details, task_detail_json(candidates, report.candidates.artifacts));
    details += "</script>\n";
  }
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
  const json index = {{"strategy", m.label}, {"environment", environment}, {"timing", timing}, {"tasks", tasks}};

  TaskBrowserHtml out;
  out.markup = fmt::format(R"html(<section id="task-browser">
<h2>Tasks ({})</h2>
<p class="note">click a task for its candidates: code per round, the diff of each fix round, every stage's verdict, message and log, correctness and timings, model and cost</p>
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
                           m.per_task.size());
  out.data = "<script type=\"application/json\" id=\"kf-index\">";
  append_script_json(out.data, index);
  out.data += "</script>\n<script>kforgeStartTaskBrowser();</script>\n";
  out.data += details;
  return out;
}

}  // namespace kforge
