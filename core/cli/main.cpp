// kforge: the command-line front end of the runtime.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <tbb/global_control.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <unistd.h>

#include "executor.hpp"
#include "host.hpp"
#include "pipeline.hpp"
#include "registry.hpp"
#include "results.hpp"

namespace fs = std::filesystem;

namespace {

// Exit codes, documented in docs/cli.md.
constexpr int kExitOk = 0;
constexpr int kExitConfig = 2;
constexpr int kExitRuntime = 3;
constexpr int kExitInterrupted = 130;

void on_signal(int) {
  // First signal: stop intake and let running work finish. Second: leave now.
  if (kforge::cancel_requested()) _exit(kExitInterrupted);
  kforge::request_cancel();
}

const char* type_name(kf_param_type type) {
  switch (type) {
    case KF_PARAM_STRING:
      return "string";
    case KF_PARAM_INT:
      return "int";
    case KF_PARAM_FLOAT:
      return "float";
    case KF_PARAM_BOOL:
      return "bool";
    case KF_PARAM_STRING_LIST:
      return "list<string>";
    case KF_PARAM_OBJECT:
      return "object";
  }
  return "?";
}

// Loads every plugin on the search path; a plugin that does not load is an error.
bool load_plugins(kforge::Registry& registry, const std::vector<std::string>& extra_dirs) {
  std::vector<std::string> dirs = extra_dirs;
  for (auto& d : kforge::default_plugin_path()) dirs.push_back(d);
  const auto problems = registry.discover(dirs);
  for (const auto& p : problems) spdlog::error("{}", p);
  if (dirs.empty()) spdlog::warn("no plugin directory found; set KFORGE_PLUGIN_PATH");
  return problems.empty();
}

kforge::Overrides parse_overrides(const std::vector<std::string>& sets) {
  kforge::Overrides overrides;
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw CLI::ValidationError("--set", "expected key=value, got '" + s + "'");
    }
    overrides.values[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return overrides;
}

void print_params(const kf_param_spec* params, uint32_t count) {
  if (count == 0) {
    fmt::print("  (no parameters)\n");
    return;
  }
  for (uint32_t i = 0; i < count; ++i) {
    const kf_param_spec& p = params[i];
    std::string def = p.required ? "required" : (p.default_value ? fmt::format("default: {}", p.default_value) : "optional");
    fmt::print("  {:<20} {:<13} {}\n      {}\n", p.name, type_name(p.type), def, p.doc ? p.doc : "");
  }
}

std::string default_out_dir(const kforge::PipelineSpec& pipeline) {
  return (fs::path("kforge-out") / pipeline.name).string();
}

int print_summary(const kforge::RunSummary& s, const std::string& out_dir) {
  fmt::print("\n{} tasks, {} jobs: {} passed, {} failed, {} errors", s.tasks, s.jobs, s.passed,
             s.failed, s.errors);
  if (s.skipped) fmt::print(", {} skipped", s.skipped);
  if (s.unfinished) fmt::print(", {} unfinished", s.unfinished);
  fmt::print(" in {:.2f} s\nresults: {}/results.jsonl\n", s.seconds, out_dir);
  if (s.cancelled) {
    fmt::print("interrupted: results of finished jobs are saved\n");
    return kExitInterrupted;
  }
  if (!s.source_error.empty()) return kExitRuntime;
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge: run pipelines that generate, check, compile, run and time compute kernels"};
  app.set_version_flag("--version", std::string("kforge ") + KFORGE_VERSION);
  app.require_subcommand(1);
  std::string log_level = "info";
  std::vector<std::string> plugin_dirs;
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.add_option("--plugin-dir", plugin_dirs, "Extra plugin directory, searched first (repeatable)");

  std::string pipeline_path;
  std::vector<std::string> sets;
  int jobs = 0;
  int max_in_flight = 0;
  std::string out_dir;

  auto* run = app.add_subcommand("run", "Run a pipeline");
  run->add_option("pipeline", pipeline_path, "Pipeline YAML file")->required()->check(CLI::ExistingFile);
  run->add_option("--jobs,-j", jobs, "Worker threads for CPU stages (default: all cores)")->check(CLI::PositiveNumber);
  run->add_option("--set", sets, "Override: NAME=value sets a variable, STAGE.PARAM=value a stage parameter");
  run->add_option("--out,-o", out_dir, "Output directory (default: kforge-out/<pipeline name>)");
  run->add_option("--max-in-flight", max_in_flight, "Jobs inside the graph at once (overrides the pipeline)")
      ->check(CLI::PositiveNumber);

  auto* validate = app.add_subcommand("validate", "Check a pipeline without running anything");
  validate->add_option("pipeline", pipeline_path, "Pipeline YAML file")->required()->check(CLI::ExistingFile);
  validate->add_option("--set", sets, "Override, as for run");

  auto* plugins = app.add_subcommand("plugins", "Inspect the loaded plugins");
  plugins->require_subcommand(1);
  auto* list = plugins->add_subcommand("list", "List plugins and the stage and source kinds they register");
  std::string kind_name;
  auto* describe = plugins->add_subcommand("describe", "Show a stage or source kind's parameters");
  describe->add_option("kind", kind_name, "Kind name, e.g. demo.sleep")->required();

  auto* schema = app.add_subcommand("schema", "Print the JSON Schema of the pipeline format");

  CLI11_PARSE(app, argc, argv);

  auto logger = spdlog::stderr_color_mt("kforge");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("%^[%L %H:%M:%S.%e]%$ %v");

  kforge::Registry registry;
  const bool plugins_ok = load_plugins(registry, plugin_dirs);

  try {
    if (*list) {
      fmt::print("{:<24} {:<8} {:<12} {}\n", "KIND", "TYPE", "PLUGIN", "FILE");
      for (const auto& s : registry.sources()) fmt::print("{:<24} {:<8} {:<12} {}\n", s.name, "source", s.plugin, s.file);
      for (const auto& s : registry.stages()) {
        fmt::print("{:<24} {:<8} {:<12} {}\n", s.name, (s.abi->flags & KF_STAGE_WAITS) ? "waits" : "stage", s.plugin, s.file);
      }
      return plugins_ok ? kExitOk : kExitConfig;
    }
    if (*describe) {
      if (const auto* s = registry.stage(kind_name)) {
        fmt::print("{} (stage kind, plugin {}, {})\n{}\n", s->name, s->plugin, s->file, s->abi->doc ? s->abi->doc : "");
        fmt::print("runs on: {}\n", (s->abi->flags & KF_STAGE_WAITS) ? "its own threads (waits on I/O or processes)" : "TBB worker threads");
        std::string routes = "pass, fail, error";
        for (uint32_t i = 0; i < s->abi->route_count; ++i) routes += std::string(", ") + s->abi->routes[i];
        fmt::print("routes: {}\nparameters:\n", routes);
        print_params(s->abi->params, s->abi->param_count);
        return kExitOk;
      }
      if (const auto* s = registry.source(kind_name)) {
        fmt::print("{} (task source kind, plugin {}, {})\n{}\nparameters:\n", s->name, s->plugin, s->file,
                   s->abi->doc ? s->abi->doc : "");
        print_params(s->abi->params, s->abi->param_count);
        return kExitOk;
      }
      std::string hint;
      auto close = registry.closest(kind_name, false);
      for (auto& c : registry.closest(kind_name, true)) close.push_back(c);
      if (!close.empty()) hint = "; did you mean '" + close.front() + "'?";
      spdlog::error("no stage or source kind named '{}'{} (see `kforge plugins list`)", kind_name, hint);
      return kExitConfig;
    }
    if (*schema) {
      fmt::print("{}\n", kforge::pipeline_json_schema(registry));
      return plugins_ok ? kExitOk : kExitConfig;
    }

    if (!plugins_ok) return kExitConfig;
    const kforge::PipelineSpec pipeline = kforge::load_pipeline(pipeline_path, registry, parse_overrides(sets));
    if (*validate) {
      fmt::print("{}: ok ({} stages)\n", pipeline_path, pipeline.stages.size());
      return kExitOk;
    }

    // run
    if (out_dir.empty()) out_dir = default_out_dir(pipeline);
    fs::create_directories(out_dir);
    std::optional<tbb::global_control> threads;
    if (jobs > 0) threads.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(jobs));
    kforge::Executor executor(registry, pipeline);
    kforge::ResultsWriter results((fs::path(out_dir) / "results.jsonl").string());
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    kforge::RunOptions options;
    options.max_in_flight = max_in_flight;
    spdlog::info("running '{}' ({} stages, k={}) into {}", pipeline.name, pipeline.stages.size(), pipeline.k, out_dir);
    const kforge::RunSummary summary = executor.run(results, options);
    return print_summary(summary, out_dir);
  } catch (const kforge::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitConfig;
  } catch (const kforge::RunSetupError& e) {
    spdlog::error("{}", e.what());
    return kExitConfig;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitRuntime;
  }
}
