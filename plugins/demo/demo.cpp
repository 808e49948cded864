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

using kforge::sdk::Job;
using kforge::sdk::Param;
using kforge::sdk::Seconds;

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

struct RangeOptions {
  int64_t count = 0;
  std::string prefix;
  std::string needs_env;  // none: empty
};

// Tasks "task-0000" ... "task-NNNN".
class Range : public kforge::sdk::Source {
 public:
  using Options = RangeOptions;
  static constexpr const char* kName = "demo.range";
  static constexpr const char* kDoc = "Emits `count` synthetic tasks named task-0000, task-0001, ...";
  static std::vector<Param> params() {
    return {Param{"count", KF_PARAM_INT, nullptr, true, "Number of tasks."}.at_least(0).bind(&Options::count),
            Param{"prefix", KF_PARAM_STRING, "task-", false, "Prefix of the task ids."}.bind(&Options::prefix),
            Param{"needs_env", KF_PARAM_STRING, nullptr, false,
                  "An environment variable the run must have set (checked when the run starts, not by validate)."}
                .bind(&Options::needs_env)};
  }
  explicit Range(const Options& options) : options_(options) {}
  void preflight() const { require_variable(options_.needs_env); }
  bool next(kforge::sdk::Task& task) override {
    if (next_ >= options_.count) return false;
    std::string number = std::to_string(next_);
    if (number.size() < 4) number.insert(0, 4 - number.size(), '0');
    const std::string id = options_.prefix + number;
    task.set(KF_KEY_TASK_ID, id);
    task.set(KF_KEY_TASK_NAME, id);
    task.set_number(KF_KEY_TASK_LEVEL, 1);
    ++next_;
    return true;
  }
  std::optional<uint64_t> count() const override { return static_cast<uint64_t>(options_.count); }

 private:
  Options options_;
  int64_t next_ = 0;
};

// Passes every job; refuses to run (its preflight) when an environment variable is unset.
class NeedsEnv : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "demo.needs_env";
  static constexpr const char* kDoc =
      "Passes every job. Its run-start check refuses the run when the environment variable `variable` is not "
      "set, as a stage that needs an API key does; `kforge validate` does not check it.";
  struct Options {
    std::string variable;
  };
  static std::vector<Param> params() {
    return {Param{"variable", KF_PARAM_STRING, nullptr, true, "The environment variable the run needs."}.bind(
        &Options::variable)};
  }
  explicit NeedsEnv(const Options& options) : variable_(options.variable) {}
  void preflight() const { require_variable(variable_); }
  void process(Job& job) override { job.pass(); }

 private:
  std::string variable_;
};

class Noop : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "demo.noop";
  static constexpr const char* kDoc = "Passes every job and does nothing else.";
  void process(Job& job) override { job.pass(); }
};

// Fails, errors or throws for the listed tasks; passes the rest.
class Judge : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "demo.judge";
  static constexpr const char* kDoc =
      "Passes every job except those of the listed tasks: fails them, errors them, or throws.";
  static constexpr uint32_t kFlags = KF_STAGE_CACHEABLE;  // depends on the task id only
  struct Options {
    std::vector<std::string> fail, error, throw_on, route;
    std::string fail_class, error_class;
  };
  static std::vector<Param> params() {
    return {Param{"fail", KF_PARAM_STRING_LIST, "[]", false, "Task ids to fail (error class fail_class)."}.bind(
                &Options::fail),
            Param{"fail_class", KF_PARAM_STRING, "demo_fail", false, "The error class of a fail verdict."}.bind(
                &Options::fail_class),
            Param{"error", KF_PARAM_STRING_LIST, "[]", false, "Task ids to give an error verdict (class error_class)."}
                .bind(&Options::error),
            Param{"error_class", KF_PARAM_STRING, "demo_error", false, "The error class of an error verdict."}.bind(
                &Options::error_class),
            Param{"throw", KF_PARAM_STRING_LIST, "[]", false, "Task ids on which the stage throws."}.bind(
                &Options::throw_on),
            Param{"route", KF_PARAM_STRING_LIST, "[]", false, "Task ids sent on the named route 'special'."}.bind(
                &Options::route)};
  }
  static std::vector<std::string> routes() { return {"special"}; }
  explicit Judge(const Options& options) : options_(options) {}
  void process(Job& job) override {
    const std::string id = job.get_or(KF_KEY_TASK_ID);
    if (listed(options_.throw_on, id)) throw std::runtime_error("demo.judge was told to throw on " + id);
    if (listed(options_.fail, id)) return job.fail(options_.fail_class, "demo.judge fails " + id);
    if (listed(options_.error, id)) return job.error(options_.error_class, "demo.judge errors on " + id);
    if (listed(options_.route, id)) return job.pass("special");
    job.pass();
  }

 private:
  Options options_;
};

// A fix stage (role fix) that mends nothing: it passes, and counts its visits per job in
// the attribute demo.fixes. What the runtime does around fix rounds, without an LLM.
class Mend : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "demo.mend";
  static constexpr kf_stage_role kRole = KF_ROLE_FIX;
  static constexpr const char* kDoc = "A fix stage that changes nothing: passes, counting visits in demo.fixes.";
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
  struct Options {
    int64_t failures = 0;
  };
  static std::vector<Param> params() {
    return {Param{"failures", KF_PARAM_INT, "2", false, "Visits that fail before one passes."}.bind(&Options::failures)};
  }
  explicit Flaky(const Options& options) : failures_(options.failures) {}
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
  struct Options {
    Seconds seconds{};
  };
  static std::vector<Param> params() {
    return {Param{"seconds", KF_PARAM_DURATION, "0.001", false, "How long each call spins (1ms, 0.5s)."}
                .at_least(0)
                .bind(&Options::seconds)};
  }
  explicit Busy(const Options& options) : seconds_(options.seconds) {}
  void process(Job& job) override {
    const int concurrent = ++inside_;
    job.metric("concurrent", concurrent);
    const auto until = std::chrono::steady_clock::now() + seconds_;
    while (std::chrono::steady_clock::now() < until) {
    }
    --inside_;
    job.pass();
  }

 private:
  Seconds seconds_;
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
  struct Options {
    Seconds seconds{};
    std::vector<std::string> only;
  };
  static std::vector<Param> params() {
    return {Param{"seconds", KF_PARAM_DURATION, "0.1", false, "How long each call waits (100ms, 2s)."}
                .at_least(0)
                .bind(&Options::seconds),
            Param{"only", KF_PARAM_STRING_LIST, "[]", false,
                  "Task ids that wait; the others pass at once. Empty: every task waits."}
                .bind(&Options::only)};
  }
  explicit Sleep(const Options& options) : options_(options) {}
  void process(Job& job) override {
    const int concurrent = ++inside_;
    job.metric("concurrent", concurrent);
    const bool waits = options_.only.empty() || listed(options_.only, job.get_or(KF_KEY_TASK_ID));
    const auto until = std::chrono::steady_clock::now() + (waits ? options_.seconds : Seconds(0));
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
  Options options_;
  std::atomic<int> inside_{0};
};

}  // namespace

KFORGE_PLUGIN("demo", "1.0.0", Range, Noop, Judge, Mend, Flaky, Busy, Sleep, NeedsEnv)
