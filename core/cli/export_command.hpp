// `kforge export DIR --format NAME`: core's records, or a plugin's exporter found by name.
#pragma once

#include <string>
#include <vector>

namespace kforge {
class Registry;
}

namespace kforge::cli {

struct ExportArgs {
  std::string dir;
  std::string format;                // empty: list the formats
  std::string to;                    // empty: the output directory
  std::vector<std::string> options;  // KEY=VALUE, handed to the exporter as a JSON object
};

// The formats this kforge can write, one a line: name, plugin, file, what it writes.
std::string export_formats(const Registry& registry);

// Runs the export; returns the exit code (0, or 2 for what the user must change: an
// unknown format, a run the exporter refuses). Files appear only when the whole export
// succeeded: each is written beside its place and renamed into it at the end.
int run_export(const ExportArgs& args, const Registry& registry);

}  // namespace kforge::cli
