#include "engine/executor.hpp"

#include <kforge/sha256.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <tbb/flow_graph.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>

#include "engine/host.hpp"
#include "engine/registry.hpp"

namespace kforge {
namespace {

namespace flow = tbb::flow;

// Routing needs a multifunction_node, whose output ports are a compile-time tuple: each
// router gets kRouterPorts ports and uses one per distinct target of its stage.
constexpr size_t kRouterPorts = kMaxRouteTargets;

template <size_t... I>
auto repeat_job_ptr(std::index_sequence<I...>) -> std::tuple<decltype((void)I, JobPtr{})...>;
using RouterOutputs = decltype(repeat_job_ptr(std::make_index_sequence<kRouterPorts>{}));
using RouterNode = flow::multifunction_node<JobPtr, RouterOutputs>;
using RouterPorts = RouterNode::output_ports_type;
using WaitNode = flow::async_node<JobPtr, JobPtr>;
using Gateway = WaitNode::gateway_type;

template <size_t... I>
void put_to_port(RouterPorts& ports, size_t port, const JobPtr& job, std::index_sequence<I...>) {
  ((port == I ? static_cast<void>(std::get<I>(ports).try_put(job)) : static_cast<void>(0)), ...);
}

template <size_t... I>
void connect_port(RouterNode& router, size_t port, flow::receiver<JobPtr>& to,
                  std::index_sequence<I...>) {
  ((port == I ? flow::make_edge(flow::output_port<I>(router), to) : void()), ...);
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Where one verdict sends a job: a router port, and for a bounded edge its bookkeeping.
struct RouteRule {
  size_t port = 0;
  int edge = -1;  // index into Job::edge_uses, -1 when unbounded
  int max_rounds = 0;
  size_t exhausted_port = 0;
  // The target (or, once the rounds are used up, the exhausted target) is a fix stage,
  // which an error verdict never enters (a named route may lead there with any status).
  bool into_fix = false;
  bool exhausted_into_fix = false;
};

// Threads of one waiting stage: `concurrency` of them, so that up to that many jobs wait
// inside the stage at once without holding any TBB worker. Jobs queue for a thread by fix
// round, the furthest along first (in arrival order within a round): a job back from a
// fix then reaches its next verdict, and its next LLM call, while the first round's jobs
// still keep the evaluation busy, instead of after them, when nothing is left to overlap
// the call with (bench/overlap.py).
class WaitPool {
 public:
  using Work = std::function<void(const JobPtr&)>;

  WaitPool(int threads, Work work) : work_(std::move(work)) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~WaitPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }

  void submit(JobPtr job, Gateway& gateway) {
    gateway.reserve_wait();  // keeps wait_for_all() waiting until the job comes back
    {
      std::lock_guard lock(mutex_);
      queue_.emplace_back(std::move(job), &gateway);
    }
    ready_.notify_one();
  }

 private:
  void loop() {
    for (;;) {
      std::pair<JobPtr, Gateway*> item;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        const auto next = std::max_element(queue_.begin(), queue_.end(), [](const auto& a, const auto& b) {
          return a.first->round < b.first->round;  // the first of the highest round
        });
        item = std::move(*next);
        queue_.erase(next);
      }
      work_(item.first);
      item.second->try_put(item.first);
      item.second->release_wait();
    }
  }

  Work work_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<JobPtr, Gateway*>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// One call of a stage that has a timeout, made on a thread of its own and on a copy of
// the job, so that the job can leave the stage at its deadline whatever the plugin does:
// a CPU-bound call that never looks at job_seconds_left() cannot be stopped, only left
// behind. An abandoned call runs on until the plugin returns, on its copy, and what it
// wrote is dropped; its token is requested, so a plugin that polls job_cancelled() stops.
struct GuardedCall {
  Job job;
  Verdict verdict;
  JobCall call;
  CancelToken cancel;  // the call's own: requested when the run's is (forwarded) or when abandoned
  kf_status status = KF_OK;
  char err[4096] = {0};
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
};

// How long past its timeout a stage call may take to answer (its own timeout verdict, a
// harness that kills a child at the limit) before the job leaves without it: within
// max(2 s, 5%) of the timeout in all, as docs/pipelines.md promises.
double timeout_grace(double timeout) { return std::max(1.0, 0.025 * timeout); }

std::chrono::steady_clock::time_point steady_time(double seconds) {
  using namespace std::chrono;
  const double clamped = std::min(seconds, now_seconds() + 1e9);  // within the clock's range
  return steady_clock::time_point(duration_cast<steady_clock::duration>(duration<double>(clamped)));
}

struct StageRuntime {
  const StagePlan* plan = nullptr;
  const StageKind* kind = nullptr;
  void* instance = nullptr;
  std::string cache_prefix;  // kind, plugin version and parameters, for cache keys
  RouteRule on_pass, on_fail, on_error;
  std::map<std::string, RouteRule> on_named;
  std::vector<int> port_targets;  // port -> stage index, or kEnd
  size_t end_port = 0;            // where cancelled jobs leave
  std::unique_ptr<RouterNode> router;
  std::unique_ptr<WaitNode> wait_node;
  std::unique_ptr<WaitPool> pool;
  // Calls of this stage still running on their own threads (GuardedCall), abandoned ones
  // included: the instance they call must outlive them.
  std::shared_ptr<std::atomic<int>> calls_running = std::make_shared<std::atomic<int>>(0);

  // The loader keeps every stage within kMaxRouteTargets distinct targets.
  size_t port_for(int target) {
    auto it = std::find(port_targets.begin(), port_targets.end(), target);
    if (it != port_targets.end()) return static_cast<size_t>(it - port_targets.begin());
    port_targets.push_back(target);
    return port_targets.size() - 1;
  }
  // 0: unlimited for CPU stages; a waiting stage has that many threads, 16 unless set.
  int concurrency() const { return plan->concurrency > 0 ? plan->concurrency : (kind->waits() ? 16 : 0); }
};

// Length-prefixed, so that no two different field lists hash alike.
std::string field(const std::string& text) { return std::to_string(text.size()) + ":" + text; }

// What a stage's cache_key adds to the key of this job; nullopt when it declines.
std::optional<std::string> stage_material(const StageRuntime& s, const JobCall& call) {
  if (s.kind->cache_key == nullptr) return std::string();
  std::string material(256, '\0');
  for (int attempt = 0; attempt < 2; ++attempt) {
    size_t length = 0;
    const kf_job* job = reinterpret_cast<const kf_job*>(&call);
    if (s.kind->cache_key(s.instance, job, material.data(), material.size(), &length) != KF_OK) return std::nullopt;
    if (length <= material.size()) {
      material.resize(length);
      return material;
    }
    material.assign(length, '\0');
  }
  return std::nullopt;  // it grew again between two calls: not a stable key
}

}  // namespace

struct Executor::Impl {
  const Plan& plan;
  std::vector<StageRuntime> stages;
  void* source = nullptr;
  int bounded_edges = 0;  // counters per job: one per stage that bounded edges lead to
  RunOptions options;
  CancelToken never_cancelled;  // the run's token when options.cancel is not given
  // The source's first task, asked for by has_tasks() before the run: run() starts with it.
  struct FirstTask {
    std::shared_ptr<Task> task;  // null: the source had none (or failed)
    std::string error;           // the source failed
  };
  std::optional<FirstTask> first_task;

  explicit Impl(const Plan& p) : plan(p) {}

  // The source's next task (null when it has no more), or its error.
  FirstTask next_task(uint64_t index) {
    FirstTask next;
    auto fresh = std::make_shared<Task>();
    fresh->index = index;
    int has_task = 0;
    char err[2048] = {0};
    const CurrentRun current(cancel());
    if (plan.source.kind->next(source, reinterpret_cast<kf_task*>(fresh.get()), &has_task, err, sizeof err) !=
        KF_OK) {
      next.error = err[0] ? err : "the task source failed without a message";
    } else if (has_task != 0) {
      next.task = std::move(fresh);
    }
    return next;
  }

  ~Impl() {
    for (auto& s : stages) {
      s.pool.reset();  // threads joined before the instance they call goes away
      if (s.instance == nullptr) continue;
      // Abandoned calls get a moment to notice their cancellation; an instance one is
      // still inside is left as it is (its plugin is never unloaded either).
      for (int waited = 0; *s.calls_running > 0 && waited < 10; ++waited) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (*s.calls_running > 0) {
        spdlog::warn("stage '{}' ({}): {} call{} that overran the stage timeout still running; its instance is "
                     "left undestroyed",
                     s.plan->id, s.kind->name, s.calls_running->load(), *s.calls_running == 1 ? " is" : "s are");
        continue;
      }
      s.kind->destroy(s.instance);
    }
    if (source != nullptr) plan.source.kind->destroy(source);
  }

  // Calls the stage on its own thread (GuardedCall) and waits until it returns or
  // `give_up_at` passes; the run's cancellation is handed on meanwhile. nullptr when the
  // call was abandoned; else the finished call, whose job and verdict are the caller's.
  std::shared_ptr<GuardedCall> call_guarded(StageRuntime& s, Job& job, const Verdict& v, const JobCall& call,
                                            double give_up_at) {
    auto guarded = std::make_shared<GuardedCall>();
    guarded->job = job;
    guarded->verdict = v;
    guarded->call = call;
    guarded->call.job = &guarded->job;
    guarded->call.verdict = &guarded->verdict;
    guarded->call.cancel = &guarded->cancel;
    auto work = [guarded, process = s.kind->process, instance = s.instance, running = s.calls_running] {
      {
        const CurrentRun current(guarded->cancel);
        guarded->status = process(instance, reinterpret_cast<kf_job*>(&guarded->call), guarded->err,
                                  sizeof guarded->err);
      }
      {
        std::lock_guard lock(guarded->mutex);
        guarded->done = true;
      }
      guarded->finished.notify_all();
      --*running;
    };
    ++*s.calls_running;
    try {
      std::thread(work).detach();
    } catch (const std::system_error& e) {
      // No thread to be had (a process limit): the call is made here, unguarded.
      spdlog::warn("stage '{}': no thread for a guarded call ({}); calling it without its deadline guard", s.plan->id,
                   e.what());
      work();
    }
    std::unique_lock lock(guarded->mutex);
    const auto give_up = steady_time(give_up_at);
    while (!guarded->done) {
      if (cancel().requested()) guarded->cancel.request();
      const auto now = std::chrono::steady_clock::now();
      if (now >= give_up) {
        guarded->cancel.request();
        return nullptr;
      }
      guarded->finished.wait_until(lock, std::min(give_up, now + std::chrono::milliseconds(50)));
    }
    return guarded;
  }

  const CancelToken& cancel() const { return options.cancel ? *options.cancel : never_cancelled; }

  // Creates the source and every stage; collects a diagnostic per one that fails.
  void create_all() {
    std::vector<Diagnostic> problems;
    {
      char err[2048] = {0};
      if (plan.source.kind->create(host_api(), reinterpret_cast<const kf_config*>(&plan.source.config), &source, err,
                                   sizeof err) != KF_OK) {
        source = nullptr;
        problems.push_back(Diagnostic::at(plan.source.where, fmt::format("task source '{}' could not be created: {}",
                                                                  plan.source.kind->name, err[0] ? err : "no reason given")));
      }
    }
    std::map<int, int> bounded_edge_of_target;
    stages.resize(plan.stages.size());
    for (size_t i = 0; i < plan.stages.size(); ++i) {
      const StagePlan& stage = plan.stages[i];
      StageRuntime& s = stages[i];
      s.plan = &stage;
      s.kind = stage.kind;
      s.end_port = s.port_for(kEnd);
      s.cache_prefix = field(stage.kind->name) + field(stage.kind->version);
      for (const auto& [name, value] : stage.config.values) s.cache_prefix += field(name) + field(value.json);
      auto is_fix = [&](int target) {
        return target != kEnd && plan.stages.at(static_cast<size_t>(target)).kind->role == KF_ROLE_FIX;
      };
      for (const RoutePlan& route : stage.routes) {
        RouteRule rule;
        rule.port = s.port_for(route.target);
        rule.into_fix = is_fix(route.target);
        rule.exhausted_into_fix = route.max_rounds > 0 && is_fix(route.exhausted_target);
        if (route.max_rounds > 0) {
          // Bounded edges into the same stage share one count per job: "at most 2 fix
          // rounds" holds whichever stage's failure sends the job to the fix stage.
          auto [it, fresh] = bounded_edge_of_target.try_emplace(route.target, bounded_edges);
          if (fresh) ++bounded_edges;
          rule.edge = it->second;
          rule.max_rounds = route.max_rounds;
          rule.exhausted_port = s.port_for(route.exhausted_target);
        }
        if (route.on == "pass") {
          s.on_pass = rule;
        } else if (route.on == "fail") {
          s.on_fail = rule;
        } else if (route.on == "error") {
          s.on_error = rule;
        } else {
          s.on_named[route.on] = rule;
        }
      }
      char err[2048] = {0};
      if (stage.kind->create(host_api(), reinterpret_cast<const kf_config*>(&stage.config), &s.instance, err,
                             sizeof err) != KF_OK) {
        s.instance = nullptr;
        problems.push_back(Diagnostic::at(stage.where, fmt::format("stage '{}' ({}) could not be created: {}", stage.id,
                                                            stage.kind->name, err[0] ? err : "no reason given")));
      }
    }
    if (!problems.empty()) throw ConfigError(std::move(problems));
  }

  // Asks every instance that offers a preflight; collects a diagnostic per one that fails.
  void preflight_all() {
    std::vector<Diagnostic> problems;
    auto ask = [&problems](auto check, void* instance, const SourceLocation& where, const std::string& what) {
      if (check == nullptr) return;
      char err[2048] = {0};
      if (check(instance, err, sizeof err) != KF_OK) {
        problems.push_back(Diagnostic::at(
            where, fmt::format("{} cannot run here: {}", what, err[0] ? err : "its preflight check failed without a reason")));
      }
    };
    ask(plan.source.kind->preflight, source, plan.source.where, fmt::format("task source '{}'", plan.source.kind->name));
    for (const StageRuntime& s : stages) {
      ask(s.kind->preflight, s.instance, s.plan->where, fmt::format("stage '{}' ({})", s.plan->id, s.kind->name));
    }
    if (!problems.empty()) throw ConfigError(std::move(problems));
  }

  // The run starts: every instance that offers it begins what its first job would wait for.
  void warm_up_all() {
    for (const StageRuntime& s : stages) {
      if (s.kind->warm_up == nullptr) continue;
      char err[2048] = {0};
      if (s.kind->warm_up(s.instance, err, sizeof err) != KF_OK) {
        spdlog::warn("stage '{}' ({}) could not start ahead of its first job: {}", s.plan->id, s.kind->name,
                     err[0] ? err : "no reason given");
      }
    }
  }

  std::optional<std::string> cache_key(const StageRuntime& s, const JobCall& call) const {
    auto material = stage_material(s, call);
    if (!material) return std::nullopt;
    const Job& job = *call.job;
    Sha256 hash;
    hash.update(s.cache_prefix);
    for (const auto& [key, text] : job.task->strings) hash.update(field(key)).update(field(text));
    for (const auto& [key, number] : job.task->numbers) hash.update(field(key)).update(field(fmt::format("{}", number)));
    for (const char* key : {KF_KEY_CANDIDATE_CODE, KF_KEY_CANDIDATE_LANGUAGE}) {
      const std::string* text = job.find_string(key);
      hash.update(field(key)).update(text ? field(*text) : "-");
    }
    hash.update(field(*material));
    return hash.hex();
  }

  // Answers from the cache when it can; true when it did. A verdict with measurements is
  // replayed only when the run asks for it: otherwise the stage measures again.
  bool replay_cached(const std::string& key, Job& job, Verdict& v) {
    auto hit = options.cache->find(key);
    if (!hit || (hit->verdict.measured && !options.replay_measurements)) return false;
    for (const auto& [name, text] : hit->strings) job.strings[name] = text;
    for (const auto& [name, number] : hit->numbers) job.numbers[name] = number;
    const Verdict& cached = hit->verdict;
    v.status = cached.status;
    v.route = cached.route;
    v.error_class = cached.error_class;
    v.message = cached.message;
    v.log_tail = cached.log_tail;
    v.metrics = cached.metrics;
    v.measured = cached.measured;
    v.cached = true;
    return true;
  }

  // Runs one stage call and appends its verdict. Never throws: whatever the plugin does,
  // the job leaves with a verdict.
  void run_stage(StageRuntime& s, Job& job, RunObserver& observer) {
    Verdict v;
    v.stage = s.plan->id;
    v.kind = s.kind->name;
    v.role = s.kind->role;
    v.round = job.round;
    if (cancel().requested()) {
      job.cut_short = true;
      return;
    }
    JobCall call;
    call.job = &job;
    call.verdict = &v;
    call.routes = &s.kind->routes;
    call.cancel = &cancel();
    call.run_seed = options.run_seed;
    const CurrentRun current(cancel());
    std::optional<std::string> key;
    if (s.kind->cacheable() && options.cache != nullptr) {
      key = cache_key(s, call);
      if (key && replay_cached(*key, job, v)) {
        observer.verdict(job, v);
        job.verdicts.push_back(std::move(v));
        return;
      }
    }
    const double start = now_seconds();
    const double timeout = s.plan->timeout_seconds;
    job.deadline = timeout > 0 ? start + timeout : 0;
    char err[4096] = {0};
    kf_status status = KF_OK;
    if (timeout > 0) {
      std::shared_ptr<GuardedCall> done = call_guarded(s, job, v, call, start + timeout + timeout_grace(timeout));
      if (done == nullptr) {
        job.deadline = 0;
        v.seconds = now_seconds() - start;
        if (cancel().requested()) {  // it was stopping anyway: judged nothing
          job.cut_short = true;
          return;
        }
        v.status = VerdictStatus::Error;
        v.error_class = KF_ERROR_STAGE_TIMEOUT;
        v.message = fmt::format("stage did not return within its timeout of {:.3f} s (left after {:.3f} s; the "
                                "call runs on, its result is dropped)",
                                timeout, v.seconds);
        observer.verdict(job, v);
        job.verdicts.push_back(std::move(v));
        return;
      }
      job = std::move(done->job);
      v = std::move(done->verdict);
      call = std::move(done->call);
      call.job = &job;
      call.verdict = &v;
      call.cancel = &cancel();
      status = done->status;
      std::memcpy(err, done->err, sizeof err);
    } else {
      status = s.kind->process(s.instance, reinterpret_cast<kf_job*>(&call), err, sizeof err);
    }
    v.seconds = now_seconds() - start;
    job.deadline = 0;
    // A stage that gave up because the run is stopping (any error or failed status once
    // the flag is up, KF_CANCELLED included: an abandoned request, a stopped build) judged
    // nothing about the candidate. The job is cut short rather than finished with that
    // error, so it is not written and --resume evaluates it again. Without the flag, such
    // a status is the plugin's error like any other: a job is never dropped silently.
    const bool gave_up = cancel().requested() &&
                         (status != KF_OK || !call.problem.empty() || v.status == VerdictStatus::Error);
    if (gave_up) {
      job.cut_short = true;
      return;
    }
    if (status != KF_OK) {
      v.status = VerdictStatus::Error;
      v.route.clear();
      v.error_class = KF_ERROR_PLUGIN;
      v.message = err[0] ? err : fmt::format("stage returned status {}", static_cast<int>(status));
    } else if (!call.problem.empty()) {
      v.status = VerdictStatus::Error;
      v.route.clear();
      v.error_class = KF_ERROR_PLUGIN;
      v.message = call.problem;
    } else if (timeout > 0 && v.seconds > timeout) {
      v.status = VerdictStatus::Error;
      v.route.clear();
      v.error_class = KF_ERROR_STAGE_TIMEOUT;
      v.message = fmt::format("stage took {:.3f} s, over its timeout of {:.3f} s", v.seconds, timeout);
    } else if (v.status == VerdictStatus::Fail && blames_no_candidate(v.error_class)) {
      // The class says whose fault it is (abi.h): not the candidate's, so not a finding.
      v.status = VerdictStatus::Error;
    }
    if (key && v.status != VerdictStatus::Error) {
      // Errors are trouble of the moment (a dead server, a timeout), not facts about the code.
      CachedVerdict entry;
      entry.verdict = v;
      for (const auto& name : call.written_strings) entry.strings.emplace_back(name, job.strings[name]);
      for (const auto& name : call.written_numbers) entry.numbers.emplace_back(name, job.numbers[name]);
      options.cache->put(*key, entry);
    }
    observer.verdict(job, v);
    job.verdicts.push_back(std::move(v));
  }

  size_t choose_port(StageRuntime& s, Job& job) {
    const Verdict* v = job.last();
    if (job.cut_short || v == nullptr) return s.end_port;
    const RouteRule* rule = nullptr;
    if (!v->route.empty()) {
      auto it = s.on_named.find(v->route);
      rule = it == s.on_named.end() ? nullptr : &it->second;
    }
    if (rule == nullptr) {
      switch (v->status) {
        case VerdictStatus::Pass:
          rule = &s.on_pass;
          break;
        case VerdictStatus::Fail:
          rule = &s.on_fail;
          break;
        case VerdictStatus::Error:
          rule = &s.on_error;
          break;
      }
    }
    // A fix round is for the candidate's own faults: a verdict that judged no candidate
    // ends the job whatever the route says (the loader refuses such an `error` route).
    const bool judged_nothing = v->status == VerdictStatus::Error;
    if (rule->edge < 0) return judged_nothing && rule->into_fix ? s.end_port : rule->port;
    int& uses = job.edge_uses[static_cast<size_t>(rule->edge)];
    if (uses >= rule->max_rounds) return judged_nothing && rule->exhausted_into_fix ? s.end_port : rule->exhausted_port;
    if (judged_nothing && rule->into_fix) return s.end_port;
    ++uses;
    ++job.round;
    return rule->port;
  }
};

Executor::Executor(const Plan& plan) : impl_(std::make_unique<Impl>(plan)) { impl_->create_all(); }

Executor::~Executor() = default;

void Executor::preflight() { impl_->preflight_all(); }

bool Executor::has_tasks() {
  if (!impl_->first_task) impl_->first_task = impl_->next_task(0);
  return impl_->first_task->task != nullptr || !impl_->first_task->error.empty();
}

RunSummary Executor::run(RunObserver& observer, const RunOptions& options) {
  Impl& impl = *impl_;
  impl.options = options;
  const Plan& pipeline = impl.plan;
  const SourceKind& source_kind = *pipeline.source.kind;
  void* source = impl.source;
  const CancelToken& cancel = impl.cancel();
  RunSummary summary;
  const double started = now_seconds();
  impl.warm_up_all();

  flow::graph graph;
  const int k = std::max(1, pipeline.k);
  uint64_t expected_tasks = 0;
  const bool counted = source_kind.count != nullptr && source_kind.count(source, &expected_tasks) == KF_OK;
  observer.run_started(counted ? expected_tasks * static_cast<uint64_t>(k) : 0);
  const size_t in_flight = static_cast<size_t>(
      options.max_in_flight > 0 ? options.max_in_flight : std::max(1, pipeline.max_in_flight));

  // Intake: one task at a time from the source, k jobs per task.
  std::shared_ptr<const Task> task;
  int next_sample = k;

  flow::input_node<JobPtr> intake(graph, [&](tbb::flow_control& control) -> JobPtr {
    for (;;) {
      if (cancel.requested()) {
        summary.cancelled = true;
        control.stop();
        return nullptr;
      }
      if (next_sample == k) {
        Impl::FirstTask next;
        if (impl.first_task) {
          next = std::move(*impl.first_task);
          impl.first_task.reset();
        } else {
          next = impl.next_task(summary.tasks);
        }
        if (!next.error.empty()) {
          summary.source_error = next.error;
          spdlog::error("task source '{}': {}", source_kind.name, summary.source_error);
          control.stop();
          return nullptr;
        }
        if (!next.task) {
          control.stop();
          return nullptr;
        }
        ++summary.tasks;
        task = std::move(next.task);
        next_sample = 0;
      }
      const int sample = next_sample++;
      if (options.skip && options.skip(*task, sample)) {
        ++summary.skipped;
        continue;
      }
      auto job = std::make_shared<Job>();
      job->task = task;
      job->sample = sample;
      job->index = task->index * static_cast<uint64_t>(k) + static_cast<uint64_t>(sample);
      job->edge_uses.assign(static_cast<size_t>(impl.bounded_edges), 0);
      return job;
    }
  });

  flow::limiter_node<JobPtr> limiter(graph, in_flight);

  // The sink: a job is saved the moment it finishes, whatever the jobs taken in before it
  // are doing, so a run killed with -9 loses only the jobs in flight. It stays counted by
  // the limiter until then.
  flow::function_node<JobPtr, flow::continue_msg> sink(
      graph, flow::serial, [&](const JobPtr& job) -> flow::continue_msg {
        const Job& done = *job;
        if (done.cut_short) {
          ++summary.unfinished;
        } else {
          const JobOutcome outcome = outcome_of(done);
          ++summary.jobs;
          switch (outcome.status) {
            case VerdictStatus::Pass:
              ++summary.passed;
              break;
            case VerdictStatus::Fail:
              ++summary.failed;
              break;
            case VerdictStatus::Error:
              ++summary.errors;
              break;
          }
          observer.job_finished(done, outcome);
        }
        limiter.decrementer().try_put(flow::continue_msg());
        return flow::continue_msg();
      });

  // Stage nodes: each stage's entry receiver is its router (CPU stages: run + route in one
  // node) or its async node (waiting stages: run on the pool, then route).
  for (auto& s : impl.stages) {
    StageRuntime* stage = &s;
    const size_t concurrency = s.concurrency() > 0 ? static_cast<size_t>(s.concurrency()) : static_cast<size_t>(flow::unlimited);
    if (s.kind->waits()) {
      s.pool = std::make_unique<WaitPool>(s.concurrency(), [&impl, stage, &observer](const JobPtr& job) {
        impl.run_stage(*stage, *job, observer);
      });
      s.wait_node = std::make_unique<WaitNode>(
          graph, flow::unlimited, [stage](const JobPtr& job, Gateway& gateway) {
            stage->pool->submit(job, gateway);
          });
      s.router = std::make_unique<RouterNode>(
          graph, flow::unlimited, [&impl, stage](const JobPtr& job, RouterPorts& ports) {
            put_to_port(ports, impl.choose_port(*stage, *job), job,
                        std::make_index_sequence<kRouterPorts>{});
          });
      flow::make_edge(*s.wait_node, *s.router);
    } else {
      s.router = std::make_unique<RouterNode>(
          graph, concurrency, [&impl, stage, &observer](const JobPtr& job, RouterPorts& ports) {
            impl.run_stage(*stage, *job, observer);
            put_to_port(ports, impl.choose_port(*stage, *job), job,
                        std::make_index_sequence<kRouterPorts>{});
          });
    }
  }
  auto entry_of = [&](int target) -> flow::receiver<JobPtr>& {
    if (target == kEnd) return sink;
    StageRuntime& s = impl.stages[static_cast<size_t>(target)];
    if (s.kind->waits()) return *s.wait_node;
    return *s.router;
  };
  for (auto& s : impl.stages) {
    for (size_t port = 0; port < s.port_targets.size(); ++port) {
      connect_port(*s.router, port, entry_of(s.port_targets[port]),
                   std::make_index_sequence<kRouterPorts>{});
    }
  }
  flow::make_edge(intake, limiter);
  if (impl.stages.empty()) {
    flow::make_edge(limiter, sink);
  } else {
    flow::make_edge(limiter, entry_of(0));
  }

  intake.activate();
  graph.wait_for_all();

  // The nodes belong to this run's graph: they must go before it does.
  for (auto& s : impl.stages) {
    s.pool.reset();
    s.router.reset();
    s.wait_node.reset();
  }
  summary.cancelled = summary.cancelled || cancel.requested();
  summary.seconds = now_seconds() - started;
  return summary;
}

}  // namespace kforge
