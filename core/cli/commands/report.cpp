// `kforge report DIR`: the report of a run's output directory, tables on stdout and files into it.
#include "command.hpp"
#include "report_options.hpp"
#include "engine/registry.hpp"

namespace kforge::cli {
namespace {

class ReportCommand : public Command {
 public:
  explicit ReportCommand(CLI::App& app)
      : command_(app.add_subcommand("report", "Report on an output directory: tables on stdout, files into it")) {
    command_->add_option("dir", dir_, "Output directory of a run (holds kforge.db)")
        ->required()
        ->check(CLI::ExistingDirectory);
    report_options_.emplace(command_, "--format");
  }

  bool chosen() const override { return command_->parsed(); }
  void check() override { report_options_->check(); }

  int run(const LoadedPlugins* plugins) override {
    // The plugins' report sections add their tables: a half-loaded set would leave some out.
    if (!plugins->ok) return kExitConfig;
    if (!is_run_directory(dir_)) return kExitConfig;
    return report_and_gate(load_report(dir_, &plugins->registry), dir_, *report_options_, ReportFor::Reader);
  }

 private:
  CLI::App* command_;
  std::string dir_;
  std::optional<ReportOptions> report_options_;
};

}  // namespace

std::unique_ptr<Command> add_report_command(CLI::App& app) { return std::make_unique<ReportCommand>(app); }

}  // namespace kforge::cli
