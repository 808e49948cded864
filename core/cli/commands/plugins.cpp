// `kforge plugins list` and `kforge plugins describe KIND`: what the loaded plugins register.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "command.hpp"
#include "engine/job.hpp"
#include "engine/param_types.hpp"
#include "engine/registry.hpp"

namespace kforge::cli {
namespace {

// "one of: a, b", ">= 1", "> 0, <= 1": what a parameter accepts beyond its type.
std::string constraints_text(const ParamSpec& p) {
  std::vector<std::string> parts;
  if (!p.choices.empty()) parts.push_back(fmt::format("one of: {}", fmt::join(p.choices, ", ")));
  if (p.range & KF_RANGE_MIN) {
    parts.push_back(fmt::format("{} {:g}", (p.range & KF_RANGE_MIN_EXCLUSIVE) ? ">" : ">=", p.min));
  }
  if (p.range & KF_RANGE_MAX) {
    parts.push_back(fmt::format("{} {:g}", (p.range & KF_RANGE_MAX_EXCLUSIVE) ? "<" : "<=", p.max));
  }
  return parts.empty() ? "" : fmt::format(" ({})", fmt::join(parts, ", "));
}

void print_params(const std::vector<ParamSpec>& params) {
  if (params.empty()) {
    print_stdout("  (no parameters)\n");
    return;
  }
  for (const ParamSpec& p : params) {
    std::string def =
        p.required ? "required" : (p.default_value ? fmt::format("default: {}", *p.default_value) : "optional");
    const std::string former =
        p.former_names.empty() ? "" : fmt::format(" (formerly {})", fmt::join(p.former_names, ", "));
    print_stdout(fmt::format("  {:<20} {:<13} {}{}{}\n      {}\n", p.name, param_type(p.type)->name, def,
                             constraints_text(p), former, p.doc));
  }
}

int list_kinds(const LoadedPlugins& plugins) {
  const Registry& registry = plugins.registry;
  const auto row = [](const std::string& name, const char* type, const std::string& plugin, const std::string& file) {
    print_stdout(fmt::format("{:<24} {:<8} {:<12} {}\n", name, type, plugin, file));
  };
  print_stdout(fmt::format("{:<24} {:<8} {:<12} {}\n", "KIND", "TYPE", "PLUGIN", "FILE"));
  for (const auto& s : registry.sources()) row(s.name, "source", s.plugin, s.file);
  for (const auto& s : registry.stages()) row(s.name, s.waits() ? "waits" : "stage", s.plugin, s.file);
  for (const auto& e : registry.exporters()) row(e.name, "exporter", e.plugin, e.file);
  for (const auto& r : registry.report_sections()) row(r.name, "report", r.plugin, r.file);
  return plugins.ok ? kExitOk : kExitConfig;
}

int describe_kind(const Registry& registry, const std::string& kind_name) {
  if (const auto* s = registry.stage(kind_name)) {
    print_stdout(
        fmt::format("{} (stage kind, plugin {} {}, {})\n{}\n", s->name, s->plugin, s->version, s->file, s->doc));
    print_stdout(fmt::format("role: {}\n", to_string(s->role)));
    print_stdout(fmt::format("runs on: {}\n",
                             s->waits() ? "its own threads (waits on I/O or processes)" : "TBB worker threads"));
    std::string routes = "pass, fail, error";
    for (const std::string& route : s->routes) routes += ", " + route;
    print_stdout(fmt::format("routes: {}\nparameters:\n", routes));
    print_params(s->params);
    return kExitOk;
  }
  if (const auto* s = registry.source(kind_name)) {
    print_stdout(fmt::format("{} (task source kind, plugin {} {}, {})\n{}\nparameters:\n", s->name, s->plugin,
                             s->version, s->file, s->doc));
    print_params(s->params);
    return kExitOk;
  }
  std::string hint;
  auto close = registry.closest(kind_name, false);
  for (auto& c : registry.closest(kind_name, true)) close.push_back(c);
  if (!close.empty()) hint = "; did you mean '" + close.front() + "'?";
  spdlog::error("no stage or source kind named '{}'{} (see `kforge plugins list`)", kind_name, hint);
  return kExitConfig;
}

class PluginsCommand : public Command {
 public:
  explicit PluginsCommand(CLI::App& app) : command_(app.add_subcommand("plugins", "Inspect the loaded plugins")) {
    command_->require_subcommand(1);
    list_ = command_->add_subcommand(
        "list", "List plugins and what they register: stage and source kinds, exporters, report sections");
    describe_ = command_->add_subcommand("describe", "Show a stage or source kind's parameters");
    describe_->add_option("kind", kind_name_, "Kind name, e.g. demo.sleep")->required();
  }

  bool chosen() const override { return command_->parsed(); }

  int run(const LoadedPlugins* plugins) override {
    if (list_->parsed()) return list_kinds(*plugins);
    return describe_kind(plugins->registry, kind_name_);
  }

 private:
  CLI::App* command_;
  CLI::App* list_;
  CLI::App* describe_;
  std::string kind_name_;
};

}  // namespace

std::unique_ptr<Command> add_plugins_command(CLI::App& app) { return std::make_unique<PluginsCommand>(app); }

}  // namespace kforge::cli
