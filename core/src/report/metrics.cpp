#include "report/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
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

bool fast_at(const TaskResult& task, double p) { return task.solved && (p == 0 || (task.best_speedup && *task.best_speedup > p)); }

Share fast_p_of(const Metrics& m, double p) {
  for (const FastP& f : m.fast_p) {
    if (f.p == p) return f.tasks;
  }
  return {};
}

TaskResult task_result(const TaskInfo& task, const std::vector<JobOutcome>& jobs) {
  TaskResult r;
  r.task_id = task.id;
  r.category = task.category;
  r.complexity = task.complexity;
  r.only_errors = true;
  for (const JobOutcome& job : jobs) {
    count(r.candidates, job.passed());
    r.seconds += job.seconds;
    if (job.passed()) {
      r.solved = true;
      // Best-of-k: the fastest correct candidate; the first correct one when none was timed.
      const bool faster = job.speedup && (!r.best_speedup || *job.speedup > *r.best_speedup);
      if (!r.best_sample || faster) {
        r.best_sample = job.sample;
        r.best_speedup = job.speedup;
      }
    } else {
      r.failures.push_back({job.sample, job.round, job.error_class.empty() ? "(unclassified)" : job.error_class, job.message});
      r.only_errors = r.only_errors && job.status == VerdictStatus::Error;
    }
  }
  if (r.solved) {
    r.failures.clear();
    r.only_errors = false;
  }
  return r;
}

namespace {

// Which of one model's candidates solved a task, and how.
struct ModelTaskTally {
  bool solved = false;
  bool first_pass = false;
};

// Tasks of one complexity class or category, as they come.
struct GroupTally {
  GroupMetrics row;
  double speedup_sum = 0;
  uint64_t speedups = 0;
};

// The candidates' state after one fix round, summed over the candidates seen so far.
struct RoundTally {
  uint64_t reached = 0;
  Share compiled;
  Share passed;
  double speedup_sum = 0;
  uint64_t speedups = 0;

  void add(const JobOutcome& job, int r) {
    if (job.round >= r) ++reached;
    count(passed, job.passed_by_round(r));
    count(compiled, job.compiled_by_round(r));
    if (job.passed_by_round(r) && job.speedup) {
      speedup_sum += *job.speedup;
      ++speedups;
    }
  }
};

void add_to_group(std::map<std::string, GroupTally>& groups, const std::string& name, const TaskResult& task,
                  bool compiled) {
  GroupTally& g = groups[name];
  g.row.name = name;
  count(g.row.solved, task.solved);
  count(g.row.compiled, compiled);
  if (task.best_speedup) {
    g.speedup_sum += *task.best_speedup;
    ++g.speedups;
  }
}

std::vector<GroupMetrics> group_rows(std::map<std::string, GroupTally>& groups) {
  std::vector<GroupMetrics> rows;
  for (auto& [name, g] : groups) {
    g.row.mean_speedup = mean(g.speedup_sum, g.speedups);
    rows.push_back(std::move(g.row));
  }
  return rows;
}

}  // namespace

struct MetricsFold::State {
  Metrics m;
  std::map<std::string, ModelMetrics> models;
  std::map<std::string, ErrorShare> errors;
  std::map<std::string, ErrorShare> not_judged;  // errors: no verdict on the candidate
  std::map<std::string, SelectionRow> selection;
  uint64_t with_model = 0;
  std::map<std::string, GroupTally> by_complexity;
  std::map<std::string, GroupTally> by_category;
  // Round r of every candidate seen so far; `settled`: the candidates seen so far as they
  // stand after every later round (a candidate that ended keeps its final state), what a
  // round first reached by a later candidate starts from.
  std::vector<RoundTally> rounds;
  RoundTally settled;
  // pass@k summed over the tasks so far, for k = 1..the fewest candidates a task had.
  std::vector<double> pass_at_k_sums;
  std::vector<Share> fast_p = std::vector<Share>(std::size(kFastPThresholds));
  double log_speedup_sum = 0;
  EnvironmentTally environments;
};

MetricsFold::MetricsFold(std::string label) : state_(std::make_unique<State>()) { state_->m.label = std::move(label); }

MetricsFold::~MetricsFold() = default;

void MetricsFold::count_infra_retries(uint64_t retries, uint64_t verdicts) {
  state_->m.infra_retries = retries;
  state_->m.infra_retried_verdicts = verdicts;
}

TaskResult MetricsFold::add(const TaskInfo& task, const std::vector<JobOutcome>& jobs) {
  State& st = *state_;
  Metrics& m = st.m;
  TaskResult r = task_result(task, jobs);
  bool compiled = false;
  bool first_pass = false;
  std::map<std::string, ModelTaskTally> model_task;  // this task, per model
  for (const JobOutcome& job : jobs) {
    compiled = compiled || job.compiled();
    first_pass = first_pass || (job.passed() && job.round == 0);
    if (!job.passed()) {
      const std::string cls = job.error_class.empty() ? "(unclassified)" : job.error_class;
      const bool judged = job.status != VerdictStatus::Error;
      ++(judged ? m.failed_candidates : m.not_judged_candidates);
      ErrorShare& e = (judged ? st.errors : st.not_judged)[cls];
      e.error_class = cls;
      ++e.count;
    }

    const std::string model = or_none(job.model);
    ModelMetrics& mm = st.models[model];
    mm.model = model;
    count(mm.candidates, job.passed());
    mm.fix_rounds += static_cast<uint64_t>(std::max(0, job.round));
    ModelTaskTally& mt = model_task[model];
    mt.solved = mt.solved || job.passed();
    mt.first_pass = mt.first_pass || (job.passed() && job.round == 0);

    if (!job.model.empty()) {
      ++st.with_model;
      SelectionRow& s = st.selection[job.model];
      s.model = job.model;
      ++s.chosen;
      count(s.passed, job.passed());
    }

    // A round this candidate reaches first starts from the earlier candidates' final states.
    while (st.rounds.size() <= static_cast<size_t>(std::max(0, job.round))) {
      RoundTally fresh = st.settled;
      fresh.reached = 0;
      st.rounds.push_back(fresh);
    }
    for (size_t r = 0; r < st.rounds.size(); ++r) st.rounds[r].add(job, static_cast<int>(r));
    st.settled.add(job, std::numeric_limits<int>::max());

    count(m.candidates, job.passed());
    m.fix_rounds += static_cast<uint64_t>(std::max(0, job.round));
    m.compile_known = m.compile_known || job.compile_evidence;
    m.eval_seconds += job.eval_seconds;
    m.gen_seconds += job.gen_seconds;
    m.tokens_in += job.tokens_in;
    m.tokens_out += job.tokens_out;
    m.cost += job.cost;
    m.attempts += static_cast<uint64_t>(job.attempts);
    m.cache_hits += static_cast<uint64_t>(job.cached_attempts);
    st.environments.add(job);
  }

  for (const auto& [model, mt] : model_task) {
    ModelMetrics& mm = st.models[model];
    count(mm.solved, mt.solved);
    if (mt.solved && mt.first_pass) ++mm.first_pass;
    if (mt.solved && !mt.first_pass) ++mm.solved_by_fix;
    count(mm.by_complexity[or_none(task.complexity)], mt.solved);
  }

  ++m.tasks;
  count(m.solved, r.solved);
  count(m.compiled, compiled);
  if (r.solved && first_pass) ++m.first_pass;
  if (r.solved && !first_pass) ++m.solved_by_fix;
  if (!r.solved && r.only_errors) ++m.error_tasks;
  m.seconds += r.seconds;
  if (r.best_speedup && *r.best_speedup > 0) {
    st.log_speedup_sum += std::log(*r.best_speedup);
    ++m.speedup_tasks;
  }
  if (r.best_speedup) {
    if (m.best_speedup_bins.empty()) m.best_speedup_bins.resize(std::size(kSpeedupBinEdges));
    for (size_t b = 0; b < std::size(kSpeedupBinEdges); ++b) {
      if (*r.best_speedup < kSpeedupBinEdges[b]) {
        ++m.best_speedup_bins[b];
        break;
      }
    }
  }
  // pass@k for every k that every task has candidates for: sums for k above a task's
  // number of candidates are dropped, never to be reported.
  const uint64_t n = r.candidates.total;
  if (m.tasks == 1 || n < st.pass_at_k_sums.size()) st.pass_at_k_sums.resize(n, 0.0);
  for (size_t k = 1; k <= st.pass_at_k_sums.size(); ++k) {
    st.pass_at_k_sums[k - 1] +=
        pass_at_k(static_cast<int>(n), static_cast<int>(r.candidates.count), static_cast<int>(k));
  }
  add_to_group(st.by_complexity, or_none(r.complexity), r, compiled);
  add_to_group(st.by_category, or_none(r.category), r, compiled);
  for (size_t i = 0; i < st.fast_p.size(); ++i) count(st.fast_p[i], fast_at(r, kFastPThresholds[i]));
  return r;
}

Metrics MetricsFold::finish() {
  State& st = *state_;
  Metrics m = std::move(st.m);
  if (m.speedup_tasks > 0) m.geomean_speedup = std::exp(st.log_speedup_sum / static_cast<double>(m.speedup_tasks));
  if (m.solved.count > 0) m.cost_per_pass = m.cost / static_cast<double>(m.solved.count);
  for (size_t k = 1; k <= st.pass_at_k_sums.size(); ++k) {
    m.pass_at_k.push_back({static_cast<int>(k), st.pass_at_k_sums[k - 1] / static_cast<double>(m.tasks)});
  }

  m.by_complexity = group_rows(st.by_complexity);
  m.by_category = group_rows(st.by_category);
  for (const GroupMetrics& g : m.by_complexity) m.complexity_classes.push_back(g.name);

  // Models, best first.
  for (auto& [name, mm] : st.models) m.models.push_back(std::move(mm));
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
  m.errors = shares(st.errors, m.failed_candidates);
  m.not_judged = shares(st.not_judged, m.not_judged_candidates);

  // Rounds; compile rates only where some verdict could tell.
  for (size_t r = 0; r < st.rounds.size(); ++r) {
    RoundTally& t = st.rounds[r];
    m.rounds.push_back({static_cast<int>(r), t.reached, m.compile_known ? t.compiled : Share{}, t.passed,
                        mean(t.speedup_sum, t.speedups)});
  }

  // Selection, most chosen first.
  for (auto& [model, s] : st.selection) {
    s.share = static_cast<double>(s.chosen) / static_cast<double>(st.with_model);
    m.selection.push_back(s);
  }
  std::stable_sort(m.selection.begin(), m.selection.end(),
                   [](const SelectionRow& a, const SelectionRow& b) { return a.chosen > b.chosen; });

  for (size_t i = 0; i < st.fast_p.size(); ++i) m.fast_p.push_back({kFastPThresholds[i], st.fast_p[i]});
  m.environments = st.environments.uses();
  return m;
}

void for_each_task(const Dataset& data,
                   const std::function<void(const TaskInfo& task, const std::vector<JobOutcome>& jobs)>& visit) {
  std::vector<std::string> order;
  std::unordered_map<std::string, std::vector<JobOutcome>> by_task;
  for (const JobOutcome& job : data.jobs) {
    auto [it, fresh] = by_task.try_emplace(job.task_id);
    if (fresh) order.push_back(job.task_id);
    it->second.push_back(job);
  }
  for (const std::string& id : order) {
    const auto known = data.tasks.find(id);
    visit(known == data.tasks.end() ? TaskInfo{id, "", "", "", "", 0} : known->second, by_task[id]);
  }
}

Metrics compute_metrics(const Dataset& data) {
  MetricsFold fold(data.label);
  for_each_task(data, [&](const TaskInfo& task, const std::vector<JobOutcome>& jobs) { fold.add(task, jobs); });
  fold.count_infra_retries(data.infra_retries, data.infra_retried_verdicts);
  return fold.finish();
}

}  // namespace kforge
