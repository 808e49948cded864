// What the kforge command's subcommands share: the exit codes, the interface main.cpp
// dispatches through, and the helpers more than one command uses. Each command is one file
// of commands/ that adds its options to the CLI11 app and runs once they are parsed.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "engine/pipeline/load.hpp"
#include "signals.hpp"

namespace kforge {
class Registry;
}

namespace kforge::cli {

// Exit codes, documented in docs/cli.md.
inline constexpr int kExitOk = 0;
inline constexpr int kExitThresholds = 1;
inline constexpr int kExitConfig = 2;
inline constexpr int kExitRuntime = 3;

// The plugins, loaded for the commands that need them once the options are parsed. `ok` is
// false when a plugin on the search path did not load (already logged).
struct LoadedPlugins {
  const Registry& registry;
  bool ok;
};

class Command {
 public:
  virtual ~Command() = default;
  // Whether the user chose this command.
  virtual bool chosen() const = 0;
  // Checks of the parsed values that CLI11 cannot make; throws CLI::ValidationError, which
  // exits 2 with CLI11's usage message, as a parse error does.
  virtual void check() {}
  // Whether run() reads the plugins. A command that does not need them runs before they
  // load (`kforge show` in a directory without plugins); its exceptions exit 3.
  virtual bool needs_plugins() const { return true; }
  // Does the command; returns its exit code. `plugins` is null when needs_plugins() is
  // false. Exceptions: ConfigError exits 2 with its diagnostics, RunSetupError exits 2,
  // anything else exits 3 (main.cpp).
  virtual int run(const LoadedPlugins* plugins) = 0;
};

// One function per file of commands/, called by main.cpp in the order `kforge --help`
// lists the commands: each adds its subcommand to `app`.
std::unique_ptr<Command> add_run_command(CLI::App& app);
std::unique_ptr<Command> add_report_command(CLI::App& app);
std::unique_ptr<Command> add_compare_command(CLI::App& app);
std::unique_ptr<Command> add_show_command(CLI::App& app);
std::unique_ptr<Command> add_validate_command(CLI::App& app);
std::unique_ptr<Command> add_plugins_command(CLI::App& app);
std::unique_ptr<Command> add_schema_command(CLI::App& app);
std::unique_ptr<Command> add_export_command(CLI::App& app);

// ---- shared by several commands (command.cpp)

// CLI11's number checks let NaN through (every comparison with it is false): a NaN
// interval would print progress lines without pause, a NaN threshold never fire.
extern const CLI::Validator kFinite;

// Loads every plugin of `extra_dirs`, then of the default search path, into `registry`; a
// plugin that does not load is logged as an error and makes the result false.
bool load_plugins(Registry& registry, const std::vector<std::string>& extra_dirs);

// `--set` arguments, NAME=value or STAGE.PARAM=value; throws ConfigError for one without '='.
Overrides parse_overrides(const std::vector<std::string>& sets);

// Whether `out_dir` holds a run store; when not, logs that it is not a run's --out directory.
bool is_run_directory(const std::string& out_dir);

}  // namespace kforge::cli
