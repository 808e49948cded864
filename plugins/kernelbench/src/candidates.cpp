#include "candidates.hpp"

#include <algorithm>
#include <filesystem>

namespace kforge::kernelbench {
namespace fs = std::filesystem;

std::vector<CandidateFile> candidate_files(const std::string& dir, const std::string& task_path,
                                           const std::string& task_id) {
  const fs::path root(dir);
  const fs::path task_file = fs::path(task_path).filename();
  const std::string stem = task_file.stem().string();
  std::error_code ec;
  auto file = [&](const fs::path& name) -> std::optional<std::string> {
    const fs::path full = root / name;
    if (!fs::is_regular_file(full, ec)) return std::nullopt;
    return fs::weakly_canonical(fs::absolute(full), ec).string();
  };

  std::vector<CandidateFile> found;
  if (auto primary = file(task_file)) {
    found.push_back({*primary, ""});
  } else if (auto by_id = file(task_id + ".py")) {
    found.push_back({*by_id, ""});
  }
  for (int n = 1;; ++n) {
    auto numbered = file(stem + "." + std::to_string(n) + ".py");
    if (!numbered) break;
    found.push_back({*numbered, ""});
  }
  std::vector<CandidateFile> tagged;
  const std::string suffix = "__" + task_file.string();
  for (const auto& item : fs::directory_iterator(root, ec)) {
    const std::string name = item.path().filename().string();
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        item.is_regular_file()) {
      tagged.push_back({fs::weakly_canonical(fs::absolute(item.path()), ec).string(),
                        name.substr(0, name.size() - suffix.size())});
    }
  }
  std::sort(tagged.begin(), tagged.end(), [](const auto& a, const auto& b) { return a.tag < b.tag; });
  found.insert(found.end(), tagged.begin(), tagged.end());
  return found;
}

std::optional<CandidateFile> candidate_for_sample(const std::string& dir, const std::string& task_path,
                                                  const std::string& task_id, int sample, std::string& why) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    why = "candidate directory " + dir + " does not exist";
    return std::nullopt;
  }
  const std::vector<CandidateFile> files = candidate_files(dir, task_path, task_id);
  if (sample >= 0 && static_cast<size_t>(sample) < files.size()) return files[static_cast<size_t>(sample)];
  const std::string task_file = fs::path(task_path).filename().string();
  why = "no candidate file for task " + task_id + " sample " + std::to_string(sample) + " in " + dir +
        " (looked for " + task_file + " or " + task_id + ".py, " + fs::path(task_file).stem().string() +
        ".N.py and TAG__" + task_file + "; found " + std::to_string(files.size()) + ")";
  return std::nullopt;
}

}  // namespace kforge::kernelbench
