// `kforge compare DIR...`: strategies (one output directory each) side by side.
#include <spdlog/spdlog.h>

#include "command.hpp"
#include "report/environment.hpp"
#include "report/report.hpp"

namespace kforge::cli {
namespace {

class CompareCommand : public Command {
 public:
  explicit CompareCommand(CLI::App& app)
      : command_(app.add_subcommand("compare",
                                    "Strategies side by side: pass rate, time, cost, pass rate per class")) {
    command_->add_option("dirs", dirs_, "Output directories, one per strategy")
        ->required()
        ->check(CLI::ExistingDirectory);
    command_->add_option("--format", format_, "text or md")->check(CLI::IsMember({"text", "md"}));
  }

  bool chosen() const override { return command_->parsed(); }
  bool needs_plugins() const override { return false; }

  int run(const LoadedPlugins*) override {
    std::vector<Metrics> strategies;
    for (const auto& dir : dirs_) {
      if (!is_run_directory(dir)) return kExitConfig;
      strategies.push_back(load_report(dir).metrics);
    }
    const Table table = comparison_table(strategies);
    if (format_ == "md") {
      print_stdout(render_markdown_tables({table}));
    } else {
      print_stdout(render_text({table}));
    }
    for (const auto& difference : environment_mismatches(strategies)) spdlog::warn("{}", difference);
    return kExitOk;
  }

 private:
  CLI::App* command_;
  std::vector<std::string> dirs_;
  std::string format_ = "text";
};

}  // namespace

std::unique_ptr<Command> add_compare_command(CLI::App& app) { return std::make_unique<CompareCommand>(app); }

}  // namespace kforge::cli
