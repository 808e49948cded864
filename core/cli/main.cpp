// kforge: the command-line front end of the runtime. This file is only the dispatch: the
// global options, then the chosen command (one file each in commands/), its errors turned
// into exit codes.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "engine/pipeline/diagnostics.hpp"
#include "engine/registry.hpp"
#include "run/session.hpp"

using namespace kforge::cli;

int main(int argc, char** argv) {
  install_signal_handling();
  // Whole lines on stdout as they are printed: with stdout and stderr in one file (`> log
  // 2>&1`), a log line then falls between two lines of a table, never inside one (stdout
  // to a file is otherwise written in blocks, some before and some after the log lines
  // printed meanwhile).
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  CLI::App app{"kforge: run pipelines that generate, check, compile, run and time compute kernels"};
  app.set_version_flag("--version", std::string("kforge ") + KFORGE_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // global options also after the command: `kforge run X --log-level warn`
  std::string log_level = "info";
  std::vector<std::string> plugin_dirs;
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.add_option("--plugin-dir", plugin_dirs, "Extra plugin directory, searched first (repeatable)");

  std::vector<std::unique_ptr<Command>> commands;
  for (auto add : {add_run_command, add_report_command, add_compare_command, add_show_command, add_validate_command,
                   add_plugins_command, add_schema_command, add_export_command}) {
    commands.push_back(add(app));
  }

  // Usage errors are configuration errors: exit 2, as docs/cli.md says (CLI11's own codes
  // would collide with ours).
  Command* command = nullptr;
  try {
    app.parse(argc, argv);
    for (const auto& c : commands) {
      if (c->chosen()) command = c.get();
    }
    command->check();
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitConfig;
  }

  auto logger = spdlog::stderr_color_mt("kforge");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("%^[%L %H:%M:%S.%e]%$ %v");

  if (!command->needs_plugins()) {
    try {
      return command->run(nullptr);
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return kExitRuntime;
    }
  }

  kforge::Registry registry;
  const LoadedPlugins plugins{registry, load_plugins(registry, plugin_dirs)};
  try {
    return command->run(&plugins);
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
