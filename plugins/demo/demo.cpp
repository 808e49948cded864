// Demo plugin: stages that exercise the runtime (routing, retries, waiting, failures)
// without any kernel machinery.
#include <kforge/sdk.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using kforge::sdk::Config;
using kforge::sdk::Job;
using kforge::sdk::Param;

bool listed(const std::vector<std::string>& ids, std::string_view id) {
  for (const auto& candidate : ids) {
    if (candidate == id) return true;
  }
  return false;
}

// A run-start check on the run's environment, as a stage that needs an API key has: the
// variable must be set when the run starts (validate does not look).
void require_variable(const std::string& variable) {
  if (variable.empty()) return;
  const char* value = std::getenv(variable.c_str());
  if (value == nullptr || *value == '\0') {
    throw std::runtime_error("environment variable " + variable + " is not set; export it before the run");
  }
}

// Tasks "task-0000" ... "task-NNNN".
class Range : public kforge::sdk::Source {
 public:
  static constexpr const char* kName = "demo.range";
  static constexpr const char* kDoc = "Emits `count` synthetic tasks named task-0000, task-0001, ...";
  static std::vector<Param> params() {
    return {{"count", KF_PARAM_INT, nullptr, true, "Number of tasks."},
            {"prefix", KF_PARAM_STRING, "task-", false, "Prefix of the task ids."},
            {"needs_env", KF_PARAM_STRING, nullptr, false,
             "An environment variable the run must have set (checked when the run starts, not by validate)."}};
  }
  explicit Range(const Config& cfg)
      : count_(cfg.integer("count")),
        prefix_(cfg.string("prefix")),
        needs_env_(cfg.has("needs_env") ? cfg.string("needs_env") : "") {
    if (count_ < 0) throw std::invalid_argument("count must be >= 0");
  }
  void preflight() const { require_variable(needs_env_); }
  bool next(kforge::sdk::Task& task) override {
    if (next_ >= count_) return false;
    std::string number = std::to_string(next_);
    if (number.size() < 4) number.insert(0, 4 - number.size(), '0');
    const std::string id = prefix_ + number;
    task.set(KF_KEY_TASK_ID, id);
    task.set(KF_KEY_TASK_NAME, id);
    task.set_number(KF_KEY_TASK_LEVEL, 1);
    ++next_;
    return true;
  }
  std::optional<uint64_t> count() const override { return static_cast<uint64_t>(count_); }

 private:
  int64_t count_;
  std::string prefix_;
  std::string needs_env_;
  int64_t next_ = 0;
};

// Passes every job; refuses to run (its preflight) when an environment variable is unset.
class NeedsEnv : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "demo.needs_env";
  static constexpr const char* kDoc =
      "Passes every job. Its run-start check refuses the run when the environment variable `variable` is not "
      "set, as a stage that needs an API key does; `kforge validate` does not check it.";
  static std::vector<Param> params() {
    return {{"variable", KF_PARAM_STRING, nullptr, true, "The environment variable the run needs."}};
  }
  explicit NeedsEnv(const Config& cfg) : variable_(cfg.string("variable")) {}
  void preflight() const { require_variable(variable_); }
  void process(Job& job) override { job.pass(); }

 private:
  std::string variable_;
};

class Noop : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "demo.noop";
  static constexpr const char* kDoc = "Passes every job and does nothing else.";
  explicit Noop(const Config&) {}
  void process(Job& job) override { job.pass(); }
};

// Fails, errors or throws for the listed tasks; passes the rest.
class Judge : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "demo.judge";
  static constexpr const char* kDoc =
      "Passes every job except those of the listed tasks: fails them, errors them, or throws.";
  static constexpr uint32_t kFlags = KF_STAGE_CACHEABLE;  // depends on the task id only
  static std::vector<Param> params() {
    return {{"fail", KF_PARAM_STRING_LIST, "[]", false, "Task ids to fail (error class fail_class)."},
            {"fail_class", KF_PARAM_STRING, "demo_fail", false, "The error class of a fail verdict."},
            {"error", KF_PARAM_STRING_LIST, "[]", false, "Task ids to give an error verdict (class error_class)."},
            {"error_class", KF_PARAM_STRING, "demo_error", false, "The error class of an error verdict."},
            {"throw", KF_PARAM_STRING_LIST, "[]", false, "Task ids on which the stage throws."},
            {"route", KF_PARAM_STRING_LIST, "[]", false, "Task ids sent on the named route 'special'."}};
  }
  static std::vector<std::string> routes() { return {"special"}; }
  explicit Judge(const Config& cfg)
      : fail_(cfg.list("fail")),
        error_(cfg.list("error")),
        throw_(cfg.list("throw")),
        route_(cfg.list("route")),
        fail_class_(cfg.string("fail_class")),
        error_class_(cfg.string("error_class")) {}
  void process(Job& job) override {
    const std::string id = job.get_or(KF_KEY_TASK_ID);
    if (listed(throw_, id)) throw std::runtime_error("demo.judge was told to throw on " + id);
    if (listed(fail_, id)) return job.fail(fail_class_, "demo.judge fails " + id);
    if (listed(error_, id)) return job.error(error_class_, "demo.judge errors on " + id);
    if (listed(route_, id)) return job.pass("special");
    job.pass();
  }

 private:
  std::vector<std::string> fail_, error_, throw_, route_;
  std::string fail_class_, error_class_;
};

// A fix stage (role fix) that mends nothing: it passes, and counts its visits per job in
// the attribute demo.fixes. What the runtime does around fix rounds, without an LLM.
class Mend : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "demo.mend";
  static constexpr kf_stage_role kRole = KF_ROLE_FIX;
  static constexpr const char* kDoc = "A fix stage that changes nothing: passes, counting visits in demo.fixes.";
  explicit Mend(const Config&) {}
  void process(Job& job) override {
    job.set_number("demo.fixes", job.number("demo.fixes").value_or(0) + 1);
    job.pass();
  }
};

// Fails the first `failures` visits of each job, then passes: a retry loop target.
class Flaky : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "demo.flaky";
  static constexpr const char* kDoc =
      "Fails each job's first `failures` visits, then passes; counts visits in the job "
      "attribute demo.visits.";
  static std::vector<Param> params() {
    return {{"failures", KF_PARAM_INT, "2", false, "Visits that fail before one passes."}};
  }
  explicit Flaky(const Config& cfg) : failures_(cfg.integer("failures")) {}
  void process(Job& job) override {
    const double visits = job.number("demo.visits").value_or(0) + 1;
    job.set_number("demo.visits", visits);
    job.metric("visit", visits);
    if (visits <= static_cast<double>(failures_)) return job.fail("demo_flaky", "not yet");
    job.pass();
  }

 private:
  int64_t failures_;
};

// Keeps a CPU busy for `seconds`: a CPU-bound stage. Metric `concurrent` as for demo.sleep.
class Busy : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "demo.busy";
  static constexpr const char* kDoc =
      "Spins on a CPU for `seconds`, then passes. Metric `concurrent`: calls in the stage when "
      "this one began.";
  static std::vector<Param> params() {
    return {Param{"seconds", KF_PARAM_DURATION, "0.001", false, "How long each call spins (1ms, 0.5s)."}.at_least(0)};
  }
  explicit Busy(const Config& cfg) : seconds_(cfg.number("seconds")) {}
  void process(Job& job) override {
    const int concurrent = ++inside_;
    job.metric("concurrent", concurrent);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds_);
    while (std::chrono::steady_clock::now() < until) {
    }
    --inside_;
    job.pass();
  }

 private:
  double seconds_;
  std::atomic<int> inside_{0};
};

// Sleeps like an HTTP call or a child process would: a waiting stage. Reports how many
// calls were inside the stage when this one started (metric `concurrent`).
class Sleep : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "demo.sleep";
  static constexpr const char* kDoc =
      "Waits `seconds` without using a CPU, then passes; an error when the stage timeout or "
      "the run's cancellation cuts the wait short. Metric `concurrent`: calls in the stage "
      "when this one began.";
  static constexpr uint32_t kFlags = KF_STAGE_WAITS;
  static std::vector<Param> params() {
    return {Param{"seconds", KF_PARAM_DURATION, "0.1", false, "How long each call waits (100ms, 2s)."}.at_least(0),
            {"only", KF_PARAM_STRING_LIST, "[]", false,
             "Task ids that wait; the others pass at once. Empty: every task waits."}};
  }
  explicit Sleep(const Config& cfg)
      : seconds_(cfg.number("seconds")), only_(cfg.has("only") ? cfg.list("only") : std::vector<std::string>{}) {}
  void process(Job& job) override {
    const int concurrent = ++inside_;
    job.metric("concurrent", concurrent);
    const double seconds = only_.empty() || listed(only_, job.get_or(KF_KEY_TASK_ID)) ? seconds_ : 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      if (job.cancelled() || job.seconds_left() <= 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    --inside_;
    if (std::chrono::steady_clock::now() < until && job.cancelled()) {
      return job.error("cancelled", "demo.sleep stopped early: the run is being cancelled");
    }
    if (job.seconds_left() <= 0) return job.error("timeout", "demo.sleep ran out of time");
    job.pass();
  }

 private:
  double seconds_;
  std::vector<std::string> only_;
  std::atomic<int> inside_{0};
};

}  // namespace

KFORGE_PLUGIN("demo", "1.0.0", Range, Noop, Judge, Mend, Flaky, Busy, Sleep, NeedsEnv)
