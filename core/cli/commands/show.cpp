// `kforge show DIR TASK [SAMPLE]`: a task's candidates round by round.
#include <spdlog/spdlog.h>

#include <optional>

#include "command.hpp"
#include "report/show.hpp"

namespace kforge::cli {
namespace {

class ShowCommand : public Command {
 public:
  explicit ShowCommand(CLI::App& app)
      : command_(app.add_subcommand(
            "show", "A task's candidates: code per round, diffs, verdicts, logs, timings, model, cost")) {
    command_->add_option("dir", dir_, "Output directory of a run (holds kforge.db)")
        ->required()
        ->check(CLI::ExistingDirectory);
    command_->add_option("task", task_, "Task id, as in the report's task table")->required();
    command_->add_option("sample", sample_, "Only this sample (default: every candidate of the task)")
        ->check(CLI::NonNegativeNumber);
  }

  bool chosen() const override { return command_->parsed(); }
  bool needs_plugins() const override { return false; }

  int run(const LoadedPlugins*) override {
    if (!is_run_directory(dir_)) return kExitConfig;
    try {
      print_stdout(render_show(dir_, task_, sample_));
    } catch (const ShowError& e) {
      spdlog::error("{}", e.what());
      return kExitConfig;
    }
    return kExitOk;
  }

 private:
  CLI::App* command_;
  std::string dir_;
  std::string task_;
  std::optional<int> sample_;
};

}  // namespace

std::unique_ptr<Command> add_show_command(CLI::App& app) { return std::make_unique<ShowCommand>(app); }

}  // namespace kforge::cli
