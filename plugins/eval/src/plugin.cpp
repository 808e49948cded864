// The kforge_eval plugin: the evaluation stages eval.check (L1), eval.compile.cpp /
// .triton / .cuda (L2) and eval.run (L3). The logic lives in kforge_eval_lib; this file maps
// stage parameters and job keys onto it. The tasks and candidates they judge come from other
// plugins (plugins/kernelbench), in the words of kforge/eval/vocabulary.hpp.
#include "eval_job.hpp"
#include "harness_pool.hpp"
#include "harness_stages.hpp"
#include "native_compile.hpp"
#include "python_env.hpp"
#include "rules_file.hpp"
#include "sandbox_policy.hpp"
#include "toolchain.hpp"

#include <kforge/sdk.hpp>

#include <unistd.h>

#include <chrono>
#include <concepts>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <memory>
#include <sstream>

// A program parameter (a compiler, the interpreter): a name looked up on PATH when the run
// starts (the run's environment: the stage's preflight), or a path, relative to the pipeline
// file, which must name an executable file now.
namespace {
struct Program {
  std::string command;
};
}  // namespace

template <>
struct kforge::sdk::ParamField<Program> {
  static bool takes(kf_param_type type) { return type == KF_PARAM_STRING; }
  static Program read(const Config& cfg, const char* name, kf_param_type) {
    const std::string value = cfg.string(name);
    if (value.find('/') == std::string::npos) return {value};
    const std::string path = cfg.path(name);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec) || ::access(path.c_str(), X_OK) != 0) {
      throw std::invalid_argument(std::string(name) + " '" + path +
                                  "' is not an executable file: give the path of one, or a program name found on PATH");
    }
    return {path};
  }
};

namespace {

using kforge::sdk::Job;
using kforge::sdk::Param;
using kforge::sdk::Seconds;
namespace eval = kforge::eval;

constexpr uint32_t kHarnessStageFlags = KF_STAGE_WAITS | KF_STAGE_CACHEABLE;

// ---- parameters shared by the stages that talk to the harness ----
// Each group is a struct that a stage's Options derives from, and a function that declares
// its parameters bound to the fields of that stage's Options.

struct InterpreterOptions {
  Program python;
  std::filesystem::path harness_dir;  // empty: the search of locate_harness_dir
};

template <typename Options>
std::vector<Param> interpreter_params() {
  return {Param{"python", KF_PARAM_STRING, "auto", false,
                "Interpreter for the harness: auto ($KFORGE_PYTHON, else the first of /usr/bin/python3, python3, "
                "python that can import torch), a program on PATH, or a path (relative to the pipeline file)."}
              .template bind<Options>(&Options::python),
          Param{"harness_dir", KF_PARAM_STRING, "", false,
                "Directory holding the kforge_harness package; empty: $KFORGE_HARNESS_DIR, the source tree, "
                "then the install location."}
              .template bind<Options>(&Options::harness_dir)};
}

// The stages that run candidate code, or a compiler on it, in the harness's sandbox.
template <typename Options>
Param sandbox_param() {
  return Param{"sandbox", KF_PARAM_STRING, "auto", false,
               "What the candidate sandbox must give on this machine: full (refuse to run where it lacks a "
               "protection, e.g. user namespaces in a container or a chroot), partial (run in what the machine "
               "gives, recorded with every verdict and in the report), auto ($KFORGE_SANDBOX, else full)."}
      .one_of({"auto", "full", "partial"})
      .template bind<Options>(&Options::sandbox);
}

struct ServerOptions : InterpreterOptions {
  std::string device;
  std::vector<std::string> devices;
  std::string mode;
  int max_children = 0;
  Seconds start_timeout{};
  int server_retries = 0;
  std::string launcher;
  int servers = 1;
  int gpus_per_server = 0;
  int cpus_per_server = 1;
  std::string slurm_partition;
  std::string slurm_account;
  std::string slurm_time;
  std::string slurm_constraint;
  std::vector<std::string> slurm_args;
  Seconds slurm_place_timeout{};
};

template <typename Options>
std::vector<Param> server_params(const char* default_device) {
  std::vector<Param> params = interpreter_params<Options>();
  const std::vector<Param> server = {
      Param{"device", KF_PARAM_STRING, default_device, false, "Where candidates run: cpu, cuda:N or npu:N."}
          .template bind<Options>(&Options::device),
      Param{"devices", KF_PARAM_STRING_LIST, "[]", false,
            "A pool of devices (e.g. [cuda:0, cuda:1]): one harness server each, work goes to the least loaded. "
            "Overrides device when not empty."}
          .template bind<Options>(&Options::devices),
      Param{"mode", KF_PARAM_STRING, "fork", false,
            "Harness isolation: fork (a zygote that imported torch once forks a child per request) or spawn (a "
            "fresh interpreter per request)."}
          .one_of({"fork", "spawn"})
          .template bind<Options>(&Options::mode),
      Param{"max_children", KF_PARAM_INT, "0", false,
            "Requests one harness server runs at once; 0: one per CPU core, at most 8."}
          .at_least(0)
          .template bind<Options>(&Options::max_children),
      Param{"start_timeout", KF_PARAM_DURATION, "120s", false,
            "How long a harness server may take to start (import torch and triton)."}
          .above(0)
          .formerly({"start_timeout_s"})
          .template bind<Options>(&Options::start_timeout),
      Param{"server_retries", KF_PARAM_INT, "2", false,
            "A request whose harness server was lost (it died: a node lost, a Slurm step cancelled or past its "
            "time limit) is sent again, to another server where there is one, at most this many times (metric "
            "infra_retries); then it is a harness_error, never the candidate's."}
          .at_least(0)
          .template bind<Options>(&Options::server_retries),
      Param{"launcher", KF_PARAM_STRING, "local", false,
            "Where harness servers run: local (children of kforge, one per device) or slurm (each server a Slurm "
            "job step started with srun, inside an allocation or not: servers, gpus_per_server, cpus_per_server, "
            "slurm_*)."}
          .one_of({"local", "slurm"})
          .template bind<Options>(&Options::launcher),
      Param{"servers", KF_PARAM_INT, "1", false,
            "launcher slurm: how many harness servers (job steps) the pool has, wherever Slurm places them; work "
            "goes to the least loaded ready one."}
          .at_least(1)
          .template bind<Options>(&Options::servers),
      Param{"gpus_per_server", KF_PARAM_INT, "1", false,
            "launcher slurm: GPUs each server's step gets (--gpus-per-task) on a cuda device (device cuda:0 is "
            "the step's first); none are asked for cpu or npu (give slurm_args there)."}
          .at_least(0)
          .template bind<Options>(&Options::gpus_per_server),
      Param{"cpus_per_server", KF_PARAM_INT, "4", false,
            "launcher slurm: CPUs each server's step gets (--cpus-per-task); max_children 0 means one request "
            "per CPU, at most 8."}
          .at_least(1)
          .template bind<Options>(&Options::cpus_per_server),
      Param{"slurm_partition", KF_PARAM_STRING, "", false,
            "launcher slurm: --partition of a server's job (outside an allocation); empty: the cluster's default."}
          .template bind<Options>(&Options::slurm_partition),
      Param{"slurm_account", KF_PARAM_STRING, "", false, "launcher slurm: --account to charge; empty: your default."}
          .template bind<Options>(&Options::slurm_account),
      Param{"slurm_time", KF_PARAM_STRING, "", false,
            "launcher slurm: --time, each server's time limit in Slurm's format (30, 2:00:00, 1-0); a server past "
            "it is lost, its requests sent again and a replacement started; empty: the partition's default."}
          .template bind<Options>(&Options::slurm_time),
      Param{"slurm_constraint", KF_PARAM_STRING, "", false, "launcher slurm: --constraint, node features (e.g. h100)."}
          .template bind<Options>(&Options::slurm_constraint),
      Param{"slurm_args", KF_PARAM_STRING_LIST, "[]", false,
            "launcher slurm: more srun arguments, passed as they are (e.g. [--mem=64G, --qos=high])."}
          .template bind<Options>(&Options::slurm_args),
      Param{"slurm_place_timeout", KF_PARAM_DURATION, "10m", false,
            "launcher slurm: how long Slurm may take to place a server's step; one not placed by then is given "
            "up, said in the log, and the run goes on with the servers it has."}
          .above(0)
          .formerly({"slurm_place_timeout_s"})
          .template bind<Options>(&Options::slurm_place_timeout)};
  params.insert(params.end(), server.begin(), server.end());
  return params;
}

// The stages that run code on a device share it by memory (device_gate.hpp).
struct AdmissionOptions {
  double memory_gb = 0;
  double memory_headroom_gb = 0;
  double memory_per_job_mb = 0;
  double reference_store_mb = 0;
};

template <typename Options>
std::vector<Param> admission_params() {
  return {Param{"memory_gb", KF_PARAM_FLOAT, "0", false,
                "Device memory for admitting jobs side by side (each job's need is its task's measured peak); 0: "
                "the device's own memory on an accelerator, no admission by memory on cpu (set it there for a "
                "budget: the host's memory is then shared as if it were a device's)."}
              .at_least(0)
              .template bind<Options>(&Options::memory_gb),
          Param{"memory_headroom_gb", KF_PARAM_FLOAT, "1", false, "Device memory kept free of admitted jobs."}
              .at_least(0)
              .template bind<Options>(&Options::memory_headroom_gb),
          Param{"memory_per_job_mb", KF_PARAM_FLOAT, "512", false,
                "Added to each admitted job's measured need: its own CUDA context and allocator slack."}
              .at_least(0)
              .template bind<Options>(&Options::memory_per_job_mb),
          Param{"reference_store_mb", KF_PARAM_FLOAT, "8192", false,
                "Reference outputs the harness server keeps for reuse by later candidates of a task (least "
                "recently used first out); a task whose outputs exceed it is recomputed for each candidate."}
              .at_least(0)
              .template bind<Options>(&Options::reference_store_mb)};
}

// The limits of one evaluation child.
struct LimitOptions {
  Seconds timeout{};
  int64_t memory_mb = 0;
  std::chrono::seconds cpu_time{};  // RLIMIT_CPU counts whole seconds: rounded up
};

template <typename Options>
std::vector<Param> limit_params(const char* default_timeout) {
  return {Param{"timeout", KF_PARAM_DURATION, default_timeout, false,
                "Wall-clock limit of one evaluation child; its process group is killed at the limit (cut "
                "further to fit the stage timeout)."}
              .above(0)
              .formerly({"timeout_s"})
              .template bind<Options>(&Options::timeout),
          Param{"memory_mb", KF_PARAM_INT, "16384", false, "Memory limit of the child (address space on CPU)."}
              .above(0)
              .template bind<Options>(&Options::memory_mb),
          Param{"cpu_time", KF_PARAM_DURATION, "300s", false, "CPU-time limit of the child (whole seconds, rounded up)."}
              .above(0)
              .formerly({"cpu_s"})
              .template bind<Options>(&Options::cpu_time)};
}

std::vector<Param> concat(std::vector<Param> a, const std::vector<Param>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// An optional file parameter (empty: none), which must exist when given.
std::string existing_file(const std::filesystem::path& path, const char* name) {
  if (path.empty()) return "";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw std::invalid_argument(std::string(name) + " '" + path.string() + "' is not a file");
  }
  return path.string();
}

// eval.check's rules file: refused now, as the harness would refuse it at every job.
std::string rules_file(const std::filesystem::path& rules) {
  const std::string path = existing_file(rules, "rules");
  if (!path.empty()) eval::check_rules_file(path);
  return path;
}

// The run-start check of a stage that talks to the harness: an interpreter for it (`auto`
// probes which one can import torch; a name is looked up on PATH) and the harness package,
// as the run's environment (PATH, KFORGE_PYTHON, KFORGE_HARNESS_DIR) provides them, and for
// launcher slurm Slurm's client commands. Each failure says what was tried and what to
// install or set.
void check_harness_environment(const eval::HarnessSettings& settings) {
  const std::string python = eval::resolve_python(settings.python);
  const std::string harness_dir = eval::locate_harness_dir(settings.harness_dir);
  if (!settings.slurm) {
    // A device of this host that the harness cannot use ends the run before its first
    // job, as a missing compiler does (a Slurm step's devices are on its node, not here).
    for (const std::string& device : settings.devices) {
      if (device != eval::kDeviceCpu) eval::check_device(python, harness_dir, device);
    }
    return;
  }
  for (const char* program : {"srun", "scancel"}) {
    if (!eval::find_program(program)) {
      throw std::invalid_argument(std::string("launcher slurm needs Slurm's client commands on PATH, and ") + program +
                                  " is not there: load your cluster's slurm module, or install them (Debian: "
                                  "apt-get install slurm-client)");
    }
  }
}

// How a stage's harness servers are launched: locally, or as Slurm job steps with the
// resources its slurm_* parameters ask for. A slurm_* parameter with launcher local, or
// devices with launcher slurm, would be ignored: refused instead.
void read_launcher(const ServerOptions& options, eval::HarnessSettings& settings) {
  settings.servers = options.servers;
  settings.server_retries = options.server_retries;
  settings.warn = [](const std::string& message) { kforge::sdk::log(KF_LOG_WARN, "eval", message); };
  if (options.launcher != "slurm") {
    const std::pair<const char*, const std::string*> slurm_strings[] = {
        {"slurm_partition", &options.slurm_partition},
        {"slurm_account", &options.slurm_account},
        {"slurm_time", &options.slurm_time},
        {"slurm_constraint", &options.slurm_constraint}};
    for (const auto& [name, value] : slurm_strings) {
      if (!value->empty()) {
        throw std::invalid_argument(std::string(name) + " is for launcher: slurm (this stage's launcher is local)");
      }
    }
    if (!options.slurm_args.empty()) {
      throw std::invalid_argument("slurm_args is for launcher: slurm (this stage's launcher is local)");
    }
    return;
  }
  if (!options.devices.empty()) {
    throw std::invalid_argument("devices lists this host's devices, for launcher local; with launcher slurm give "
                                "device (each server's own: cuda:0 is its step's first GPU) and servers: N");
  }
  eval::SlurmLaunch slurm;
  slurm.gpus = options.device.starts_with(eval::kDeviceCuda) ? options.gpus_per_server : 0;
  slurm.cpus = options.cpus_per_server;
  slurm.partition = options.slurm_partition;
  slurm.account = options.slurm_account;
  slurm.time_limit = options.slurm_time;
  slurm.constraint = options.slurm_constraint;
  slurm.extra_args = options.slurm_args;
  slurm.place_timeout_seconds = options.slurm_place_timeout.count();
  settings.slurm = std::move(slurm);
}

// A stage's run-start check: every check runs, and all that fail are reported together,
// so one `kforge run` says everything the machine lacks (a compiler and the harness's
// interpreter), not one thing per attempt.
void run_start_checks(std::initializer_list<std::function<void()>> checks) {
  std::string problems;
  for (const auto& check : checks) {
    try {
      check();
    } catch (const std::exception& e) {
      problems += (problems.empty() ? "" : "; and ") + std::string(e.what());
    }
  }
  if (!problems.empty()) throw std::runtime_error(problems);
}

// The interpreter and harness of a stage that runs a local CPU server only.
eval::HarnessSettings harness_settings(const InterpreterOptions& options) {
  eval::HarnessSettings settings;
  settings.python = options.python.command;
  settings.harness_dir = options.harness_dir;
  return settings;
}

// A stage's harness servers on its devices.
eval::HarnessSettings harness_settings(const ServerOptions& options) {
  eval::HarnessSettings settings = harness_settings(static_cast<const InterpreterOptions&>(options));
  settings.devices = options.devices.empty() ? std::vector<std::string>{options.device} : options.devices;
  settings.mode = options.mode;
  settings.max_children = options.max_children;
  settings.start_timeout_seconds = options.start_timeout.count();
  read_launcher(options, settings);
  return settings;
}

// ... that admits jobs to a device by their memory.
template <typename Options>
  requires std::derived_from<Options, ServerOptions> && std::derived_from<Options, AdmissionOptions>
eval::HarnessSettings harness_settings(const Options& options) {
  eval::HarnessSettings settings = harness_settings(static_cast<const ServerOptions&>(options));
  settings.memory.memory_gb = options.memory_gb;
  settings.memory.headroom_gb = options.memory_headroom_gb;
  settings.memory.per_job_mb = options.memory_per_job_mb;
  settings.reference_store_mb = options.reference_store_mb;
  return settings;
}

// The run-start check of a stage that runs candidates through the harness: its interpreter
// and the candidate sandbox.
void check_sandboxed_stage(const eval::HarnessSettings& settings, const eval::SandboxGate& sandbox, const char* kind) {
  check_harness_environment(settings);
  sandbox.preflight(kind);
}

eval::ChildLimits child_limits(const LimitOptions& options) {
  return {options.timeout.count(), options.memory_mb, options.cpu_time.count()};
}

// The stages that only extract sources (compile.cpp, compile.cuda) use a CPU server with
// default limits: extraction reads the AST and runs nothing.
std::shared_ptr<eval::HarnessPool> extraction_pool(const InterpreterOptions& options) {
  return std::make_shared<eval::HarnessPool>(harness_settings(options));
}

// ---- job <-> plain data ----

eval::EvalJob read_job(const Job& job) {
  eval::EvalJob data;
  data.task_id = job.get_or(KF_KEY_TASK_ID);
  data.task_path = job.get_or(KF_KEY_TASK_PATH);
  data.task_format = job.get_or(KF_KEY_TASK_FORMAT, eval::kFormatKernelBenchTorch);
  if (auto sizes = job.get(eval::kTaskSizes)) {
    auto parsed = nlohmann::json::parse(*sizes, nullptr, false);
    if (parsed.is_object()) data.task_sizes = parsed;
  }
  data.task_size_scale = job.number(eval::kTaskSizeScale).value_or(1.0);
  data.task_fit_memory_mb = job.number(eval::kTaskFitMemoryMb).value_or(0.0);
  if (auto code = job.get(KF_KEY_CANDIDATE_CODE)) data.code = std::string(*code);
  data.language = job.get_or(KF_KEY_CANDIDATE_LANGUAGE);
  data.run_seed = job.run_seed();
  for (const char* key : {eval::kAttrCppSource, eval::kAttrCudaSource, eval::kAttrArtifact}) {
    if (auto value = job.get(key)) data.attributes[key] = std::string(*value);
  }
  data.seconds_left = [&job] { return job.seconds_left(); };
  data.cancelled = [&job] { return job.cancelled(); };
  return data;
}

void write_result(Job& job, const eval::StageResult& result) {
  for (const auto& [key, value] : result.attributes) job.set(key.c_str(), value);
  for (const auto& [name, value] : result.metrics) job.metric(name.c_str(), value);
  if (!result.log_tail.empty()) job.log_tail(result.log_tail);
  switch (result.status) {
    case KF_VERDICT_PASS:
      job.pass();
      break;
    case KF_VERDICT_FAIL:
      job.fail(result.error_class, result.message);
      break;
    default:
      job.error(result.error_class, result.message);
      break;
  }
}

// ---- eval.check ----

struct CheckOptions : ServerOptions, LimitOptions {
  std::string language;
  std::filesystem::path rules;
};

class Check : public kforge::sdk::Stage {
 public:
  using Options = CheckOptions;
  static constexpr const char* kName = "eval.check";
  static constexpr kf_stage_role kRole = KF_ROLE_CHECK;
  static constexpr const char* kDoc =
      "L1: static checks of the candidate through the harness (syntax, ModelNew and its constructor, DSL "
      "compliance, anti-cheat rules). Runs nothing of the candidate. Findings go to the log tail; the "
      "extracted sources to job attributes check.cpp_source / check.cuda_source.";
  static constexpr uint32_t kFlags = kHarnessStageFlags;
  static std::vector<Param> params() {
    auto params = concat(server_params<Options>(eval::kDeviceCpu), limit_params<Options>("60s"));
    std::vector<std::string> languages{""};
    languages.insert(languages.end(), std::begin(eval::kLanguages), std::end(eval::kLanguages));
    params.push_back(Param{"language", KF_PARAM_STRING, "", false,
                           "Rules for which language (triton, cpp, cuda, python); empty: the job's candidate.language."}
                         .one_of(languages)
                         .bind(&Options::language));
    params.push_back(Param{"rules", KF_PARAM_STRING, "", false,
                           "Extra rules YAML (relative to the pipeline file), on top of the built-in ones."}
                         .bind(&Options::rules));
    return params;
  }
  explicit Check(const Options& options)
      : settings_(harness_settings(static_cast<const ServerOptions&>(options))),
        pool_(std::make_shared<eval::HarnessPool>(settings_)),
        stage_(pool_, {options.language, rules_file(options.rules), child_limits(options)}) {}
  void preflight() const { check_harness_environment(settings_); }
  void warm_up() { pool_->start(); }
  void process(Job& job) override { write_result(job, stage_.process(read_job(job))); }

 private:
  eval::HarnessSettings settings_;
  std::shared_ptr<eval::HarnessPool> pool_;
  eval::CheckStage stage_;
};

// ---- eval.compile.cpp ----

struct CompileCppOptions : InterpreterOptions {
  Program compiler;
  std::string flags;
  std::filesystem::path cache_dir;
  Seconds timeout{};
  std::string sandbox;
};

class CompileCpp : public kforge::sdk::Stage {
 public:
  using Options = CompileCppOptions;
  static constexpr const char* kName = "eval.compile.cpp";
  static constexpr kf_stage_role kRole = KF_ROLE_COMPILE;
  static constexpr const char* kDoc =
      "L2 for C++ candidates: compiles check.cpp_source (or the candidate's cpp_source, extracted by the "
      "harness) into a shared library, cached by content hash. Sets compile.artifact. Compiler errors "
      "fail with compile_error and keep candidate.cpp:LINE:COL. Metrics compile_seconds, cached.";
  static constexpr uint32_t kFlags = kHarnessStageFlags;
  static std::vector<Param> params() {
    return concat({Param{"compiler", KF_PARAM_STRING, "g++", false, "C++ compiler: g++, clang++ or a path."}.bind(
                       &Options::compiler),
                   Param{"flags", KF_PARAM_STRING, "-O3 -march=native -fopenmp -shared -fPIC -std=c++17", false,
                         "Compiler flags (split on whitespace)."}
                       .bind(&Options::flags),
                   Param{"cache_dir", KF_PARAM_STRING, "", false,
                         "Artifact cache; empty: $XDG_CACHE_HOME/kforge/cpp or ~/.cache/kforge/cpp."}
                       .bind(&Options::cache_dir),
                   Param{"timeout", KF_PARAM_DURATION, "120s", false, "Compile time limit; the compiler is killed after it."}
                       .above(0)
                       .formerly({"timeout_s"})
                       .bind(&Options::timeout),
                   sandbox_param<Options>()},
                  interpreter_params<Options>());
  }
  explicit CompileCpp(const Options& options)
      : compiler_(options.compiler.command),
        python_(options.python.command),
        harness_dir_(options.harness_dir),
        sandbox_(options.sandbox, python_, harness_dir_),
        stage_({compiler_, options.flags, options.cache_dir, options.timeout.count(), {}, python_, harness_dir_},
               extraction_pool(options)) {}
  void preflight() const {
    run_start_checks({[&] { eval::locate_compiler(compiler_); },
                      [&] {
                        check_harness_environment(harness_settings(InterpreterOptions{{python_}, harness_dir_}));
                        sandbox_.preflight(kName);
                      }});
  }
  void process(Job& job) override {
    const eval::EvalJob data = read_job(job);
    write_result(job, sandbox_.guard(data, [&] {
      eval::StageResult result = stage_.process(data);
      eval::blame_missing_toolchain(result, python_, "");
      return result;
    }));
  }
  std::string cache_key(const Job&) const { return sandbox_.cache_key(); }

 private:
  std::string compiler_;
  std::string python_;
  std::string harness_dir_;
  eval::SandboxGate sandbox_;
  eval::CppCompileStage stage_;
};

// ---- eval.compile.triton ----

struct CompileTritonOptions : ServerOptions, LimitOptions, AdmissionOptions {
  std::string sandbox;
};

class CompileTriton : public kforge::sdk::Stage {
 public:
  using Options = CompileTritonOptions;
  static constexpr const char* kName = "eval.compile.triton";
  static constexpr kf_stage_role kRole = KF_ROLE_COMPILE;
  static constexpr const char* kDoc =
      "L2 for Triton candidates: the harness imports the candidate in an isolated child on the device, builds "
      "ModelNew and runs forward once on the task's inputs so every kernel compiles.";
  static constexpr uint32_t kFlags = kHarnessStageFlags;
  static std::vector<Param> params() {
    return concat(concat(concat(server_params<Options>("cuda:0"), limit_params<Options>("120s")),
                         admission_params<Options>()),
                  {sandbox_param<Options>()});
  }
  explicit CompileTriton(const Options& options)
      : settings_(harness_settings(options)),
        pool_(std::make_shared<eval::HarnessPool>(settings_)),
        sandbox_(options.sandbox, settings_.python, settings_.harness_dir),
        stage_(pool_, child_limits(options)) {}
  void preflight() const { check_sandboxed_stage(settings_, sandbox_, kName); }
  void warm_up() { pool_->start(); }
  void process(Job& job) override {
    const eval::EvalJob data = read_job(job);
    write_result(job, sandbox_.guard(data, [&] { return stage_.process(data); }));
  }
  std::string cache_key(const Job&) const { return sandbox_.cache_key(); }

 private:
  eval::HarnessSettings settings_;
  std::shared_ptr<eval::HarnessPool> pool_;
  eval::SandboxGate sandbox_;
  eval::TritonCompileStage stage_;
};

// ---- eval.compile.cuda ----

struct CompileCudaOptions : InterpreterOptions {
  Program nvcc;
  std::string flags;
  std::string prelude;
  std::filesystem::path cache_dir;
  Seconds timeout{};
  std::string sandbox;
};

class CompileCuda : public kforge::sdk::Stage {
 public:
  using Options = CompileCudaOptions;
  static constexpr const char* kName = "eval.compile.cuda";
  static constexpr kf_stage_role kRole = KF_ROLE_COMPILE;
  static constexpr const char* kDoc =
      "L2 for CUDA candidates in KernelBench's load_inline format: compiles check.cuda_source with nvcc into "
      "an object file (-c, no GPU needed), with load_inline's includes and torch's headers. Sets "
      "compile.artifact. Metrics compile_seconds, cached.";
  static constexpr uint32_t kFlags = kHarnessStageFlags;
  static std::vector<Param> params() {
    return concat({Param{"nvcc", KF_PARAM_STRING, "", false,
                         "nvcc to use; empty: nvcc on PATH, else /usr/local/cuda/bin/nvcc."}
                       .bind(&Options::nvcc),
                   Param{"flags", KF_PARAM_STRING, "-O3 -std=c++17 -Xcompiler -fPIC", false,
                         "nvcc flags (split on whitespace), e.g. add -arch=sm_90."}
                       .bind(&Options::flags),
                   Param{"prelude", KF_PARAM_STRING, "load_inline", false,
                         "load_inline: compile as load_inline would (its includes and defines, torch's headers); "
                         "none: the source as it is."}
                       .one_of({"load_inline", "none"})
                       .bind(&Options::prelude),
                   Param{"cache_dir", KF_PARAM_STRING, "", false,
                         "Object cache; empty: $XDG_CACHE_HOME/kforge/cuda or ~/.cache/kforge/cuda."}
                       .bind(&Options::cache_dir),
                   Param{"timeout", KF_PARAM_DURATION, "300s", false, "Compile time limit; nvcc is killed after it."}
                       .above(0)
                       .formerly({"timeout_s"})
                       .bind(&Options::timeout),
                   sandbox_param<Options>()},
                  interpreter_params<Options>());
  }
  explicit CompileCuda(const Options& options)
      : python_(options.python.command),
        nvcc_(options.nvcc.command),
        harness_dir_(options.harness_dir),
        sandbox_(options.sandbox, python_, harness_dir_),
        stage_({nvcc_, options.flags, options.prelude, python_, options.cache_dir, options.timeout.count(), {},
                harness_dir_},
               extraction_pool(options)) {}
  void preflight() const {
    run_start_checks({[&] { eval::locate_nvcc(nvcc_); },
                      [&] {
                        check_harness_environment(harness_settings(InterpreterOptions{{python_}, harness_dir_}));
                        sandbox_.preflight(kName);
                      }});
  }
  void process(Job& job) override {
    const eval::EvalJob data = read_job(job);
    write_result(job, sandbox_.guard(data, [&] {
      eval::StageResult result = stage_.process(data);
      eval::blame_missing_toolchain(result, python_, nvcc_);
      return result;
    }));
  }
  std::string cache_key(const Job&) const { return sandbox_.cache_key(); }

 private:
  std::string python_;
  std::string nvcc_;
  std::string harness_dir_;
  eval::SandboxGate sandbox_;
  eval::CudaCompileStage stage_;
};

// ---- eval.run ----

struct RunOptions : ServerOptions, LimitOptions, AdmissionOptions {
  int64_t trials = 0;
  std::optional<int64_t> seed;
  std::string tolerance;
  std::optional<std::string> rule;  // a mapping's JSON text
  bool timing = false;
  int64_t warmup = 0;
  int64_t timing_trials = 0;
  std::string baseline;
  Seconds reference_max_age{};
  bool inputs_on_device = true;
  std::string sandbox;
};

eval::RunStage::Options run_options(const RunOptions& options) {
  eval::RunStage::Options run;
  run.trials = options.trials;
  if (options.seed) run.seed = static_cast<uint64_t>(*options.seed);
  run.rule = options.rule ? nlohmann::json::parse(*options.rule) : eval::tolerance_rule(options.tolerance);
  run.timing = options.timing;
  run.warmup = options.warmup;
  run.timing_trials = options.timing_trials;
  run.baseline = options.baseline;
  run.reference_max_age_s = options.reference_max_age.count();
  run.inputs_on_device = options.inputs_on_device;
  run.limits = child_limits(options);
  return run;
}

class Run : public kforge::sdk::Stage {
 public:
  using Options = RunOptions;
  static constexpr const char* kName = "eval.run";
  static constexpr kf_stage_role kRole = KF_ROLE_RUN;
  static constexpr const char* kDoc =
      "L3: the harness's reference worker computes the task's reference outputs once per run (self-testing "
      "the task first: a task that fails as its own reference is a task_error), the candidate runs in a child "
      "of its own on the same inputs (seeds derived from the run's secret seed; the reference's weights "
      "re-initialised and copied into ModelNew), a judge compares "
      "by the rule and applies the dynamic anti-cheat checks; both are timed when asked. Jobs share a device "
      "while their memory needs fit. Without candidate.code the reference runs as its own candidate. Sets "
      "candidate.device and run.task_sizes. Metrics max_abs_diff, mean_abs_diff, rel_l2_error, share_over_coarse, "
      "max_rel_error, mean_rel_error, candidate_ms, reference_ms (medians), with timing also each one's "
      "_p90, _mean, _std, _min, _max and candidate_timing_trials, reference_timing_trials (the timed calls "
      "those describe), speedup, suspicious_speedup, task_peak_mb, reference_computed, reference_age_s, "
      "retried_alone, infra_retries (sent again after its harness server was lost), device_wait_seconds (the "
      "time it waited for its device: another server's timed jobs, room for its memory), turn_wait_seconds (the "
      "time its work waited for other jobs' timing loops, which have the device alone).";
  static constexpr uint32_t kFlags = kHarnessStageFlags;
  static std::vector<Param> params() {
    auto params = concat(concat(server_params<Options>(eval::kDeviceCpu), limit_params<Options>("60s")),
                         admission_params<Options>());
    const std::vector<Param> own = {
        Param{"trials", KF_PARAM_INT, "5", false, "Correctness trials, each with fresh inputs."}.at_least(1).bind(
            &Options::trials),
        Param{"seed", KF_PARAM_INT, nullptr, false,
              "The seed the harness derives the model, weight and input seeds from (with the task id). Default: "
              "the run's secret seed (runs.secret_seed in the store), so inputs and weights cannot be predicted; "
              "set it to reproduce a recorded run's inputs."}
            .bind(&Options::seed),
        Param{"tolerance", KF_PARAM_STRING, "default", false,
              "Comparison preset: default (allclose atol=1e-4 rtol=3e-4 fp32, 1e-2 fp16/bf16; whole output: "
              "||c - r|| <= 5e-4 of ||r|| fp32 (1e-11 fp64, 1e-3 fp16, 1e-2 bf16), <= 1% of elements beyond the coarse "
              "bound), seed000 (max abs diff < 1e-3), kernelbench-v0 (allclose 1e-2), kernelbenchx (allclose "
              "atol=rtol=1e-5 fp32/fp64, 5e-3 fp16/bf16). Every preset also checks that the output "
              "reproduces how the reference's varies (max_centered_rel_error 0.25)."}
            .one_of({"default", "seed000", "kernelbench-v0", "kernelbenchx"})
            .bind(&Options::tolerance),
        Param{"rule", KF_PARAM_OBJECT, nullptr, false,
              "Comparison rule, overriding tolerance: {kind: allclose, atol, rtol} (numbers or per-dtype maps), "
              "{kind: max_abs_diff, limit}, {kind: share_over_limit, rtol, atol, max_share}; every kind also takes "
              "the whole-output checks max_rel_l2, max_centered_rel_error, max_coarse_share, coarse_atol, "
              "coarse_rtol (numbers or per-dtype maps)."}
            .bind(&Options::rule),
        Param{"timing", KF_PARAM_BOOL, "false", false,
              "Time candidate and reference after a correct run (each timing loop has the device alone; the "
              "jobs' other work shares it)."}
            .bind(&Options::timing),
        Param{"warmup", KF_PARAM_INT, "3", false, "Untimed calls before timing."}.at_least(0).bind(&Options::warmup),
        Param{"timing_trials", KF_PARAM_INT, "20", false,
              "Timed calls; their median, p90, mean, std, min and max are reported."}
            .at_least(1)
            .bind(&Options::timing_trials),
        Param{"baseline", KF_PARAM_STRING, "eager", false, "Reference timing: eager, or compile (also torch.compile)."}
            .one_of({"eager", "compile"})
            .bind(&Options::baseline),
        Param{"reference_max_age", KF_PARAM_DURATION, "10m", false,
              "The reference is timed once per run and task, and again when its timing is older than this "
              "(metric reference_age_s: how old the one used was, in seconds)."}
            .at_least(0)
            .formerly({"reference_max_age_s"})
            .bind(&Options::reference_max_age),
        Param{"inputs_on_device", KF_PARAM_BOOL, "true", false,
              "Make inputs on the device (get_inputs() with the device as torch's default); false: on the host."}
            .bind(&Options::inputs_on_device),
        sandbox_param<Options>()};
    params.insert(params.end(), own.begin(), own.end());
    return params;
  }
  explicit Run(const Options& options)
      : settings_(harness_settings(options)),
        pool_(std::make_shared<eval::HarnessPool>(settings_)),
        sandbox_(options.sandbox, settings_.python, settings_.harness_dir),
        stage_(pool_, run_options(options)),
        timing_(options.timing) {}
  void preflight() const { check_sandboxed_stage(settings_, sandbox_, kName); }
  void warm_up() { pool_->start(); }
  void process(Job& job) override {
    const eval::EvalJob data = read_job(job);
    write_result(job, sandbox_.guard(data, [&] { return stage_.process(data); }));
    // Timings belong to this run's machine and moment: never replayed unless asked.
    if (timing_) job.mark_measured();
  }
  // A verdict holds for the harness, torch, Triton and device that gave it: a cached one
  // from another machine or toolchain is not reused.
  std::string cache_key(const Job&) const { return stage_.judge_identity() + sandbox_.cache_key(); }

 private:
  eval::HarnessSettings settings_;
  std::shared_ptr<eval::HarnessPool> pool_;
  eval::SandboxGate sandbox_;
  eval::RunStage stage_;
  bool timing_;
};

}  // namespace

KFORGE_PLUGIN("eval", KFORGE_EVAL_VERSION, Check, CompileCpp, CompileTriton, CompileCuda, Run)
