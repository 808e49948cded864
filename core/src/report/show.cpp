#include "report/show.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "report/candidates.hpp"
#include "report/report.hpp"
#include "store/store.hpp"

#include <memory>
#include "util/edit_distance.hpp"

namespace kforge {
namespace {

// Every line of `text` behind `prefix`, made safe for the terminal.
std::string indented(const std::string& text, const std::string& prefix) {
  std::string out;
  size_t start = 0;
  const std::string safe = terminal_safe(text);
  while (start < safe.size()) {
    size_t end = safe.find('\n', start);
    if (end == std::string::npos) end = safe.size();
    out += prefix + safe.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

std::string numbered(const std::string& code, const std::string& prefix) {
  std::string out;
  size_t start = 0;
  int line = 1;
  const std::string safe = terminal_safe(code);
  while (start < safe.size()) {
    size_t end = safe.find('\n', start);
    if (end == std::string::npos) end = safe.size();
    out += fmt::format("{}{:>4} | {}\n", prefix, line++, safe.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string artifact(const CandidateRecords& records, const std::string& hash) {
  auto it = records.artifacts.find(hash);
  return it == records.artifacts.end() ? "" : it->second;
}

// One row per party, one column per statistic (candidates.hpp), '-' for what the verdict
// did not record, so that what was not measured reads as such.
std::string timing_table(const StageRecord* s) {
  std::string out = fmt::format("  {:<10}", "");
  for (const TimingStatistic& statistic : kTimingStatistics) out += fmt::format(" {:>11}", statistic.heading);
  out += "\n";
  for (const char* party : kTimingParties) {
    out += fmt::format("  {:<10}", party);
    for (const std::optional<double>& value : timing_statistics(s, party)) out += fmt::format(" {:>11}", format_number(value));
    out += "\n";
  }
  return out;
}

std::string measurement_text(const CandidateRecord& c) {
  const StageRecord* s = measurement_verdict(c);
  if (s == nullptr) return "correctness and timing: no stage measured this candidate\n" + timing_table(nullptr) + "\n";
  std::string out = fmt::format("correctness and timing (stage {}, round {}{}):\n", terminal_safe(s->stage), s->round,
                                s->cached ? ", from the verdict cache" : "");
  out += timing_table(s);
  for (const auto& [name, value] : s->metrics) {
    if (is_timing_statistic(name)) continue;
    out += fmt::format("  {:<20} {}\n", terminal_safe(name), format_number(value));
  }
  return out + "\n";
}

std::string stage_text(const StageRecord& s, const CandidateRecords& records) {
  std::string out = fmt::format("  {:<12} {:<9} {:<6} {:<20} {:>8.2f} s{}\n", terminal_safe(s.stage),
                                terminal_safe(s.role.empty() ? s.kind : s.role), terminal_safe(s.status),
                                terminal_safe(s.error_class), s.seconds, s.cached ? " (cached)" : "");
  if (!s.route.empty()) out += fmt::format("      route: {}\n", terminal_safe(s.route));
  if (!s.message.empty()) out += indented(s.message, "      ");
  if (!s.metrics.empty()) {
    std::vector<std::string> parts;
    for (const auto& [name, value] : s.metrics) parts.push_back(terminal_safe(name) + "=" + format_number(value));
    out += fmt::format("      metrics: {}\n", fmt::join(parts, "  "));
  }
  if (!s.log_hash.empty()) out += "      log tail:\n" + indented(artifact(records, s.log_hash), "      | ");
  return out;
}

std::string candidate_text(const CandidateRecord& c, const CandidateRecords& records) {
  std::string out = fmt::format("== sample {}: {}, round {}, last stage {}{}\n", c.sample, terminal_safe(c.status), c.round,
                                terminal_safe(c.stage), c.error_class.empty() ? "" : ": " + terminal_safe(c.error_class));
  if (!c.message.empty()) out += "message:  " + indented(c.message, "          ").substr(10);
  out += fmt::format("model:    {}{}{}\n", c.model.empty() ? "-" : terminal_safe(c.model),
                     c.language.empty() ? "" : ", language " + terminal_safe(c.language),
                     c.device.empty() ? "" : ", device " + terminal_safe(c.device));
  if (c.tokens_in || c.cost) {
    out += fmt::format("cost:     {} tokens in / {} out, {}\n", format_number(c.tokens_in.value_or(0)),
                       format_number(c.tokens_out.value_or(0)), format_money(c.cost.value_or(0)));
  }
  out += fmt::format("time:     {:.2f} s{}, run {}, finished {}\n", c.seconds,
                     c.eval_seconds ? fmt::format(" (evaluation {:.2f} s, generation {:.2f} s)", *c.eval_seconds,
                                                  c.gen_seconds.value_or(0))
                                    : "",
                     c.run_id, terminal_safe(c.finished_at));
  if (c.speedup) out += fmt::format("speedup:  {}\n", format_speedup(c.speedup));
  out += "\n" + measurement_text(c);
  for (const RoundCode& r : candidate_rounds(c)) {
    out += fmt::format("-- round {}{}\n", r.round, r.round == 0 ? "" : " (fix round)");
    if (!r.diff_hash.empty()) out += "  diff:\n" + indented(artifact(records, r.diff_hash), "    ");
    for (const StageRecord& s : c.stages) {
      if (s.round == r.round) out += stage_text(s, records);
    }
    if (r.code_hash.empty()) {
      out += "  code: none recorded\n";
    } else if (!r.code_changed) {
      out += fmt::format("  code: unchanged from round {}\n", r.round - 1);
    } else {
      out += fmt::format("  code{}:\n", c.language.empty() ? "" : " (" + terminal_safe(c.language) + ")");
      out += numbered(artifact(records, r.code_hash), "  ");
    }
    out += "\n";
  }
  return out;
}

// The five task ids of the store closest to `task_id`, read one at a time.
std::string unknown_task(const std::string& directory, const std::string& task_id, Store& store) {
  std::vector<std::pair<size_t, std::string>> close;  // the closest so far, at most five, sorted
  store.visit_task_ids([&](const std::string& id) {
    std::pair<size_t, std::string> candidate{edit_distance(id, task_id), id};
    if (close.size() == 5 && !(candidate < close.back())) return;
    close.insert(std::upper_bound(close.begin(), close.end(), candidate), std::move(candidate));
    if (close.size() > 5) close.pop_back();
  });
  std::vector<std::string> names;
  for (const auto& [distance, id] : close) names.push_back(terminal_safe(id));
  return fmt::format("no candidate of task '{}' finished in the latest run of '{}'{}", terminal_safe(task_id), directory,
                     names.empty() ? std::string(" (it has no tasks)")
                                   : fmt::format("; tasks with close names: {}", fmt::join(names, ", ")));
}

}  // namespace

std::string terminal_safe(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte == 0x7f) {
      out += "^?";
    } else if (byte < 0x20 && c != '\n' && c != '\t') {
      out += '^';
      out += static_cast<char>(byte + 0x40);
    } else {
      out += c;
    }
  }
  return out;
}

std::string render_show(const std::string& directory, const std::string& task_id, std::optional<int> sample) {
  const std::unique_ptr<Store> opened = open_store_read_only(directory);
  Store& store = *opened;
  const std::optional<RunRecord> latest = store.latest_run();
  if (!latest) throw ShowError(fmt::format("'{}' holds no run yet", directory));
  const CandidateRecords records = store.load_candidates(latest->series, &task_id);
  if (records.candidates.empty()) throw ShowError(unknown_task(directory, task_id, store));

  std::vector<const CandidateRecord*> chosen;
  std::vector<std::string> samples;
  for (const CandidateRecord& c : records.candidates) {
    samples.push_back(std::to_string(c.sample));
    if (!sample || c.sample == *sample) chosen.push_back(&c);
  }
  if (chosen.empty()) {
    throw ShowError(fmt::format("task '{}' has no sample {} in the latest run of '{}'; its samples: {}",
                                terminal_safe(task_id), *sample, directory, fmt::join(samples, ", ")));
  }

  std::string out = fmt::format("task {}", terminal_safe(task_id));
  if (auto it = records.tasks.find(task_id); it != records.tasks.end()) {
    const TaskInfo& t = it->second;
    std::vector<std::string> facts;
    if (!t.category.empty()) facts.push_back("category " + terminal_safe(t.category));
    if (!t.complexity.empty()) facts.push_back("class " + terminal_safe(t.complexity));
    if (t.level != 0) facts.push_back(fmt::format("level {:g}", t.level));
    if (!t.format.empty()) facts.push_back("format " + terminal_safe(t.format));
    if (!facts.empty()) out += fmt::format(" ({})", fmt::join(facts, ", "));
  }
  out += fmt::format("\nstrategy {}, output directory {}\n", terminal_safe(latest->label), directory);
  std::vector<std::string> summary;
  for (const CandidateRecord& c : records.candidates) {
    summary.push_back(fmt::format("sample {} {}{}", c.sample, terminal_safe(c.status),
                                  c.status == "pass" ? (c.speedup ? " " + format_speedup(c.speedup) : "")
                                                     : " (" + terminal_safe(c.error_class) + ")"));
  }
  out += fmt::format("{} candidate(s): {}\n\n", records.candidates.size(), fmt::join(summary, ", "));
  for (const CandidateRecord* c : chosen) out += candidate_text(*c, records);
  return out;
}

}  // namespace kforge
