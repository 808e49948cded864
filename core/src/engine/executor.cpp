#include "engine/executor.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <tbb/flow_graph.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "engine/host.hpp"
#include "util/sha256.hpp"

namespace kforge {
namespace {

namespace flow = tbb::flow;

// Routing needs a multifunction_node, whose output ports are a compile-time tuple: each
// router gets kRouterPorts ports and uses one per distinct target of its stage.
constexpr size_t kRouterPorts = 8;

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

constexpr int kEnd = -1;

// Where one verdict sends a job: a router port, and for a bounded edge its bookkeeping.
struct RouteRule {
  size_t port = 0;
  int edge = -1;  // index into Job::edge_uses, -1 when unbounded
  int max_rounds = 0;
  size_t exhausted_port = 0;
};

// Threads of one waiting stage: `concurrency` of them, so that up to that many jobs wait
// inside the stage at once without holding any TBB worker.
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
        item = std::move(queue_.front());
        queue_.pop_front();
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

struct StageRuntime {
  const StageSpec* spec = nullptr;
  const kf_stage_kind* kind = nullptr;
  void* instance = nullptr;
  bool waits = false;
  bool cacheable = false;
  std::string cache_prefix;  // kind, plugin version and parameters, for cache keys
  int concurrency = 0;  // 0: unlimited
  std::vector<std::string> declared_routes;
  RouteRule on_pass, on_fail, on_error;
  std::map<std::string, RouteRule> on_named;
  std::vector<int> port_targets;  // port -> stage index, or kEnd
  size_t end_port = 0;            // where cancelled jobs leave
  std::unique_ptr<RouterNode> router;
  std::unique_ptr<WaitNode> wait_node;
  std::unique_ptr<WaitPool> pool;

  size_t port_for(int target) {
    for (size_t p = 0; p < port_targets.size(); ++p) {
      if (port_targets[p] == target) return p;
    }
    if (port_targets.size() == kRouterPorts) {
      throw RunSetupError(fmt::format(
          "stage '{}' routes to more than {} different targets; merge some routes", spec->id,
          kRouterPorts));
    }
    port_targets.push_back(target);
    return port_targets.size() - 1;
  }
};

}  // namespace

struct Executor::Impl {
  const Registry& registry;
  const PipelineSpec& pipeline;
  std::vector<StageRuntime> stages;
  int bounded_edges = 0;  // counters per job: one per stage that bounded edges lead to
  std::map<int, int> bounded_edge_of_target;
  VerdictCache* cache = nullptr;

  Impl(const Registry& r, const PipelineSpec& p) : registry(r), pipeline(p) {}

  ~Impl() {
    for (auto& s : stages) {
      s.pool.reset();  // threads joined before the instance they call goes away
      if (s.instance != nullptr) s.kind->destroy(s.instance);
    }
  }

  int stage_index(const std::string& id) const {
    if (id == kEndTarget) return kEnd;
    for (size_t i = 0; i < pipeline.stages.size(); ++i) {
      if (pipeline.stages[i].id == id) return static_cast<int>(i);
    }
    throw RunSetupError(fmt::format("route to unknown stage '{}'", id));
  }

  void setup() {
    stages.resize(pipeline.stages.size());
    for (size_t i = 0; i < pipeline.stages.size(); ++i) {
      const StageSpec& spec = pipeline.stages[i];
      StageRuntime& s = stages[i];
      const StageKind* kind = registry.stage(spec.uses);
      if (kind == nullptr) throw RunSetupError(fmt::format("unknown stage kind '{}'", spec.uses));
      s.spec = &spec;
      s.kind = kind->abi;
      s.end_port = s.port_for(kEnd);
      s.waits = (kind->abi->flags & KF_STAGE_WAITS) != 0;
      s.cacheable = (kind->abi->flags & KF_STAGE_CACHEABLE) != 0;
      s.cache_prefix = field(spec.uses) + field(kind->version);
      for (const auto& [name, value] : spec.config.values) s.cache_prefix += field(name) + field(value.json);
      s.concurrency = spec.concurrency > 0 ? spec.concurrency : (s.waits ? 16 : 0);
      for (uint32_t r = 0; r < kind->abi->route_count; ++r) {
        s.declared_routes.emplace_back(kind->abi->routes[r]);
      }
      for (const RouteSpec& route : spec.routes) {
        RouteRule rule;
        rule.port = s.port_for(stage_index(route.target));
        if (route.max_rounds > 0) {
          // Bounded edges into the same stage share one count per job: "at most 2 fix
          // rounds" holds whichever stage's failure sends the job to the fix stage.
          const int target = stage_index(route.target);
          auto [it, fresh] = bounded_edge_of_target.try_emplace(target, bounded_edges);
          if (fresh) ++bounded_edges;
          rule.edge = it->second;
          rule.max_rounds = route.max_rounds;
          rule.exhausted_port = s.port_for(stage_index(route.exhausted_target));
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
      const kf_status status = kind->abi->create(
          host_api(), reinterpret_cast<const kf_config*>(&spec.config), &s.instance, err, sizeof err);
      if (status != KF_OK) {
        throw RunSetupError(fmt::format("stage '{}' ({}) could not be created: {}", spec.id,
                                        spec.uses, err[0] ? err : "no reason given"));
      }
    }
  }

  // Length-prefixed, so that no two different field lists hash alike.
  static std::string field(const std::string& text) { return std::to_string(text.size()) + ":" + text; }

  static std::string cache_key(const StageRuntime& s, const Job& job) {
    Sha256 hash;
    hash.update(s.cache_prefix);
    for (const auto& [key, text] : job.task->strings) hash.update(field(key)).update(field(text));
    for (const auto& [key, number] : job.task->numbers) hash.update(field(key)).update(field(fmt::format("{}", number)));
    for (const char* key : {KF_KEY_CANDIDATE_CODE, KF_KEY_CANDIDATE_LANGUAGE}) {
      const std::string* text = job.find_string(key);
      hash.update(field(key)).update(text ? field(*text) : "-");
    }
    return hash.hex();
  }

  // Answers from the cache when it can; true when it did.
  bool replay_cached(const std::string& key, Job& job, Verdict& v) {
    auto hit = cache->find(key);
    if (!hit) return false;
    for (const auto& [name, text] : hit->strings) job.strings[name] = text;
    for (const auto& [name, number] : hit->numbers) job.numbers[name] = number;
    const Verdict& cached = hit->verdict;
    v.status = cached.status;
    v.route = cached.route;
    v.error_class = cached.error_class;
    v.message = cached.message;
    v.log_tail = cached.log_tail;
    v.metrics = cached.metrics;
    v.set = true;
    v.cached = true;
    return true;
  }

  // Runs one stage call and appends its verdict. Never throws: whatever the plugin does,
  // the job leaves with a verdict.
  void run_stage(StageRuntime& s, Job& job, RunObserver& observer) {
    Verdict v;
    v.stage = s.spec->id;
    v.kind = s.spec->uses;
    v.round = job.round;
    if (cancel_requested()) {
      job.cut_short = true;
      return;
    }
    std::string key;
    if (s.cacheable && cache != nullptr) {
      key = cache_key(s, job);
      if (replay_cached(key, job, v)) {
        observer.verdict(job, v);
        job.verdicts.push_back(std::move(v));
        return;
      }
    }
    JobCall call;
    call.job = &job;
    call.verdict = &v;
    call.routes = &s.declared_routes;
    const double start = now_seconds();
    job.deadline = s.spec->timeout_seconds > 0 ? start + s.spec->timeout_seconds : 0;
    char err[4096] = {0};
    const kf_status status = s.kind->process(s.instance, reinterpret_cast<kf_job*>(&call), err, sizeof err);
    v.seconds = now_seconds() - start;
    job.deadline = 0;
    // A stage that gave up because the run is stopping (any error or failed status once
    // the flag is up, KF_CANCELLED included: an abandoned request, a stopped build) judged
    // nothing about the candidate. The job is cut short rather than finished with that
    // error, so it is not written and --resume evaluates it again. Without the flag, such
    // a status is the plugin's error like any other: a job is never dropped silently.
    const bool gave_up = cancel_requested() &&
                         (status != KF_OK || !call.problem.empty() || v.status == VerdictStatus::Error);
    if (gave_up) {
      job.cut_short = true;
      return;
    }
    if (status != KF_OK) {
      v.status = VerdictStatus::Error;
      v.route.clear();
      v.error_class = "plugin_error";
      v.message = err[0] ? err : fmt::format("stage returned status {}", static_cast<int>(status));
    } else if (!call.problem.empty()) {
      v.status = VerdictStatus::Error;
      v.route.clear();
      v.error_class = "plugin_error";
      v.message = call.problem;
    } else if (s.spec->timeout_seconds > 0 && v.seconds > s.spec->timeout_seconds) {
      v.status = VerdictStatus::Error;
      v.route.clear();
      v.error_class = "stage_timeout";
      v.message = fmt::format("stage took {:.3f} s, over its timeout of {:.3f} s", v.seconds,
                              s.spec->timeout_seconds);
    }
    if (!key.empty() && v.status != VerdictStatus::Error) {
      // Errors are trouble of the moment (a dead server, a timeout), not facts about the code.
      CachedVerdict entry;
      entry.verdict = v;
      for (const auto& name : call.written_strings) entry.strings.emplace_back(name, job.strings[name]);
      for (const auto& name : call.written_numbers) entry.numbers.emplace_back(name, job.numbers[name]);
      cache->put(key, entry);
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
    if (rule->edge < 0) return rule->port;
    int& uses = job.edge_uses[static_cast<size_t>(rule->edge)];
    if (uses >= rule->max_rounds) return rule->exhausted_port;
    ++uses;
    ++job.round;
    return rule->port;
  }
};

Executor::Executor(const Registry& registry, const PipelineSpec& pipeline)
    : impl_(std::make_unique<Impl>(registry, pipeline)) {
  impl_->setup();
}

Executor::~Executor() = default;

RunSummary Executor::run(RunObserver& observer, const RunOptions& options) {
  Impl& impl = *impl_;
  impl.cache = options.cache;
  const PipelineSpec& pipeline = impl.pipeline;
  RunSummary summary;
  const double started = now_seconds();

  const SourceKind* source_kind = impl.registry.source(pipeline.source.uses);
  if (source_kind == nullptr) {
    throw RunSetupError(fmt::format("unknown task source kind '{}'", pipeline.source.uses));
  }
  void* source = nullptr;
  {
    char err[2048] = {0};
    if (source_kind->abi->create(host_api(), reinterpret_cast<const kf_config*>(&pipeline.source.config),
                                 &source, err, sizeof err) != KF_OK) {
      throw RunSetupError(fmt::format("task source '{}' could not be created: {}",
                                      pipeline.source.uses, err[0] ? err : "no reason given"));
    }
  }
  std::unique_ptr<void, std::function<void(void*)>> source_guard(
      source, [kind = source_kind->abi](void* p) { kind->destroy(p); });

  flow::graph graph;
  const int k = std::max(1, pipeline.k);
  uint64_t expected_tasks = 0;
  const bool counted = source_kind->abi->count != nullptr &&
                       source_kind->abi->count(source, &expected_tasks) == KF_OK;
  observer.run_started(counted ? expected_tasks * static_cast<uint64_t>(k) : 0);
  const size_t in_flight = static_cast<size_t>(
      options.max_in_flight > 0 ? options.max_in_flight : std::max(1, pipeline.max_in_flight));

  // Intake: one task at a time from the source, k jobs per task.
  std::shared_ptr<const Task> task;
  int next_sample = k;
  uint64_t next_sequence = 0;
  std::map<uint64_t, JobPtr> waiting_for_order;  // the sink's reorder buffer, by sequence

  flow::input_node<JobPtr> intake(graph, [&](tbb::flow_control& control) -> JobPtr {
    for (;;) {
      if (cancel_requested()) {
        summary.cancelled = true;
        control.stop();
        return nullptr;
      }
      if (next_sample == k) {
        auto fresh = std::make_shared<Task>();
        fresh->index = summary.tasks;
        int has_task = 0;
        char err[2048] = {0};
        if (source_kind->abi->next(source, reinterpret_cast<kf_task*>(fresh.get()), &has_task, err,
                                   sizeof err) != KF_OK) {
          summary.source_error = err[0] ? err : "the task source failed without a message";
          spdlog::error("task source '{}': {}", pipeline.source.uses, summary.source_error);
          control.stop();
          return nullptr;
        }
        if (has_task == 0) {
          control.stop();
          return nullptr;
        }
        ++summary.tasks;
        task = std::move(fresh);
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
      job->sequence = next_sequence++;
      return job;
    }
  });

  flow::limiter_node<JobPtr> limiter(graph, in_flight);

  // The sink: results leave in intake order, whatever order jobs finish in. A job stays
  // counted by the limiter until it is written, which bounds the reorder buffer too.
  uint64_t next_to_write = 0;
  flow::function_node<JobPtr, flow::continue_msg> sink(
      graph, flow::serial, [&](const JobPtr& job) -> flow::continue_msg {
        waiting_for_order.emplace(job->sequence, job);
        for (auto it = waiting_for_order.begin();
             it != waiting_for_order.end() && it->first == next_to_write;
             it = waiting_for_order.erase(it), ++next_to_write) {
          const Job& done = *it->second;
          if (done.cut_short) {
            ++summary.unfinished;
          } else {
            ++summary.jobs;
            switch (done.final_status()) {
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
            observer.job_finished(done);
          }
          limiter.decrementer().try_put(flow::continue_msg());
        }
        return flow::continue_msg();
      });

  // Stage nodes: each stage's entry receiver is its router (CPU stages: run + route in one
  // node) or its async node (waiting stages: run on the pool, then route).
  for (auto& s : impl.stages) {
    StageRuntime* stage = &s;
    const size_t concurrency = s.concurrency > 0 ? static_cast<size_t>(s.concurrency) : static_cast<size_t>(flow::unlimited);
    if (s.waits) {
      s.pool = std::make_unique<WaitPool>(s.concurrency, [&impl, stage, &observer](const JobPtr& job) {
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
    if (s.waits) return *s.wait_node;
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
  summary.cancelled = summary.cancelled || cancel_requested();
  summary.seconds = now_seconds() - started;
  return summary;
}

}  // namespace kforge
