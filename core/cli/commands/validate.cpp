// `kforge validate PIPELINE`: everything `run` checks before its first job, except what
// needs the run's environment.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "command.hpp"
#include "engine/executor.hpp"
#include "engine/registry.hpp"

namespace kforge::cli {
namespace {

class ValidateCommand : public Command {
 public:
  explicit ValidateCommand(CLI::App& app)
      : command_(app.add_subcommand("validate", "Check a pipeline without running anything")) {
    command_->add_option("pipeline", pipeline_path_, "Pipeline YAML file")->required();
    command_->add_option("--set", sets_, "Override, as for run");
  }

  bool chosen() const override { return command_->parsed(); }

  int run(const LoadedPlugins* plugins) override {
    if (!plugins->ok) return kExitConfig;
    const Plan pipeline = load_pipeline(pipeline_path_, plugins->registry, parse_overrides(sets_));
    // Create and destroy every stage: what the stages' own constructors refuse, run would too.
    Executor dry_run(pipeline);
    print_stdout(fmt::format("{}: ok ({} stages)\n", pipeline_path_, pipeline.stages.size()));
    // Their run-start checks need the run's environment (API keys, programs on PATH): say
    // which were left to `run`, so an ok here is not read as more than it is.
    std::vector<std::string> deferred;
    if (pipeline.source.kind->preflight != nullptr) deferred.push_back("tasks (" + pipeline.source.kind->name + ")");
    for (const StagePlan& stage : pipeline.stages) {
      if (stage.kind->preflight != nullptr) deferred.push_back(fmt::format("{} ({})", stage.id, stage.kind->name));
    }
    if (!deferred.empty()) {
      print_stdout(fmt::format("not checked here: what the run's environment must provide (API keys, programs on "
                               "PATH), which `kforge run` checks before the first job, for: {}\n",
                               fmt::join(deferred, ", ")));
    }
    return kExitOk;
  }

 private:
  CLI::App* command_;
  std::string pipeline_path_;
  std::vector<std::string> sets_;
};

}  // namespace

std::unique_ptr<Command> add_validate_command(CLI::App& app) { return std::make_unique<ValidateCommand>(app); }

}  // namespace kforge::cli
