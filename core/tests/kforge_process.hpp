// Runs the real kforge binary (KFORGE_BINARY) from tests: synchronously with captured
// output, or in the background to be killed.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace kforge_test {

struct ProcessResult {
  int exit_code = -1;  // -1: killed by a signal
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Starts `kforge args...` with stdout/stderr going to the given files and the demo plugin
// directory on KFORGE_PLUGIN_PATH; returns its pid.
inline pid_t start_kforge(const std::vector<std::string>& args, const std::string& out_file, const std::string& err_file) {
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int out = open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    setenv("KFORGE_PLUGIN_PATH", KFORGE_TEST_PLUGIN_DIR, 1);
    std::vector<char*> argv{const_cast<char*>(KFORGE_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(KFORGE_BINARY, argv.data());
    _exit(127);
  }
  return pid;
}

inline int wait_exit_code(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline ProcessResult run_kforge(const std::vector<std::string>& args, const std::filesystem::path& scratch) {
  std::filesystem::create_directories(scratch);
  const auto out = scratch / "stdout.txt";
  const auto err = scratch / "stderr.txt";
  ProcessResult r;
  r.exit_code = wait_exit_code(start_kforge(args, out.string(), err.string()));
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// A fresh directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kforge-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace kforge_test
