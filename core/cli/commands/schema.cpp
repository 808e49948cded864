// `kforge schema [--results|--report|--records]`: the JSON Schema of the pipeline format
// (with the loaded plugins' kinds and parameters), or of an output file.
#include <fmt/format.h>

#include "command.hpp"
#include "engine/pipeline/load.hpp"
#include "engine/registry.hpp"
#include "report/schemas.hpp"

namespace kforge::cli {
namespace {

class SchemaCommand : public Command {
 public:
  explicit SchemaCommand(CLI::App& app)
      : command_(app.add_subcommand("schema", "Print a JSON Schema: of the pipeline format, or of an output file")) {
    auto* results = command_->add_flag("--results", results_, "The schema of a results.jsonl line");
    auto* report = command_->add_flag("--report", report_, "The schema of report.json");
    auto* records = command_->add_flag("--records", records_,
                                       "The schema of a records.jsonl line (kforge export --format records)");
    results->excludes(report, records);
    report->excludes(records);
  }

  bool chosen() const override { return command_->parsed(); }
  // An output file's schema is compiled in; the pipeline format's names the plugins' kinds.
  bool needs_plugins() const override { return !(results_ || report_ || records_); }

  int run(const LoadedPlugins* plugins) override {
    if (plugins == nullptr) {
      const auto which = results_  ? OutputSchema::Results
                         : report_ ? OutputSchema::Report
                                   : OutputSchema::Records;
      print_stdout(output_schema(which));
      return kExitOk;
    }
    print_stdout(fmt::format("{}\n", pipeline_json_schema(plugins->registry)));
    return plugins->ok ? kExitOk : kExitConfig;
  }

 private:
  CLI::App* command_;
  bool results_ = false;
  bool report_ = false;
  bool records_ = false;
};

}  // namespace

std::unique_ptr<Command> add_schema_command(CLI::App& app) { return std::make_unique<SchemaCommand>(app); }

}  // namespace kforge::cli
