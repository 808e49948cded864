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

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <memory>
#include <sstream>

namespace {

using kforge::sdk::Config;
using kforge::sdk::Job;
using kforge::sdk::Param;
namespace eval = kforge::eval;

constexpr uint32_t kHarnessStageFlags = KF_STAGE_WAITS | KF_STAGE_CACHEABLE;

// ---- parameters shared by the stages that talk to the harness ----

std::vector<Param> interpreter_params() {
  return {{"python", KF_PARAM_STRING, "auto", false,
           "Interpreter for the harness: auto ($KFORGE_PYTHON, else the first of /usr/bin/python3, python3, "
           "python that can import torch), a program on PATH, or a path (relative to the pipeline file)."},
          {"harness_dir", KF_PARAM_STRING, "", false,
           "Directory holding the kforge_harness package; empty: $KFORGE_HARNESS_DIR, the source tree, "
           "then the install location."}};
}

// The stages that run candidate code, or a compiler on it, in the harness's sandbox.
Param sandbox_param() {
  return Param{"sandbox", KF_PARAM_STRING, "auto", false,
               "What the candidate sandbox must give on this machine: full (refuse to run where it lacks a "
               "protection, e.g. user namespaces in a container or a chroot), partial (run in what the machine "
               "gives, recorded with every verdict and in the report), auto ($KFORGE_SANDBOX, else full)."}
      .one_of({"auto", "full", "partial"});
}

std::vector<Param> server_params(const char* default_device) {
  std::vector<Param> params = interpreter_params();
  params.push_back({"device", KF_PARAM_STRING, default_device, false, "Where candidates run: cpu, cuda:N or npu:N."});
  params.push_back({"devices", KF_PARAM_STRING_LIST, "[]", false,
                    "A pool of devices (e.g. [cuda:0, cuda:1]): one harness server each, work goes to the "
                    "least loaded. Overrides device when not empty."});
  params.push_back(Param{"mode", KF_PARAM_STRING, "fork", false,
                          "Harness isolation: fork (a zygote that imported torch once forks a child per request) "
                          "or spawn (a fresh interpreter per request)."}
                        .one_of({"fork", "spawn"}));
  params.push_back(Param{"max_children", KF_PARAM_INT, "0", false,
                         "Requests one harness server runs at once; 0: one per CPU core, at most 8."}
                        .at_least(0));
  params.push_back(Param{"start_timeout_s", KF_PARAM_DURATION, "120", false,
                         "How long a harness server may take to start (import torch and triton)."}
                        .above(0));
  params.push_back(Param{"server_retries", KF_PARAM_INT, "2", false,
                         "A request whose harness server was lost (it died: a node lost, a Slurm step cancelled or "
                         "past its time limit) is sent again, to another server where there is one, at most this "
                         "many times (metric infra_retries); then it is a harness_error, never the candidate's."}
                        .at_least(0));
  const std::vector<Param> launcher = {
      Param{"launcher", KF_PARAM_STRING, "local", false,
            "Where harness servers run: local (children of kforge, one per device) or slurm (each server a Slurm "
            "job step started with srun, inside an allocation or not: servers, gpus_per_server, cpus_per_server, "
            "slurm_*)."}
          .one_of({"local", "slurm"}),
      Param{"servers", KF_PARAM_INT, "1", false,
            "launcher slurm: how many harness servers (job steps) the pool has, wherever Slurm places them; work "
            "goes to the least loaded ready one."}
          .at_least(1),
      Param{"gpus_per_server", KF_PARAM_INT, "1", false,
            "launcher slurm: GPUs each server's step gets (--gpus-per-task) on a cuda device (device cuda:0 is "
            "the step's first); none are asked for cpu or npu (give slurm_args there)."}
          .at_least(0),
      Param{"cpus_per_server", KF_PARAM_INT, "4", false,
            "launcher slurm: CPUs each server's step gets (--cpus-per-task); max_children 0 means one request "
            "per CPU, at most 8."}
          .at_least(1),
      {"slurm_partition", KF_PARAM_STRING, "", false,
       "launcher slurm: --partition of a server's job (outside an allocation); empty: the cluster's default."},
      {"slurm_account", KF_PARAM_STRING, "", false, "launcher slurm: --account to charge; empty: your default."},
      {"slurm_time", KF_PARAM_STRING, "", false,
       "launcher slurm: --time, each server's time limit in Slurm's format (30, 2:00:00, 1-0); a server past it "
       "is lost, its requests sent again and a replacement started; empty: the partition's default."},
      {"slurm_constraint", KF_PARAM_STRING, "", false, "launcher slurm: --constraint, node features (e.g. h100)."},
      {"slurm_args", KF_PARAM_STRING_LIST, "[]", false,
       "launcher slurm: more srun arguments, passed as they are (e.g. [--mem=64G, --qos=high])."},
      Param{"slurm_place_timeout_s", KF_PARAM_DURATION, "600", false,
            "launcher slurm: how long Slurm may take to place a server's step; one not placed by then is given "
            "up, said in the log, and the run goes on with the servers it has."}
          .above(0)};
  params.insert(params.end(), launcher.begin(), launcher.end());
  return params;
}

// The stages that run code on a device share it by memory (device_gate.hpp).
std::vector<Param> admission_params() {
  return {Param{"memory_gb", KF_PARAM_FLOAT, "0", false,
                "Device memory for admitting jobs side by side (each job's need is its task's measured peak); 0: "
                "the device's own memory on an accelerator, no admission by memory on cpu (set it there for a "
                "budget: the host's memory is then shared as if it were a device's)."}
              .at_least(0),
          Param{"memory_headroom_gb", KF_PARAM_FLOAT, "1", false, "Device memory kept free of admitted jobs."}
              .at_least(0),
          Param{"memory_per_job_mb", KF_PARAM_FLOAT, "512", false,
                "Added to each admitted job's measured need: its own CUDA context and allocator slack."}
              .at_least(0),
          Param{"reference_store_mb", KF_PARAM_FLOAT, "8192", false,
                "Reference outputs the harness server keeps for reuse by later candidates of a task (least "
                "recently used first out); a task whose outputs exceed it is recomputed for each candidate."}
              .at_least(0)};
}

std::vector<Param> limit_params(const char* default_timeout) {
  return {Param{"timeout_s", KF_PARAM_DURATION, default_timeout, false,
                "Wall-clock limit of one evaluation child; its process group is killed at the limit (cut "
                "further to fit the stage timeout)."}
              .above(0),
          Param{"memory_mb", KF_PARAM_INT, "16384", false, "Memory limit of the child (address space on CPU)."}.above(0),
          Param{"cpu_s", KF_PARAM_DURATION, "300", false, "CPU-time limit of the child."}.above(0)};
}

std::vector<Param> concat(std::vector<Param> a, const std::vector<Param>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A program parameter: a name looked up on PATH when the run starts (the run's environment:
// the stage's preflight), or a path, which must name an executable file now.
std::string program_param(const Config& cfg, const char* name) {
  const std::string value = cfg.string(name);
  if (value.find('/') == std::string::npos) return value;
  const std::string path = cfg.path(name);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || ::access(path.c_str(), X_OK) != 0) {
    throw std::invalid_argument(std::string(name) + " '" + path + "' is not an executable file: give the path of one, " +
                                "or a program name found on PATH");
  }
  return path;
}

// An optional file parameter (empty: none), which must exist when given.
std::string file_param(const Config& cfg, const char* name) {
  if (cfg.string(name).empty()) return "";
  const std::string path = cfg.path(name);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw std::invalid_argument(std::string(name) + " '" + path + "' is not a file");
  }
  return path;
}

// eval.check's rules file: refused now, as the harness would refuse it at every job.
std::string rules_param(const Config& cfg) {
  const std::string path = file_param(cfg, "rules");
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
// resources its slurm_* parameters ask for.
void read_launcher(const Config& cfg, eval::HarnessSettings& settings) {
  settings.servers = static_cast<int>(cfg.integer("servers"));
  settings.server_retries = static_cast<int>(cfg.integer("server_retries"));
  settings.warn = [](const std::string& message) { kforge::sdk::log(KF_LOG_WARN, "eval", message); };
  const char* slurm_strings[] = {"slurm_partition", "slurm_account", "slurm_time", "slurm_constraint"};
  if (cfg.string("launcher") != "slurm") {
    for (const char* name : slurm_strings) {
      if (!cfg.string(name).empty()) {
        throw std::invalid_argument(std::string(name) + " is for launcher: slurm (this stage's launcher is local)");
      }
    }
    if (!cfg.list("slurm_args").empty()) {
      throw std::invalid_argument("slurm_args is for launcher: slurm (this stage's launcher is local)");
    }
    return;
  }
  if (!cfg.list("devices").empty()) {
    throw std::invalid_argument("devices lists this host's devices, for launcher local; with launcher slurm give "
                                "device (each server's own: cuda:0 is its step's first GPU) and servers: N");
  }
  eval::SlurmLaunch slurm;
  slurm.gpus = cfg.string("device").starts_with(eval::kDeviceCuda) ? static_cast<int>(cfg.integer("gpus_per_server")) : 0;
  slurm.cpus = static_cast<int>(cfg.integer("cpus_per_server"));
  slurm.partition = cfg.string("slurm_partition");
  slurm.account = cfg.string("slurm_account");
  slurm.time_limit = cfg.string("slurm_time");
  slurm.constraint = cfg.string("slurm_constraint");
  slurm.extra_args = cfg.list("slurm_args");
  slurm.place_timeout_seconds = cfg.number("slurm_place_timeout_s");
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

eval::HarnessSettings harness_settings(const Config& cfg, bool with_devices, bool with_admission = false) {
  eval::HarnessSettings settings;
  settings.python = program_param(cfg, "python");
  settings.harness_dir = cfg.path("harness_dir");
  if (with_devices) {
    const std::vector<std::string> pool = cfg.list("devices");
    settings.devices = pool.empty() ? std::vector<std::string>{cfg.string("device")} : pool;
    settings.mode = cfg.string("mode");
    settings.max_children = static_cast<int>(cfg.integer("max_children"));
    settings.start_timeout_seconds = cfg.number("start_timeout_s");
    read_launcher(cfg, settings);
  }
  if (with_admission) {
    settings.memory.memory_gb = cfg.number("memory_gb");
    settings.memory.headroom_gb = cfg.number("memory_headroom_gb");
    settings.memory.per_job_mb = cfg.number("memory_per_job_mb");
    settings.reference_store_mb = cfg.number("reference_store_mb");
  }
  return settings;
}

// The run-start check of a stage that runs candidates through the harness: its interpreter
// and the candidate sandbox.
void check_sandboxed_stage(const eval::HarnessSettings& settings, const eval::SandboxGate& sandbox, const char* kind) {
  check_harness_environment(settings);
  sandbox.preflight(kind);
}

eval::ChildLimits child_limits(const Config& cfg) {
  eval::ChildLimits limits;
  limits.timeout_seconds = cfg.number("timeout_s");
  limits.memory_mb = cfg.integer("memory_mb");
  limits.cpu_seconds = static_cast<int64_t>(std::ceil(cfg.number("cpu_s")));
  if (limits.timeout_seconds <= 0 || limits.memory_mb <= 0 || limits.cpu_seconds <= 0) {
    throw std::invalid_argument("timeout_s, memory_mb and cpu_s must be > 0");
  }
  return limits;
}

// The interpreter and harness of a stage that runs a local CPU server only.
eval::HarnessSettings harness_settings_of(const std::string& python, const std::string& harness_dir) {
  eval::HarnessSettings settings;
  settings.python = python;
  settings.harness_dir = harness_dir;
  return settings;
}

// The stages that only extract sources (compile.cpp, compile.cuda) use a CPU server with
// default limits: extraction reads the AST and runs nothing.
std::shared_ptr<eval::HarnessPool> extraction_pool(const Config& cfg) {
  return std::make_shared<eval::HarnessPool>(harness_settings(cfg, false));
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

class Check : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "eval.check";
  static constexpr kf_stage_role kRole = KF_ROLE_CHECK;
  static constexpr const char* kDoc =
      "L1: static checks of the candidate through the harness (syntax, ModelNew and its constructor, DSL "
      "compliance, anti-cheat rules). Runs nothing of the candidate. Findings go to the log tail; the "
      "extracted sources to job attributes check.cpp_source / check.cuda_source.";
  static constexpr uint32_t kFlags = kHarnessStageFlags;
  static std::vector<Param> params() {
    auto params = concat(server_params(eval::kDeviceCpu), limit_params("60"));
    std::vector<std::string> languages{""};
    languages.insert(languages.end(), std::begin(eval::kLanguages), std::end(eval::kLanguages));
    params.push_back(Param{"language", KF_PARAM_STRING, "", false,
                           "Rules for which language (triton, cpp, cuda, python); empty: the job's candidate.language."}
                         .one_of(languages));
    params.push_back({"rules", KF_PARAM_STRING, "", false,
                      "Extra rules YAML (relative to the pipeline file), on top of the built-in ones."});
    return params;
  }
  explicit Check(const Config& cfg)
      : settings_(harness_settings(cfg, true)),
        pool_(std::make_shared<eval::HarnessPool>(settings_)),
        stage_(pool_, {cfg.string("language"), rules_param(cfg), child_limits(cfg)}) {}
  void preflight() const { check_harness_environment(settings_); }
  void warm_up() { pool_->start(); }
  void process(Job& job) override { write_result(job, stage_.process(read_job(job))); }

 private:
  eval::HarnessSettings settings_;
  std::shared_ptr<eval::HarnessPool> pool_;
  eval::CheckStage stage_;
};

// ---- eval.compile.cpp ----

class CompileCpp : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "eval.compile.cpp";
  static constexpr kf_stage_role kRole = KF_ROLE_COMPILE;
  static constexpr const char* kDoc =
      "L2 for C++ candidates: compiles check.cpp_source (or the candidate's cpp_source, extracted by the "
      "harness) into a shared library, cached by content hash. Sets compile.artifact. Compiler errors "
      "fail with compile_error and keep candidate.cpp:LINE:COL. Metrics compile_seconds, cached.";
  static constexpr uint32_t kFlags = kHarnessStageFlags;
  static std::vector<Param> params() {
    return concat({{"compiler", KF_PARAM_STRING, "g++", false, "C++ compiler: g++, clang++ or a path."},
                   {"flags", KF_PARAM_STRING, "-O3 -march=native -fopenmp -shared -fPIC -std=c++17", false,
                    "Compiler flags (split on whitespace)."},
                   {"cache_dir", KF_PARAM_STRING, "", false,
                    "Artifact cache; empty: $XDG_CACHE_HOME/kforge/cpp or ~/.cache/kforge/cpp."},
                   Param{"timeout_s", KF_PARAM_DURATION, "120", false, "Compile time limit; the compiler is killed after it."}
                       .above(0),
                   sandbox_param()},
                  interpreter_params());
  }
  explicit CompileCpp(const Config& cfg)
      : compiler_(program_param(cfg, "compiler")),
        python_(program_param(cfg, "python")),
        harness_dir_(cfg.path("harness_dir")),
        sandbox_(cfg.string("sandbox"), python_, harness_dir_),
        stage_({compiler_, cfg.string("flags"), cfg.path("cache_dir"), cfg.number("timeout_s"), {}, python_,
                harness_dir_},
               extraction_pool(cfg)) {}
  void preflight() const {
    run_start_checks({[&] { eval::locate_compiler(compiler_); },
                      [&] {
                        check_harness_environment(harness_settings_of(python_, harness_dir_));
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

class CompileTriton : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "eval.compile.triton";
  static constexpr kf_stage_role kRole = KF_ROLE_COMPILE;
  static constexpr const char* kDoc =
      "L2 for Triton candidates: the harness imports the candidate in an isolated child on the device, builds "
      "ModelNew and runs forward once on the task's inputs so every kernel compiles.";
  static constexpr uint32_t kFlags = kHarnessStageFlags;
  static std::vector<Param> params() {
    return concat(concat(concat(server_params("cuda:0"), limit_params("120")), admission_params()),
                  {sandbox_param()});
  }
  explicit CompileTriton(const Config& cfg)
      : settings_(harness_settings(cfg, true, true)),
        pool_(std::make_shared<eval::HarnessPool>(settings_)),
        sandbox_(cfg.string("sandbox"), settings_.python, settings_.harness_dir),
        stage_(pool_, child_limits(cfg)) {}
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

class CompileCuda : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "eval.compile.cuda";
  static constexpr kf_stage_role kRole = KF_ROLE_COMPILE;
  static constexpr const char* kDoc =
      "L2 for CUDA candidates in KernelBench's load_inline format: compiles check.cuda_source with nvcc into "
      "an object file (-c, no GPU needed), with load_inline's includes and torch's headers. Sets "
      "compile.artifact. Metrics compile_seconds, cached.";
  static constexpr uint32_t kFlags = kHarnessStageFlags;
  static std::vector<Param> params() {
    return concat({{"nvcc", KF_PARAM_STRING, "", false, "nvcc to use; empty: nvcc on PATH, else /usr/local/cuda/bin/nvcc."},
                   {"flags", KF_PARAM_STRING, "-O3 -std=c++17 -Xcompiler -fPIC", false,
                    "nvcc flags (split on whitespace), e.g. add -arch=sm_90."},
                   Param{"prelude", KF_PARAM_STRING, "load_inline", false,
                         "load_inline: compile as load_inline would (its includes and defines, torch's headers); "
                         "none: the source as it is."}
                       .one_of({"load_inline", "none"}),
                   {"cache_dir", KF_PARAM_STRING, "", false,
                    "Object cache; empty: $XDG_CACHE_HOME/kforge/cuda or ~/.cache/kforge/cuda."},
                   Param{"timeout_s", KF_PARAM_DURATION, "300", false, "Compile time limit; nvcc is killed after it."}
                       .above(0),
                   sandbox_param()},
                  interpreter_params());
  }
  explicit CompileCuda(const Config& cfg)
      : python_(program_param(cfg, "python")),
        nvcc_(program_param(cfg, "nvcc")),
        harness_dir_(cfg.path("harness_dir")),
        sandbox_(cfg.string("sandbox"), python_, harness_dir_),
        stage_({nvcc_, cfg.string("flags"), cfg.string("prelude"), python_, cfg.path("cache_dir"),
                cfg.number("timeout_s"), {}, harness_dir_},
               extraction_pool(cfg)) {}
  void preflight() const {
    run_start_checks({[&] { eval::locate_nvcc(nvcc_); },
                      [&] {
                        check_harness_environment(harness_settings_of(python_, harness_dir_));
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

eval::RunStage::Options run_options(const Config& cfg) {
  eval::RunStage::Options options;
  options.trials = cfg.integer("trials");
  if (cfg.has("seed")) options.seed = static_cast<uint64_t>(cfg.integer("seed"));
  if (cfg.has("rule")) {
    options.rule = nlohmann::json::parse(cfg.json("rule"));
  } else {
    options.rule = eval::tolerance_rule(cfg.string("tolerance"));
  }
  options.timing = cfg.boolean("timing");
  options.warmup = cfg.integer("warmup");
  options.timing_trials = cfg.integer("timing_trials");
  options.baseline = cfg.string("baseline");
  options.reference_max_age_s = cfg.number("reference_max_age_s");
  options.inputs_on_device = cfg.boolean("inputs_on_device");
  options.limits = child_limits(cfg);
  return options;
}

class Run : public kforge::sdk::Stage {
 public:
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
      "time it waited for its device: a timing run has it alone).";
  static constexpr uint32_t kFlags = kHarnessStageFlags;
  static std::vector<Param> params() {
    auto params = concat(concat(server_params(eval::kDeviceCpu), limit_params("60")), admission_params());
    const std::vector<Param> own = {
        Param{"trials", KF_PARAM_INT, "5", false, "Correctness trials, each with fresh inputs."}.at_least(1),
        {"seed", KF_PARAM_INT, nullptr, false,
         "The seed the harness derives the model, weight and input seeds from (with the task id). Default: the "
         "run's secret seed (runs.secret_seed in the store), so inputs and weights cannot be predicted; set it "
         "to reproduce a recorded run's inputs."},
        Param{"tolerance", KF_PARAM_STRING, "default", false,
              "Comparison preset: default (allclose atol=1e-4 rtol=3e-4 fp32, 1e-2 fp16/bf16; whole output: "
              "||c - r|| <= 5e-4 of ||r|| fp32 (1e-3 fp16, 1e-2 bf16), <= 1% of elements beyond the coarse "
              "bound), seed000 (max abs diff < 1e-3), kernelbench-v0 (allclose 1e-2), kernelbenchx (allclose "
              "atol=rtol=1e-5 fp32/fp64, 5e-3 fp16/bf16). Every preset also checks that the output "
              "reproduces how the reference's varies (max_centered_rel_error 0.25)."}
            .one_of({"default", "seed000", "kernelbench-v0", "kernelbenchx"}),
        {"rule", KF_PARAM_OBJECT, nullptr, false,
         "Comparison rule, overriding tolerance: {kind: allclose, atol, rtol} (numbers or per-dtype maps), "
         "{kind: max_abs_diff, limit}, {kind: share_over_limit, rtol, atol, max_share}; every kind also takes "
         "the whole-output checks max_rel_l2, max_centered_rel_error, max_coarse_share, coarse_atol, coarse_rtol "
         "(numbers or per-dtype maps)."},
        {"timing", KF_PARAM_BOOL, "false", false,
         "Time candidate and reference after a correct run (the device is then held exclusively)."},
        Param{"warmup", KF_PARAM_INT, "3", false, "Untimed calls before timing."}.at_least(0),
        Param{"timing_trials", KF_PARAM_INT, "20", false, "Timed calls; their median, p90, mean, std, min and max are reported."}.at_least(1),
        Param{"baseline", KF_PARAM_STRING, "eager", false, "Reference timing: eager, or compile (also torch.compile)."}
            .one_of({"eager", "compile"}),
        Param{"reference_max_age_s", KF_PARAM_DURATION, "600", false,
              "The reference is timed once per run and task, and again when its timing is older than this "
              "(metric reference_age_s: how old the one used was)."}
            .at_least(0),
        {"inputs_on_device", KF_PARAM_BOOL, "true", false,
         "Make inputs on the device (get_inputs() with the device as torch's default); false: on the host."},
        sandbox_param()};
    params.insert(params.end(), own.begin(), own.end());
    return params;
  }
  explicit Run(const Config& cfg)
      : settings_(harness_settings(cfg, true, true)),
        pool_(std::make_shared<eval::HarnessPool>(settings_)),
        sandbox_(cfg.string("sandbox"), settings_.python, settings_.harness_dir),
        stage_(pool_, run_options(cfg)),
        timing_(cfg.boolean("timing")) {}
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
