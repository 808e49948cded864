#include "run_folder.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

namespace kforge::kernelbench {
namespace fs = std::filesystem;

namespace {

int parse_id(const std::string& text, const std::string& item) {
  if (text.empty() || text.size() > 9 || !std::all_of(text.begin(), text.end(), ::isdigit)) {
    throw KernelBenchError("problem '" + item + "' is not a problem id (a number, or a range like 1-10)");
  }
  return std::stoi(text);
}

// <P>_<Name>.py, as KernelBench names its problem files.
const std::regex& problem_file_pattern() {
  static const std::regex pattern(R"(^([0-9]+)_.*\.py$)");
  return pattern;
}

}  // namespace

std::vector<int> parse_problem_ids(const std::vector<std::string>& items) {
  std::set<int> ids;
  std::vector<std::string> parts;
  for (const std::string& item : items) {  // "1-3,7" from a pipeline variable: split on commas
    std::string part;
    for (char c : item + ",") {
      if (c == ',') {
        if (!part.empty()) parts.push_back(part);
        part.clear();
      } else if (c != ' ') {
        part += c;
      }
    }
  }
  for (const std::string& item : parts) {
    const auto dash = item.find('-');
    if (dash == std::string::npos) {
      ids.insert(parse_id(item, item));
      continue;
    }
    const int first = parse_id(item.substr(0, dash), item);
    const int last = parse_id(item.substr(dash + 1), item);
    if (first > last) throw KernelBenchError("problem range '" + item + "' is empty: its first id is above its last");
    for (int id = first; id <= last; ++id) ids.insert(id);
  }
  return {ids.begin(), ids.end()};
}

std::vector<Problem> list_problems(const std::string& kernelbench_dir, const std::vector<int>& levels,
                                   const std::vector<int>& ids) {
  std::error_code ec;
  if (!fs::is_directory(kernelbench_dir, ec)) {
    throw KernelBenchError("KernelBench directory '" + kernelbench_dir +
                           "' does not exist (give the folder that holds level1/, level2/, ... of a checkout)");
  }
  std::vector<Problem> problems;
  for (int level : levels) {
    const fs::path dir = fs::path(kernelbench_dir) / ("level" + std::to_string(level));
    if (!fs::is_directory(dir, ec)) {
      throw KernelBenchError("KernelBench directory '" + kernelbench_dir + "' has no level" + std::to_string(level) +
                             "/ folder");
    }
    std::map<int, Problem> by_id;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string file = entry.path().filename().string();
      std::smatch match;
      if (!entry.is_regular_file() || !std::regex_match(file, match, problem_file_pattern())) continue;
      Problem p;
      p.level = level;
      p.id = std::stoi(match[1].str());
      p.name = entry.path().stem().string();
      p.path = fs::weakly_canonical(fs::absolute(entry.path()), ec).string();
      p.task_id = "level" + std::to_string(level) + "/" + p.name;
      auto [it, fresh] = by_id.emplace(p.id, p);
      if (!fresh) {
        throw KernelBenchError("level" + std::to_string(level) + " has two files for problem " + std::to_string(p.id) +
                               ": " + it->second.path + " and " + p.path);
      }
    }
    for (int id : ids) {
      if (!by_id.count(id)) {
        throw KernelBenchError("level" + std::to_string(level) + " of '" + kernelbench_dir + "' has no problem " +
                               std::to_string(id) + " (no file " + std::to_string(id) + "_*.py in " + dir.string() + ")");
      }
    }
    for (auto& [id, problem] : by_id) {
      if (ids.empty() || std::binary_search(ids.begin(), ids.end(), id)) problems.push_back(std::move(problem));
    }
  }
  return problems;
}

std::string kernel_file(const std::string& run_dir, int level, int problem, int sample) {
  return (fs::path(run_dir) / ("level_" + std::to_string(level) + "_problem_" + std::to_string(problem) + "_sample_" +
                               std::to_string(sample) + "_kernel.py"))
      .string();
}

std::optional<KernelFileName> parse_kernel_file_name(const std::string& file_name) {
  static const std::regex pattern(R"(^level_([0-9]{1,9})_problem_([0-9]{1,9})_sample_([0-9]{1,9})_kernel\.py$)");
  std::smatch match;
  if (!std::regex_match(file_name, match, pattern)) return std::nullopt;
  return KernelFileName{std::stoi(match[1].str()), std::stoi(match[2].str()), std::stoi(match[3].str())};
}

std::vector<std::string> unmatched_kernel_files(const std::string& run_dir, const std::vector<Problem>& problems) {
  std::set<std::pair<int, int>> known;
  for (const Problem& p : problems) known.insert({p.level, p.id});
  std::vector<std::string> unmatched;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
    const auto name = parse_kernel_file_name(entry.path().filename().string());
    if (name && !known.count({name->level, name->problem})) unmatched.push_back(entry.path().filename().string());
  }
  std::sort(unmatched.begin(), unmatched.end());
  return unmatched;
}

}  // namespace kforge::kernelbench
