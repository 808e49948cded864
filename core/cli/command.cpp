#include "command.hpp"

#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>

#include "engine/registry.hpp"
#include "store/store.hpp"

namespace kforge::cli {

const CLI::Validator kFinite(
    [](const std::string& text) {
      double value = 0;
      return CLI::detail::lexical_cast(text, value) && std::isfinite(value)
                 ? std::string()
                 : "must be a finite number, got " + text;
    },
    "FINITE");

bool load_plugins(Registry& registry, const std::vector<std::string>& extra_dirs) {
  std::vector<std::string> dirs = extra_dirs;
  for (auto& d : default_plugin_path()) dirs.push_back(d);
  const auto problems = registry.discover(dirs);
  for (const auto& p : problems) spdlog::error("{}", p);
  if (dirs.empty()) spdlog::warn("no plugin directory found; set KFORGE_PLUGIN_PATH");
  return problems.empty();
}

Overrides parse_overrides(const std::vector<std::string>& sets) {
  Overrides overrides;
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      // Reported as every pipeline problem is: where (the argument), then what to write.
      throw ConfigError({{{"--set " + s, 0, 0},
                          "expected NAME=value (a variable) or STAGE.PARAM=value (a stage parameter)", ""}});
    }
    overrides.values[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return overrides;
}

bool is_run_directory(const std::string& out_dir) {
  if (std::filesystem::exists(std::filesystem::path(out_dir) / kStoreFileName)) return true;
  spdlog::error("'{}' has no {}: is it the --out directory of a kforge run?", out_dir, kStoreFileName);
  return false;
}

}  // namespace kforge::cli
