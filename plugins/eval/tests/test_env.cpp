#include "test_env.hpp"

#include "process.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kforge::eval::testing {
namespace fs = std::filesystem;

std::string repo_dir() { return KFORGE_EVAL_REPO_DIR; }
std::string examples_dir() { return repo_dir() + "/examples/kernelbench-mini"; }
std::string harness_dir() { return repo_dir() + "/plugins/eval/harness"; }
std::string test_data_dir() { return repo_dir() + "/plugins/eval/tests/data"; }

const std::string& test_python() {
  static const std::string python = [] {
    const char* env = std::getenv("KFORGE_TEST_PYTHON");
    return std::string(env != nullptr && *env != '\0' ? env : "/usr/bin/python3");
  }();
  return python;
}

bool test_python_has_torch() {
  static const bool ok = [] {
    try {
      return run_command({{test_python(), "-c", "import torch"}, {}, {}}, RunLimits::within(120)).ok();
    } catch (const SpawnError&) {
      return false;
    }
  }();
  return ok;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string fresh_temp_dir(const std::string& name) {
  static std::atomic<int> counter{0};
  const fs::path dir = fs::temp_directory_path() /
                       ("kforge-eval-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

HarnessSettings test_harness_settings(int max_children) {
  HarnessSettings settings;
  settings.python = test_python();
  settings.harness_dir = harness_dir();
  settings.devices = {"cpu"};
  settings.mode = "fork";
  settings.max_children = max_children;
  return settings;
}

const std::vector<TaskEntry>& bundled_tasks() {
  static const std::vector<TaskEntry> tasks = [] {
    kernelbench::TaskListOptions options;
    options.dir = examples_dir();
    return kernelbench::list_tasks(options);
  }();
  return tasks;
}

EvalJob bundled_task_job(const std::string& id, std::optional<std::string> code, const std::string& language) {
  for (const TaskEntry& task : bundled_tasks()) {
    if (task.id != id) continue;
    EvalJob job;
    job.task_id = task.id;
    job.task_path = task.path;
    job.task_format = task.format;
    job.task_sizes = task.sizes;
    job.task_size_scale = task.size_scale;
    job.code = std::move(code);
    job.language = language;
    return job;
  }
  throw std::invalid_argument("no bundled task " + id);
}

std::string run_python(const std::string& script, const nlohmann::json& input) {
  const std::string dir = fresh_temp_dir("python");
  write_file(dir + "/script.py", script);
  write_file(dir + "/input.json", input.dump());
  const std::string command = test_python() + " " + dir + "/script.py < " + dir + "/input.json 2>&1";
  std::string output;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
    ::pclose(pipe);
  }
  fs::remove_all(dir);
  return output;
}

}  // namespace kforge::eval::testing
