// `kforge export DIR --format NAME`: core's records, or a plugin's exporter found by name.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "engine/registry.hpp"
#include "report/export.hpp"
#include "store/store.hpp"

namespace fs = std::filesystem;

namespace kforge::cli {
namespace {

struct ExportArgs {
  std::string dir;
  std::string format;                // empty: list the formats
  std::string to;                    // empty: the output directory
  std::vector<std::string> options;  // KEY=VALUE, handed to the exporter as a JSON object
};

// KEY=VALUE: VALUE as JSON when it is JSON (2, true, [1, 2]), else as text.
nlohmann::json parse_options(const std::vector<std::string>& options) {
  nlohmann::json object = nlohmann::json::object();
  for (const std::string& option : options) {
    const auto eq = option.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw ExportError("--option " + option + ": expected KEY=VALUE (e.g. --option level=2)");
    }
    const std::string value = option.substr(eq + 1);
    nlohmann::json parsed = nlohmann::json::parse(value, nullptr, false);
    object[option.substr(0, eq)] = parsed.is_discarded() ? nlohmann::json(value) : std::move(parsed);
  }
  return object;
}

// The formats this kforge can write, one a line: name, plugin, file, what it writes.
std::string export_formats(const Registry& registry) {
  std::string out = fmt::format("{:<16} {:<12} {}\n", kRecordsFormat, "kforge",
                                "records.jsonl: one JSON object per candidate (docs/schemas/records.schema.json)");
  for (const ExporterKind& e : registry.exporters()) {
    out += fmt::format("{:<16} {:<12} {} ({})\n", e.name, e.plugin, e.doc, e.file);
  }
  return out;
}

// Runs the export; returns the exit code (0, or 2 for what the user must change: an
// unknown format, a run the exporter refuses). Files appear only when the whole export
// succeeded: each is written beside its place and renamed into it at the end.
int run_export(const ExportArgs& args, const Registry& registry) {
  const ExporterKind* exporter = registry.exporter(args.format);
  if (args.format != kRecordsFormat && exporter == nullptr) {
    if (args.format.empty()) {
      print_stdout(export_formats(registry));
      spdlog::error("name a format with --format: one of those above");
    } else {
      spdlog::error("no export format named '{}'; this kforge has:\n{}(a plugin's format needs its plugin on the "
                    "search path: --plugin-dir or KFORGE_PLUGIN_PATH)",
                    args.format, export_formats(registry));
    }
    return kExitConfig;
  }
  if (!is_run_directory(args.dir)) return kExitConfig;
  const fs::path to = args.to.empty() ? fs::path(args.dir) : fs::path(args.to);
  // Each file is written beside its place and renamed into it once the export succeeded:
  // an exporter may refuse the run after it began to write.
  struct Pending {
    fs::path path;
    fs::path partial;
    std::unique_ptr<std::ofstream> out;
  };
  std::vector<Pending> files;
  const ExportOpen open = [&](const std::string& name) -> std::ostream& {
    fs::create_directories(to);
    Pending file{to / name, to / ("." + name + ".partial"), nullptr};
    file.out = std::make_unique<std::ofstream>(file.partial, std::ios::binary | std::ios::trunc);
    if (!*file.out) {
      throw std::runtime_error(fmt::format("cannot write '{}': {}", file.partial.string(), std::strerror(errno)));
    }
    files.push_back(std::move(file));
    return *files.back().out;
  };
  const auto discard = [&] {
    std::error_code ignored;
    for (Pending& file : files) {
      file.out.reset();
      fs::remove(file.partial, ignored);
    }
  };
  try {
    const ExportInput input = load_export_input(args.dir);
    if (exporter == nullptr) {
      if (!args.options.empty()) throw ExportError(fmt::format("the {} format takes no --option", kRecordsFormat));
      write_records(input, open);
    } else {
      write_plugin_export(*exporter, input, parse_options(args.options), open);
    }
  } catch (const ExportError& e) {
    discard();
    spdlog::error("{}", e.what());
    return kExitConfig;
  } catch (...) {
    discard();
    throw;
  }
  for (Pending& file : files) {
    file.out->close();
    if (!*file.out) {
      discard();
      throw std::runtime_error(fmt::format("cannot write '{}'", file.partial.string()));
    }
  }
  for (Pending& file : files) {
    fs::rename(file.partial, file.path);
    print_stdout(fmt::format("{}\n", file.path.string()));
  }
  return kExitOk;
}

class ExportCommand : public Command {
 public:
  explicit ExportCommand(CLI::App& app)
      : command_(app.add_subcommand("export",
                                    "Write an output directory's results in another tool's format (read-only)")) {
    command_->add_option("dir", args_.dir, "Output directory of a run (holds kforge.db)")
        ->required()
        ->check(CLI::ExistingDirectory);
    command_->add_option("--format", args_.format, "records, or a plugin's exporter (without it: the list of formats)");
    command_->add_option("--to", args_.to, "Directory to write into (default: the output directory)");
    command_->add_option("--option", args_.options, "KEY=VALUE for the exporter, e.g. --option level=2");
  }

  bool chosen() const override { return command_->parsed(); }

  int run(const LoadedPlugins* plugins) override {
    return plugins->ok ? run_export(args_, plugins->registry) : kExitConfig;
  }

 private:
  CLI::App* command_;
  ExportArgs args_;
};

}  // namespace

std::unique_ptr<Command> add_export_command(CLI::App& app) { return std::make_unique<ExportCommand>(app); }

}  // namespace kforge::cli
