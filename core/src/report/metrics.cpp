#include "report/metrics.hpp"

#include <kforge/abi.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace kforge {
namespace {

std::string or_none(const std::string& text) { return text.empty() ? "(none)" : text; }

void count(Share& share, bool hit) {
  ++share.total;
  if (hit) ++share.count;
}

std::optional<double> mean(double sum, uint64_t n) {
  if (n == 0) return std::nullopt;
  return sum / static_cast<double>(n);
}

// What one task's candidates add up to.
struct TaskTally {
  TaskResult result;
  bool compiled = false;
  bool first_pass = false;
};

// Which of one model's candidates solved a task, and how.
struct ModelTaskTally {
  bool solved = false;
  bool first_pass = false;
};

std::vector<GroupMetrics> by_group(const std::vector<TaskTally>& tasks,
                                   const std::string TaskResult::*attribute) {
  std::map<std::string, GroupMetrics> groups;
  std::map<std::string, std::pair<double, uint64_t>> speedups;
  for (const TaskTally& t : tasks) {
    const std::string name = or_none(t.result.*attribute);
    GroupMetrics& g = groups[name];
    g.name = name;
    count(g.solved, t.result.solved);
    count(g.compiled, t.compiled);
    if (t.result.best_speedup) {
      speedups[name].first += *t.result.best_speedup;
      ++speedups[name].second;
    }
  }
  std::vector<GroupMetrics> rows;
  for (auto& [name, g] : groups) {
    g.mean_speedup = mean(speedups[name].first, speedups[name].second);
    rows.push_back(std::move(g));
  }
  return rows;
}

// The well-known error classes of a run stage's comparison: the candidate's code ran to the
// end and its outputs were compared.
constexpr const char* kComparisonErrors[] = {KF_ERROR_SHAPE_MISMATCH, KF_ERROR_DTYPE_MISMATCH,
                                             KF_ERROR_NUMERICAL_MISMATCH, KF_ERROR_CHEAT_DETECTED};

// Whether the candidate's code ran to the end: it passed, or only the comparison of its
// outputs failed it (KernelBenchX's call accuracy).
bool ran_to_the_end(const JobOutcome& job) {
  if (job.passed()) return true;
  if (job.status != VerdictStatus::Fail) return false;
  return std::any_of(std::begin(kComparisonErrors), std::end(kComparisonErrors),
                     [&](const char* compared) { return job.error_class == compared; });
}

std::vector<CategoryRates> category_rates(const Dataset& data) {
  const bool kernelbenchx = std::any_of(data.tasks.begin(), data.tasks.end(), [](const auto& item) {
    return item.second.format == KF_TASK_FORMAT_KERNELBENCHX;
  });
  if (!kernelbenchx) return {};
  std::map<std::string, CategoryRates> rows;
  std::map<std::string, std::pair<double, uint64_t>> speedups;
  for (const JobOutcome& job : data.jobs) {
    if (job.status == VerdictStatus::Error) continue;
    const auto task = data.tasks.find(job.task_id);
    const std::string name = or_none(task == data.tasks.end() ? std::string() : task->second.category);
    CategoryRates& row = rows[name];
    row.name = name;
    count(row.called, ran_to_the_end(job));
    count(row.correct, job.passed());
    if (job.passed() && job.speedup) {
      count(row.faster, *job.speedup > 1.0);
      speedups[name].first += *job.speedup;
      ++speedups[name].second;
    }
  }
  std::vector<CategoryRates> out;
  for (auto& [name, row] : rows) {
    row.mean_speedup = mean(speedups[name].first, speedups[name].second);
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

std::string CandidateFailure::describe() const {
  return "sample " + std::to_string(sample) + " round " + std::to_string(round) + ": " + error_class +
         (message.empty() ? "" : ": " + message);
}

double pass_at_k(int n, int c, int k) {
  if (n - c < k) return 1.0;
  double all_fail = 1.0;
  for (int i = n - c + 1; i <= n; ++i) all_fail *= 1.0 - static_cast<double>(k) / static_cast<double>(i);
  return 1.0 - all_fail;
}

Share fast_p(const std::vector<TaskResult>& tasks, double p) {
  Share share;
  for (const TaskResult& t : tasks) count(share, t.solved && (p == 0 || (t.best_speedup && *t.best_speedup > p)));
  return share;
}

Metrics compute_metrics(const Dataset& data) {
  Metrics m;
  m.label = data.label;

  // Per task, in order of first appearance.
  std::vector<TaskTally> tasks;
  std::unordered_map<std::string, size_t> task_slot;
  // Per model, per task.
  std::map<std::string, std::map<std::string, ModelTaskTally>> model_tasks;
  std::map<std::string, ModelMetrics> models;
  std::map<std::string, ErrorShare> errors;
  std::map<std::string, ErrorShare> not_judged;
  std::map<std::string, SelectionRow> selection;
  uint64_t with_model = 0;
  int max_round = 0;

  for (const JobOutcome& job : data.jobs) {
    auto [slot, fresh] = task_slot.try_emplace(job.task_id, tasks.size());
    if (fresh) {
      TaskTally t;
      t.result.task_id = job.task_id;
      if (auto it = data.tasks.find(job.task_id); it != data.tasks.end()) {
        t.result.category = it->second.category;
        t.result.complexity = it->second.complexity;
      }
      t.result.only_errors = true;
      tasks.push_back(std::move(t));
    }
    TaskTally& task = tasks[slot->second];
    TaskResult& r = task.result;
    count(r.candidates, job.passed());
    r.seconds += job.seconds;
    task.compiled = task.compiled || job.compiled();
    if (job.passed()) {
      r.solved = true;
      task.first_pass = task.first_pass || job.round == 0;
      // Best-of-k: the fastest correct candidate; the first correct one when none was timed.
      const bool faster = job.speedup && (!r.best_speedup || *job.speedup > *r.best_speedup);
      if (!r.best_sample || faster) {
        r.best_sample = job.sample;
        r.best_speedup = job.speedup;
      }
    } else {
      const std::string cls = job.error_class.empty() ? "(unclassified)" : job.error_class;
      r.failures.push_back({job.sample, job.round, cls, job.message});
      const bool judged = job.status != VerdictStatus::Error;
      r.only_errors = r.only_errors && !judged;
      ++(judged ? m.failed_candidates : m.not_judged_candidates);
      ErrorShare& e = (judged ? errors : not_judged)[cls];
      e.error_class = cls;
      ++e.count;
    }

    const std::string model = or_none(job.model);
    ModelMetrics& mm = models[model];
    mm.model = model;
    count(mm.candidates, job.passed());
    mm.fix_rounds += static_cast<uint64_t>(std::max(0, job.round));
    ModelTaskTally& mt = model_tasks[model][job.task_id];
    mt.solved = mt.solved || job.passed();
    mt.first_pass = mt.first_pass || (job.passed() && job.round == 0);

    if (!job.model.empty()) {
      ++with_model;
      SelectionRow& s = selection[job.model];
      s.model = job.model;
      ++s.chosen;
      count(s.passed, job.passed());
    }

    count(m.candidates, job.passed());
    m.fix_rounds += static_cast<uint64_t>(std::max(0, job.round));
    m.compile_known = m.compile_known || job.compile_evidence;
    max_round = std::max(max_round, job.round);
    m.eval_seconds += job.eval_seconds;
    m.gen_seconds += job.gen_seconds;
    m.tokens_in += job.tokens_in;
    m.tokens_out += job.tokens_out;
    m.cost += job.cost;
    m.attempts += static_cast<uint64_t>(job.attempts);
    m.cache_hits += static_cast<uint64_t>(job.cached_attempts);
  }

  // Tasks: solved, first pass, compile, fast_p, geometric mean.
  m.tasks = tasks.size();
  double log_sum = 0;
  for (TaskTally& t : tasks) {
    if (t.result.solved) t.result.failures.clear();
    if (t.result.solved) t.result.only_errors = false;
    count(m.solved, t.result.solved);
    count(m.compiled, t.compiled);
    if (t.result.solved && t.first_pass) ++m.first_pass;
    if (t.result.solved && !t.first_pass) ++m.solved_by_fix;
    if (t.result.best_speedup && *t.result.best_speedup > 0) {
      log_sum += std::log(*t.result.best_speedup);
      ++m.speedup_tasks;
    }
  }
  if (m.speedup_tasks > 0) m.geomean_speedup = std::exp(log_sum / static_cast<double>(m.speedup_tasks));
  if (m.solved.count > 0) m.cost_per_pass = m.cost / static_cast<double>(m.solved.count);

  // pass@k for every k that every task has candidates for.
  if (!tasks.empty()) {
    uint64_t n_min = tasks.front().result.candidates.total;
    for (const TaskTally& t : tasks) n_min = std::min(n_min, t.result.candidates.total);
    for (int k = 1; k <= static_cast<int>(n_min); ++k) {
      double sum = 0;
      for (const TaskTally& t : tasks) {
        sum += pass_at_k(static_cast<int>(t.result.candidates.total), static_cast<int>(t.result.candidates.count), k);
      }
      m.pass_at_k.push_back({k, sum / static_cast<double>(tasks.size())});
    }
  }

  // Groups.
  m.by_complexity = by_group(tasks, &TaskResult::complexity);
  m.by_category = by_group(tasks, &TaskResult::category);
  m.category_rates = category_rates(data);
  for (const GroupMetrics& g : m.by_complexity) m.complexity_classes.push_back(g.name);

  // Models, best first.
  std::map<std::string, const TaskTally*> task_by_id;
  for (const TaskTally& t : tasks) task_by_id[t.result.task_id] = &t;
  for (auto& [name, mm] : models) {
    for (const auto& [task_id, mt] : model_tasks[name]) {
      count(mm.solved, mt.solved);
      if (mt.solved && mt.first_pass) ++mm.first_pass;
      if (mt.solved && !mt.first_pass) ++mm.solved_by_fix;
      count(mm.by_complexity[or_none(task_by_id[task_id]->result.complexity)], mt.solved);
    }
    m.models.push_back(std::move(mm));
  }
  std::stable_sort(m.models.begin(), m.models.end(), [](const ModelMetrics& a, const ModelMetrics& b) {
    return a.solved.rate() > b.solved.rate();
  });

  // Error classes, most frequent first: of the failed candidates, and of those not judged.
  auto shares = [](const std::map<std::string, ErrorShare>& by_class, uint64_t total) {
    std::vector<ErrorShare> list;
    for (const auto& [cls, e] : by_class) {
      list.push_back(e);
      list.back().share = static_cast<double>(e.count) / static_cast<double>(total);
    }
    std::stable_sort(list.begin(), list.end(), [](const ErrorShare& a, const ErrorShare& b) { return a.count > b.count; });
    return list;
  };
  m.errors = shares(errors, m.failed_candidates);
  m.not_judged = shares(not_judged, m.not_judged_candidates);

  // Rounds.
  if (!data.jobs.empty()) {
    for (int r = 0; r <= max_round; ++r) {
      RoundMetrics rm;
      rm.round = r;
      double speedup_sum = 0;
      uint64_t speedups = 0;
      for (const JobOutcome& job : data.jobs) {
        if (job.round >= r) ++rm.reached;
        count(rm.passed, job.passed_by_round(r));
        if (m.compile_known) count(rm.compiled, job.compiled_by_round(r));
        if (job.passed_by_round(r) && job.speedup) {
          speedup_sum += *job.speedup;
          ++speedups;
        }
      }
      rm.mean_speedup = mean(speedup_sum, speedups);
      m.rounds.push_back(rm);
    }
  }

  // Selection, most chosen first.
  for (auto& [model, s] : selection) {
    s.share = static_cast<double>(s.chosen) / static_cast<double>(with_model);
    m.selection.push_back(s);
  }
  std::stable_sort(m.selection.begin(), m.selection.end(),
                   [](const SelectionRow& a, const SelectionRow& b) { return a.chosen > b.chosen; });

  for (TaskTally& t : tasks) m.per_task.push_back(std::move(t.result));
  for (double p : kFastPThresholds) m.fast_p.push_back({p, fast_p(m.per_task, p)});
  m.environments = environments_of(data.jobs);
  return m;
}

}  // namespace kforge
