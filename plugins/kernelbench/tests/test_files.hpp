// Where the task-listing tests find the repository's tasks, and the files they write.
#pragma once

#include "tasks.hpp"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace kforge::kernelbench::testing {

inline std::string repo_dir() { return KERNELBENCH_TEST_REPO; }
inline std::string examples_dir() { return repo_dir() + "/examples/kernelbench-mini"; }
inline std::string harness_dir() { return repo_dir() + "/plugins/eval/harness"; }

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

// A fresh empty directory under the system's temporary directory.
inline std::string fresh_temp_dir(const std::string& name) {
  static std::atomic<int> counter{0};
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("kforge-kernelbench-test-" + std::to_string(::getpid()) + "-" +
                                     std::to_string(counter++) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// The bundled suite (examples/kernelbench-mini), small profile.
inline const std::vector<TaskEntry>& bundled_tasks() {
  static const std::vector<TaskEntry> tasks = [] {
    TaskListOptions options;
    options.dir = examples_dir();
    return list_tasks(options);
  }();
  return tasks;
}

}  // namespace kforge::kernelbench::testing
