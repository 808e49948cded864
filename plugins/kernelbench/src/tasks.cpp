#include "tasks.hpp"

#include "candidates.hpp"
#include "complexity.hpp"

#include <fnmatch.h>
#include <yaml-cpp/yaml.h>

#include <kforge/bounded_file.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

namespace kforge::kernelbench {
namespace fs = std::filesystem;
namespace {

using eval::kFormatKernelBenchX;
using eval::kTaskFormats;

const std::set<std::string> kFormats(std::begin(kTaskFormats), std::end(kTaskFormats));
const char* const kFormatList = "kernelbench-torch, kernelbench-numpy, kernelbench-mindspore or kernelbenchx";
const std::set<std::string> kCategories = {
    "Fusion", "Math", "LinearAlgebra", "Activation", "MatrixMultiply", "Reduce", "Index", "Loss",
    "Quantization", "Normalization", "Optimizer", "SpatialOps", "Convolution", "Random", "Pooling"};
const std::set<std::string> kEntryFields = {"file", "id", "name", "level", "category", "complexity", "format", "sizes"};

std::string read_text(const fs::path& path, const char* what = "task file") {
  std::string why;
  std::optional<std::string> text = read_bounded_file(path.string(), kMaxTaskFileBytes, why);
  if (!text) throw TaskListError(std::string("cannot read ") + what + " " + path.string() + ": " + why);
  return std::move(*text);
}

std::string where(const fs::path& file, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return file.string() + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// KernelBench names its files "19_ReLU.py": the display name drops the number.
std::string display_name(const std::string& id) {
  static const std::regex numbered(R"(^\d+_(.+)$)");
  std::smatch match;
  return std::regex_match(id, match, numbered) ? match[1].str() : id;
}

// A KernelBench checkout keeps levels in folders named level1, level2, ...
int level_from_dir(const fs::path& file) {
  static const std::regex level_dir(R"(^level(\d+)$)");
  std::smatch match;
  const std::string dir = file.parent_path().filename().string();
  return std::regex_match(dir, match, level_dir) ? std::stoi(match[1].str()) : 1;
}

bool included(const std::string& id, const std::vector<std::string>& include) {
  if (include.empty()) return true;
  return std::any_of(include.begin(), include.end(),
                     [&](const std::string& pattern) { return ::fnmatch(pattern.c_str(), id.c_str(), 0) == 0; });
}

// KernelBenchX keeps its tasks in one folder per category (data/kernelbenchx/Activation/gelu.py):
// the category of a file below the task directory is its folder's name.
std::string category_folder(const fs::path& file, const fs::path& dir) {
  std::error_code ec;
  const fs::path parent = fs::weakly_canonical(fs::absolute(file.parent_path()), ec);
  return parent == fs::weakly_canonical(fs::absolute(dir), ec) ? std::string() : parent.filename().string();
}

// Fills what the file itself tells: id, name, level, automatic complexity and category
// (a kernelbenchx task's category is its folder's).
TaskEntry entry_for_file(const fs::path& file, const fs::path& dir, const TaskListOptions& options,
                         const std::string& format) {
  TaskEntry entry;
  std::error_code ec;
  entry.path = fs::weakly_canonical(fs::absolute(file), ec).string();
  entry.id = file.stem().string();
  entry.name = display_name(entry.id);
  entry.level = level_from_dir(file);
  entry.format = format;
  const ComplexityEstimate estimate = estimate_complexity(read_text(file), entry.id);
  entry.complexity = estimate.complexity;
  entry.complexity_score = estimate.score;
  entry.category = estimate.category;
  entry.size_scale = options.size_scale;
  entry.fit_memory_mb = options.fit_memory_mb;
  if (format == kFormatKernelBenchX) {
    // Its test code runs as written: there are no size constants to scale or fit.
    entry.size_scale = 1.0;
    entry.fit_memory_mb = 0;
    const std::string folder = category_folder(file, dir);
    if (!folder.empty()) entry.category = folder;
  }
  return entry;
}

void apply_manifest_entry(const YAML::Node& node, const fs::path& manifest, const TaskListOptions& options,
                          TaskEntry& entry) {
  auto text = [&](const char* key) -> std::optional<std::string> {
    const YAML::Node value = node[key];
    if (!value) return std::nullopt;
    if (!value.IsScalar()) throw TaskListError(where(manifest, value) + ": '" + key + "' must be a scalar");
    return value.as<std::string>();
  };
  if (auto id = text("id")) entry.id = *id;
  entry.name = text("name").value_or(display_name(entry.id));
  if (const YAML::Node level = node["level"]) {
    try {
      entry.level = level.as<int>();
    } catch (const YAML::Exception&) {
      throw TaskListError(where(manifest, level) + ": level must be an integer");
    }
  }
  if (auto category = text("category")) {
    if (kCategories.count(*category) == 0) {
      std::string known;
      for (const std::string& name : kCategories) known += (known.empty() ? "" : ", ") + name;
      throw TaskListError(where(manifest, node["category"]) + ": unknown category '" + *category +
                          "' (one of: " + known + ")");
    }
    entry.category = *category;
  }
  if (auto complexity = text("complexity")) {
    static const std::regex cls(R"(^C[1-4]$)");
    if (!std::regex_match(*complexity, cls)) {
      throw TaskListError(where(manifest, node["complexity"]) + ": complexity must be C1, C2, C3 or C4, got '" +
                          *complexity + "'");
    }
    entry.complexity = *complexity;
  }
  if (const YAML::Node sizes = node["sizes"]) {
    if (entry.format == kFormatKernelBenchX) {
      throw TaskListError(where(manifest, sizes) + ": a kernelbenchx task runs its test code as written: it takes no sizes");
    }
    if (!sizes.IsMap()) throw TaskListError(where(manifest, sizes) + ": sizes must map profiles to {name: int}");
    if (const YAML::Node chosen = sizes[options.profile]) {
      if (!chosen.IsMap()) throw TaskListError(where(manifest, chosen) + ": sizes." + options.profile + " must be a map");
      for (const auto& item : chosen) {
        try {
          entry.sizes[item.first.as<std::string>()] = item.second.as<int64_t>();
        } catch (const YAML::Exception&) {
          throw TaskListError(where(manifest, item.second) + ": size '" + item.first.as<std::string>() +
                              "' must be an integer");
        }
      }
      // Sizes chosen by hand for the profile are final: scaling and fitting apply to the others.
      entry.size_scale = 1.0;
      entry.fit_memory_mb = 0;
    }
  }
}

std::vector<fs::path> task_files(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(dir, ec)) {
    if (item.is_regular_file() && item.path().extension() == ".py" && item.path().filename() != "__init__.py") {
      files.push_back(item.path());
    }
  }
  return files;
}

std::vector<TaskEntry> from_manifest(const fs::path& manifest, const TaskListOptions& options) {
  YAML::Node root;
  try {
    root = YAML::Load(read_text(manifest, "manifest"));
  } catch (const YAML::ParserException& e) {
    throw TaskListError(manifest.string() + ":" + std::to_string(e.mark.line + 1) + ":" +
                        std::to_string(e.mark.column + 1) + ": " + e.msg);
  } catch (const YAML::Exception& e) {
    throw TaskListError("cannot read manifest " + manifest.string() + ": " + e.what());
  }
  const YAML::Node tasks = root["tasks"];
  if (!tasks || !tasks.IsSequence()) throw TaskListError(manifest.string() + ": expected a top-level 'tasks' list");
  std::vector<TaskEntry> entries;
  std::set<std::string> ids;
  for (const YAML::Node& node : tasks) {
    if (!node.IsMap()) throw TaskListError(where(manifest, node) + ": each task is a map with at least 'file'");
    for (const auto& field : node) {
      const std::string key = field.first.as<std::string>();
      if (kEntryFields.count(key) == 0) {
        throw TaskListError(where(manifest, field.first) + ": unknown field '" + key +
                            "' (fields: file, id, name, level, category, complexity, format, sizes)");
      }
    }
    const YAML::Node file = node["file"];
    if (!file || !file.IsScalar()) throw TaskListError(where(manifest, node) + ": the task has no 'file'");
    const fs::path path = manifest.parent_path() / file.as<std::string>();
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      throw TaskListError(where(manifest, file) + ": task file " + path.string() + " does not exist");
    }
    std::string format = options.format;
    if (const YAML::Node given = node["format"]) {
      if (!given.IsScalar() || kFormats.count(given.as<std::string>()) == 0) {
        throw TaskListError(where(manifest, given) + ": format must be " + kFormatList);
      }
      format = given.as<std::string>();
    }
    TaskEntry entry = entry_for_file(path, manifest.parent_path(), options, format);
    apply_manifest_entry(node, manifest, options, entry);
    if (!ids.insert(entry.id).second) throw TaskListError(where(manifest, node) + ": duplicate task id '" + entry.id + "'");
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i_end = i, j_end = j;
      while (i_end < a.size() && std::isdigit(static_cast<unsigned char>(a[i_end]))) ++i_end;
      while (j_end < b.size() && std::isdigit(static_cast<unsigned char>(b[j_end]))) ++j_end;
      // Compare numerically without overflow: strip leading zeros, then length, then digits.
      std::string_view x(a.data() + i, i_end - i), y(b.data() + j, j_end - j);
      x.remove_prefix(std::min(x.find_first_not_of('0'), x.size()));
      y.remove_prefix(std::min(y.find_first_not_of('0'), y.size()));
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i_end;
      j = j_end;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j || (a.size() - i == b.size() - j && a < b);
}

std::vector<TaskEntry> list_tasks(const TaskListOptions& options) {
  if (options.profile != "small" && options.profile != "full") {
    throw TaskListError("profile must be small or full, got '" + options.profile + "'");
  }
  if (!(options.size_scale > 0)) throw TaskListError("size_scale must be > 0");
  if (!(options.fit_memory_mb >= 0)) {
    throw TaskListError("fit_memory_mb must be >= 0 (0: run tasks at their own sizes)");
  }
  if (options.limit < 0) throw TaskListError("limit must be >= 0 (0: all tasks)");
  if (kFormats.count(options.format) == 0) {
    throw TaskListError(std::string("format must be ") + kFormatList + ", got '" + options.format + "'");
  }
  if (options.format == kFormatKernelBenchX && (options.size_scale != 1.0 || options.fit_memory_mb != 0)) {
    throw TaskListError("kernelbenchx tasks run their test code as written: size_scale and fit_memory_mb do not apply");
  }
  const fs::path dir(options.dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw TaskListError("task directory " + dir.string() + " does not exist");
  if (!options.with_candidates_in.empty() && !fs::is_directory(options.with_candidates_in, ec)) {
    throw TaskListError("candidate directory " + options.with_candidates_in + " (with_candidates) does not exist");
  }

  std::vector<TaskEntry> all;
  const fs::path manifest = options.manifest.empty() ? fs::path() : dir / options.manifest;
  if (!manifest.empty() && fs::exists(manifest, ec)) {
    all = from_manifest(manifest, options);
  } else {
    if (!options.manifest.empty() && options.manifest != "manifest.yaml") {
      throw TaskListError("manifest " + manifest.string() + " does not exist");
    }
    std::vector<fs::path> files = task_files(dir);
    if (options.format == kFormatKernelBenchX) {
      // A KernelBenchX checkout's data/kernelbenchx: one folder per category.
      for (const auto& item : fs::directory_iterator(dir, ec)) {
        if (!item.is_directory()) continue;
        for (fs::path& file : task_files(item.path())) files.push_back(std::move(file));
      }
    }
    std::sort(files.begin(), files.end(), [&](const fs::path& a, const fs::path& b) {
      return natural_less(fs::relative(a, dir, ec).string(), fs::relative(b, dir, ec).string());
    });
    std::set<std::string> ids;
    for (const fs::path& file : files) {
      all.push_back(entry_for_file(file, dir, options, options.format));
      if (!ids.insert(all.back().id).second) {
        throw TaskListError("two task files are named " + file.filename().string() + " (the second: " + file.string() +
                            "): task ids are file names, so they must be unique; list them in a manifest with ids");
      }
    }
  }

  std::vector<TaskEntry> chosen;
  for (TaskEntry& entry : all) {
    if (!included(entry.id, options.include)) continue;
    if (!options.with_candidates_in.empty() &&
        candidate_files(options.with_candidates_in, entry.path, entry.id).empty()) {
      continue;
    }
    chosen.push_back(std::move(entry));
    if (options.limit > 0 && static_cast<int64_t>(chosen.size()) == options.limit) break;
  }
  return chosen;
}

}  // namespace kforge::kernelbench
