#include "process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>
#include <optional>
#include <thread>

extern char** environ;

namespace kforge::eval {
namespace {

std::string errno_text(int error) { return std::strerror(error); }

void close_if_open(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

bool is_executable_file(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// What children need of kforge's environment to find their tools and devices. Names,
// not patterns such as *_KEY: a credential is whatever its owner called it, so only what
// is known to be harmless passes.
constexpr std::string_view kPassedNames[] = {
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "XDG_CACHE_HOME",
    "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX",
    "CC", "CXX", "CUDAHOSTCXX", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"};
// Families of toolchain and device settings (CUDA_HOME, CUDA_VISIBLE_DEVICES,
// TRITON_PTXAS_PATH, TORCH_CUDA_ARCH_LIST, TORCHINDUCTOR_CACHE_DIR, ASCEND_HOME_PATH...).
// KFORGE_HARNESS_: the harness's own settings (KFORGE_HARNESS_TRACE, its timeline).
constexpr std::string_view kPassedPrefixes[] = {"LC_", "CUDA_", "TRITON_", "TORCH_", "TORCHINDUCTOR_",
                                                "ASCEND_", "KFORGE_HARNESS_"};

std::vector<char*> c_strings(std::vector<std::string>& items) {
  std::vector<char*> out;
  out.reserve(items.size() + 1);
  for (std::string& item : items) out.push_back(item.data());
  out.push_back(nullptr);
  return out;
}

// Everything the child does between fork and exec: only async-signal-safe calls, since
// other threads of this process may hold locks (malloc's included) at the fork.
[[noreturn]] void exec_child(int stdin_fd, int stdout_fd, int stderr_fd, int report_fd,
                             const char* cwd, const char* path, char* const* argv,
                             char* const* envp) {
  ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  if (::dup2(stdin_fd, 0) < 0 || ::dup2(stdout_fd, 1) < 0 || ::dup2(stderr_fd, 2) < 0) {
    const int error = errno;
    (void)!::write(report_fd, &error, sizeof error);
    ::_exit(127);
  }
  // Close every inherited descriptor but the report pipe (close-on-exec, so it closes on
  // a successful exec and tells the parent the exec worked).
  if (report_fd > 3) ::close_range(3, static_cast<unsigned>(report_fd) - 1, 0);
  ::close_range(static_cast<unsigned>(report_fd) + 1, ~0u, 0);
  if (cwd != nullptr && ::chdir(cwd) != 0) {
    const int error = errno;
    (void)!::write(report_fd, &error, sizeof error);
    ::_exit(127);
  }
  ::execve(path, argv, envp);
  const int error = errno;
  (void)!::write(report_fd, &error, sizeof error);
  ::_exit(127);
}

// run_command after a kill: how long output still coming is read, and the killed child has
// to be reaped, before the call returns anyway.
constexpr double kAfterKillSeconds = 1.0;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

bool passes_to_children(const std::string& name) {
  for (std::string_view passed : kPassedNames) {
    if (name == passed) return true;
  }
  for (std::string_view prefix : kPassedPrefixes) {
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) return true;
  }
  return false;
}

std::vector<std::string> child_environment(const SpawnSpec& spec) {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string key = text.substr(0, text.find('='));
    const bool named = std::find(spec.pass.begin(), spec.pass.end(), key) != spec.pass.end();
    if ((named || passes_to_children(key)) && spec.env.count(key) == 0) env.push_back(text);
  }
  for (const auto& [key, value] : spec.env) env.push_back(key + "=" + value);
  return env;
}

std::optional<std::string> find_program(const std::string& program) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos) {
    return is_executable_file(program) ? std::optional(program) : std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string full = (dir.empty() ? "." : dir) + "/" + program;
    if (is_executable_file(full)) return full;
  }
  return std::nullopt;
}

ChildProcess spawn_process(const SpawnSpec& spec, ChildStdin in, ChildStderr err) {
  if (spec.argv.empty()) throw SpawnError("spawn_process: empty command line");
  const std::string& program = spec.argv.front();
  const auto path = find_program(program);
  if (!path) {
    throw SpawnError("cannot run '" + program + "': " +
                     (program.find('/') != std::string::npos ? "no such executable file"
                                                             : "not found on PATH"));
  }
  std::vector<std::string> argv_storage = spec.argv;
  std::vector<std::string> env_storage = child_environment(spec);
  std::vector<char*> argv = c_strings(argv_storage);
  std::vector<char*> envp = c_strings(env_storage);

  int stdin_pair[2] = {-1, -1};  // [0]: ours, [1]: the child's
  int stdout_pipe[2] = {-1, -1};
  int stderr_pipe[2] = {-1, -1};
  int report_pipe[2] = {-1, -1};
  auto close_all = [&] {
    for (int* fds : {stdin_pair, stdout_pipe, stderr_pipe, report_pipe}) {
      close_if_open(fds[0]);
      close_if_open(fds[1]);
    }
  };
  bool ok = ::pipe2(stdout_pipe, O_CLOEXEC) == 0 && ::pipe2(report_pipe, O_CLOEXEC) == 0;
  if (ok && err == ChildStderr::Separate) ok = ::pipe2(stderr_pipe, O_CLOEXEC) == 0;
  if (ok && in == ChildStdin::Pipe) {
    ok = ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, stdin_pair) == 0;
  } else if (ok) {
    stdin_pair[1] = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ok = stdin_pair[1] >= 0;
  }
  if (!ok) {
    const int error = errno;
    close_all();
    throw SpawnError("cannot create pipes for '" + program + "': " + errno_text(error));
  }
  const int child_stderr = err == ChildStderr::Merged ? stdout_pipe[1] : stderr_pipe[1];
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    close_all();
    throw SpawnError("cannot fork to run '" + program + "': " + errno_text(error));
  }
  if (pid == 0) {
    exec_child(stdin_pair[1], stdout_pipe[1], child_stderr, report_pipe[1], cwd, path->c_str(),
               argv.data(), envp.data());
  }
  ::setpgid(pid, pid);  // also here: whoever runs first, the group exists before any kill
  close_if_open(stdin_pair[1]);
  close_if_open(stdout_pipe[1]);
  close_if_open(stderr_pipe[1]);
  close_if_open(report_pipe[1]);

  int child_errno = 0;
  ssize_t got;
  do {
    got = ::read(report_pipe[0], &child_errno, sizeof child_errno);
  } while (got < 0 && errno == EINTR);
  close_if_open(report_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof child_errno)) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    close_all();
    throw SpawnError("cannot run '" + *path + "'" + (cwd ? std::string(" in ") + cwd : "") + ": " +
                     errno_text(child_errno));
  }
  ChildProcess child;
  child.pid = pid;
  child.stdin_fd = in == ChildStdin::Pipe ? stdin_pair[0] : -1;
  if (in != ChildStdin::Pipe) close_if_open(stdin_pair[0]);
  child.stdout_fd = stdout_pipe[0];
  child.stderr_fd = stderr_pipe[0];
  return child;
}

void kill_process_group(pid_t pid) {
  if (pid > 0) ::kill(-pid, SIGKILL);
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return std::string("killed by ") +
           (name != nullptr ? std::string("SIG") + name : "signal " + std::to_string(WTERMSIG(status)));
  }
  return "status " + std::to_string(status);
}

std::string CommandResult::describe() const {
  if (cancelled) return "cancelled (the run is stopping)";
  if (timed_out) return "killed after " + std::to_string(static_cast<int>(seconds)) + " s (time limit)";
  if (signal != 0) {
    const char* name = sigabbrev_np(signal);
    return std::string("killed by ") + (name != nullptr ? std::string("SIG") + name : std::to_string(signal));
  }
  return "exit status " + std::to_string(exit_code);
}

CommandResult run_command(const SpawnSpec& spec, const RunLimits& limits) {
  const auto start = std::chrono::steady_clock::now();
  ChildProcess child = spawn_process(spec, ChildStdin::Null, ChildStderr::Merged);
  CommandResult result;
  std::optional<std::chrono::steady_clock::time_point> killed_at;
  bool output_open = true;
  bool reaped = false;
  int status = 0;
  char buffer[8192];
  // Done when the child is reaped and its output closed. The child is watched apart from
  // its output: one that closes its output and runs on is still killed at the limit.
  while (!(reaped && !output_open)) {
    if (!reaped) reaped = ::waitpid(child.pid, &status, WNOHANG) == child.pid;
    const double left = limits.timeout_seconds - seconds_since(start);
    if (!killed_at) {
      if (left <= 0) {
        result.timed_out = true;
      } else if (limits.cancelled && limits.cancelled()) {
        result.cancelled = true;
      }
      if (result.timed_out || result.cancelled) {
        kill_process_group(child.pid);
        killed_at = std::chrono::steady_clock::now();
      }
    }
    // After the kill, neither output that keeps coming (a grandchild that left the group
    // holds the pipe) nor a child slow to die holds this call past the grace.
    if (killed_at && seconds_since(*killed_at) >= kAfterKillSeconds) break;
    if (reaped && !output_open) break;
    int wait_ms = static_cast<int>(std::clamp(left * 1000, 1.0, 200.0));
    if (killed_at || !output_open) wait_ms = 10;  // waiting for the child's end: it is near
    pollfd pfd{child.stdout_fd, POLLIN, 0};
    const int ready = ::poll(&pfd, output_open ? 1 : 0, wait_ms);
    if (ready <= 0 || !output_open) continue;  // the time to look again, or EINTR
    const ssize_t n = ::read(child.stdout_fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      output_open = false;
      continue;
    }
    const size_t room = limits.max_output > result.output.size() ? limits.max_output - result.output.size() : 0;
    result.output.append(buffer, std::min(room, static_cast<size_t>(n)));
    if (static_cast<size_t>(n) > room) result.output_truncated = true;
  }
  ::close(child.stdout_fd);
  if (!reaped) {
    // SIGKILLed and still not gone (stuck in the kernel: a hung file system or driver):
    // reaped in the background, so that its end is not the job's time.
    std::thread([pid = child.pid] {
      int ignored = 0;
      while (::waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
      }
    }).detach();
  } else if (WIFEXITED(status)) {
    result.exit_code = killed_at ? -1 : WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace kforge::eval
