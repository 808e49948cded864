// The plugin test kit (kforge/testing.hpp) on the real registry, loader and host.
#include <kforge/testing.hpp>

#include <fmt/format.h>

#include <chrono>
#include <mutex>
#include <stdexcept>

#include "engine/cancel.hpp"
#include "engine/host.hpp"
#include "engine/job.hpp"
#include "engine/pipeline/load.hpp"
#include "engine/registry.hpp"

namespace kforge::testing {
namespace {

// The kit's plugins: loaded once per process, never unloaded (stage instances and a
// plugin's static strings may outlive any test).
struct Kit {
  std::mutex mutex;
  Registry registry;
  bool loaded_any = false;
  std::vector<std::string> logs;
};

Kit& kit() {
  static Kit* instance = [] {
    auto* k = new Kit;  // never destroyed: plugins may log from their own threads at exit
    set_plugin_log_listener([k](kf_log_level level, const std::string& plugin, const std::string& message) {
      static const char* const kLevels[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR"};
      std::lock_guard lock(k->mutex);
      k->logs.push_back(fmt::format("{} {}: {}", kLevels[level], plugin, message));
    });
    return k;
  }();
  return *instance;
}

// The kind named `name`, loading KFORGE_PLUGIN_PATH first when nothing was loaded.
template <typename Kind, typename Find>
const Kind& find_kind(const std::string& name, Find find) {
  Kit& k = kit();
  std::lock_guard lock(k.mutex);
  if (!k.loaded_any) {
    for (const std::string& problem : k.registry.discover(default_plugin_path())) {
      throw std::runtime_error("loading plugins from KFORGE_PLUGIN_PATH: " + problem);
    }
    k.loaded_any = true;
  }
  const Kind* kind = find(k.registry, name);
  if (kind == nullptr) {
    throw std::invalid_argument(fmt::format(
        "no loaded plugin has the kind '{}': call kforge::testing::load_plugin(FILE) with the plugin first, or "
        "set KFORGE_PLUGIN_PATH",
        name));
  }
  return *kind;
}

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// The real job a TestJob stands for: task.* keys make its task, last.* its previous
// verdict, candidate.sample and candidate.round its counters.
Job job_of(const TestJob& test) {
  auto task = std::make_shared<Task>();
  Job job;
  Verdict last;
  bool has_last = false;
  for (const auto& [key, value] : test.strings) {
    if (key.starts_with("task.")) {
      task->strings[key] = value;
    } else if (key.starts_with("last.")) {
      has_last = true;
      if (key == KF_KEY_LAST_STAGE) last.stage = value;
      if (key == KF_KEY_LAST_STATUS) last.status = parse_status(value);
      if (key == KF_KEY_LAST_ERROR_CLASS) last.error_class = value;
      if (key == KF_KEY_LAST_MESSAGE) last.message = value;
      if (key == KF_KEY_LAST_LOG_TAIL) last.log_tail = value;
    } else {
      job.strings[key] = value;
    }
  }
  if (has_last && !test.strings.contains(KF_KEY_LAST_STATUS)) last.status = VerdictStatus::Fail;
  for (const auto& [key, value] : test.numbers) {
    if (key.starts_with("task.")) {
      task->numbers[key] = value;
    } else if (key == KF_KEY_CANDIDATE_SAMPLE) {
      job.sample = static_cast<int>(value);
    } else if (key == KF_KEY_CANDIDATE_ROUND) {
      job.round = static_cast<int>(value);
    } else {
      job.numbers[key] = value;
    }
  }
  job.task = std::move(task);
  if (has_last) job.verdicts.push_back(std::move(last));
  if (test.seconds_left != std::numeric_limits<double>::infinity()) job.deadline = steady_seconds() + test.seconds_left;
  return job;
}

}  // namespace

const kf_plugin_descriptor* load_plugin(const std::string& file) {
  Kit& k = kit();
  std::lock_guard lock(k.mutex);
  const kf_plugin_descriptor* descriptor = k.registry.load(file);
  k.loaded_any = true;
  return descriptor;
}

std::vector<std::string> plugin_logs() {
  Kit& k = kit();
  std::lock_guard lock(k.mutex);
  return k.logs;
}

namespace {

// One configured and created instance of a kind, destroyed with it; a refused parameter or
// constructor leaves no instance and says why.
template <typename Kind>
struct Instance {
  const Kind& kind;
  StageConfig config;
  void* handle = nullptr;
  std::string create_error;

  Instance(const Kind& k, const std::string& params, const std::string& base_dir) : kind(k) {
    try {
      config = load_params(kind, params, base_dir);
    } catch (const ConfigError& e) {
      create_error = e.what();
      return;
    }
    char err[4096] = {0};
    if (kind.create(host_api(), reinterpret_cast<const kf_config*>(&config), &handle, err, sizeof err) != KF_OK) {
      handle = nullptr;
      create_error = err[0] ? err : "create failed without a message";
    }
  }
  ~Instance() {
    if (handle != nullptr) kind.destroy(handle);
  }

  // The kind's run-start check, as `kforge run` calls it: "" when it passes or the kind
  // has none, else its message.
  std::string preflight() const {
    if (handle == nullptr) throw std::logic_error("the instance was not created: " + create_error);
    if (kind.preflight == nullptr) return "";
    char err[4096] = {0};
    if (kind.preflight(handle, err, sizeof err) == KF_OK) return "";
    return err[0] ? err : "preflight failed without a message";
  }
};

}  // namespace

// ---- stages

struct StageHarness::Impl : Instance<StageKind> {
  CancelToken cancel;
  std::optional<uint64_t> run_seed;

  using Instance::Instance;

  JobCall call_for(Job& job, Verdict& verdict) {
    JobCall call;
    call.job = &job;
    call.verdict = &verdict;
    call.routes = &kind.routes;
    call.cancel = &cancel;
    call.run_seed = run_seed;
    return call;
  }
};

StageHarness::StageHarness(const std::string& kind, const std::string& params, const std::string& base_dir)
    : impl_(std::make_unique<Impl>(
          find_kind<StageKind>(kind, [](const Registry& r, const std::string& n) { return r.stage(n); }), params,
          base_dir)) {}

StageHarness::~StageHarness() = default;

bool StageHarness::created() const { return impl_->handle != nullptr; }

const std::string& StageHarness::create_error() const { return impl_->create_error; }

std::string StageHarness::process(TestJob& test) {
  if (impl_->handle == nullptr) throw std::logic_error("the stage was not created: " + impl_->create_error);
  Job job = job_of(test);
  Verdict verdict;
  JobCall call = impl_->call_for(job, verdict);
  char err[4096] = {0};
  kf_status status = KF_OK;
  {
    const CurrentRun current(impl_->cancel);
    status = impl_->kind.process(impl_->handle, reinterpret_cast<kf_job*>(&call), err, sizeof err);
  }
  for (const auto& [key, value] : job.strings) test.strings[key] = value;
  for (const auto& [key, value] : job.numbers) test.numbers[key] = value;
  test.verdict.given = call.verdict_given;
  test.verdict.status = static_cast<kf_verdict_status>(verdict.status);
  test.verdict.route = verdict.route;
  test.verdict.error_class = verdict.error_class;
  test.verdict.message = verdict.message;
  test.verdict.measured = verdict.measured;
  test.metrics = verdict.metrics;
  test.log_tail = verdict.log_tail;
  if (status != KF_OK) return err[0] ? err : fmt::format("process returned status {}", static_cast<int>(status));
  return call.problem;
}

std::optional<std::string> StageHarness::cache_key(const TestJob& test) {
  if (impl_->handle == nullptr || impl_->kind.cache_key == nullptr) return std::nullopt;
  Job job = job_of(test);
  Verdict verdict;
  JobCall call = impl_->call_for(job, verdict);
  std::string material(4096, '\0');
  size_t length = 0;
  const auto* view = reinterpret_cast<const kf_job*>(&call);
  if (impl_->kind.cache_key(impl_->handle, view, material.data(), material.size(), &length) != KF_OK) return std::nullopt;
  if (length > material.size()) {
    material.assign(length, '\0');
    if (impl_->kind.cache_key(impl_->handle, view, material.data(), material.size(), &length) != KF_OK) {
      return std::nullopt;
    }
  }
  material.resize(length);
  return material;
}

std::string StageHarness::preflight() { return impl_->preflight(); }

void StageHarness::cancel() { impl_->cancel.request(); }

void StageHarness::set_run_seed(std::optional<uint64_t> seed) { impl_->run_seed = seed; }

// ---- sources

struct SourceHarness::Impl : Instance<SourceKind> {
  using Instance::Instance;
};

SourceHarness::SourceHarness(const std::string& kind, const std::string& params, const std::string& base_dir)
    : impl_(std::make_unique<Impl>(
          find_kind<SourceKind>(kind, [](const Registry& r, const std::string& n) { return r.source(n); }), params,
          base_dir)) {}

SourceHarness::~SourceHarness() = default;

bool SourceHarness::created() const { return impl_->handle != nullptr; }

const std::string& SourceHarness::create_error() const { return impl_->create_error; }

std::vector<TestTask> SourceHarness::drain() {
  if (impl_->handle == nullptr) throw std::logic_error("the source was not created: " + impl_->create_error);
  std::vector<TestTask> tasks;
  for (;;) {
    Task task;
    int has_task = 0;
    char err[4096] = {0};
    if (impl_->kind.next(impl_->handle, reinterpret_cast<kf_task*>(&task), &has_task, err, sizeof err) != KF_OK) {
      throw std::runtime_error(err[0] ? err : "next failed without a message");
    }
    if (has_task == 0) return tasks;
    tasks.push_back({task.strings, task.numbers});
  }
}

std::string SourceHarness::preflight() { return impl_->preflight(); }

std::optional<uint64_t> SourceHarness::count() {
  uint64_t total = 0;
  if (impl_->handle == nullptr || impl_->kind.count == nullptr || impl_->kind.count(impl_->handle, &total) != KF_OK) {
    return std::nullopt;
  }
  return total;
}

}  // namespace kforge::testing
