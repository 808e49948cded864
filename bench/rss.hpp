// Resident memory, of this process and of commands run as children, for benchmarks that
// show memory stays flat.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace kforge::bench {

// VmRSS from /proc/self/status, in KiB (0 where that file does not exist).
inline long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      long kib = 0;
      status >> kib;
      return kib;
    }
  }
  return 0;
}

// What a command cost, as its parent saw it.
struct ChildUsage {
  int exit_code = -1;    // -1: killed by a signal
  double seconds = 0;    // wall clock
  long peak_kib = 0;     // the child's peak resident memory (getrusage's ru_maxrss)
  double cpu_seconds = 0;
};

// Runs `argv` (argv[0] a path) in a child process with stdout and stderr into `log`, and
// waits for it. Throws std::runtime_error when it cannot be started.
inline ChildUsage run_child(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (::wait4(pid, &status, 0, &usage) != pid) throw std::runtime_error("wait4 failed");
  ChildUsage out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  out.peak_kib = usage.ru_maxrss;
  out.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                    static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  return out;
}

}  // namespace kforge::bench
