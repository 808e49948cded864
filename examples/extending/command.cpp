#include "command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace example {
namespace {

constexpr size_t kErrorKept = 64 * 1024;

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

bool executable(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

// The input as a file (not a pipe), so that a program that never reads it cannot block us
// and one that stops reading early cannot raise SIGPIPE in the runtime.
int input_file(const std::string& input) {
  const int fd = ::memfd_create("kforge-command-input", MFD_CLOEXEC);
  if (fd < 0) return -1;
  for (size_t done = 0; done < input.size();) {
    const ssize_t n = ::write(fd, input.data() + done, input.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

}  // namespace

std::string CommandResult::describe() const {
  std::ostringstream text;
  switch (end) {
    case End::exited: text << "exited with status " << status; break;
    case End::signalled: text << "killed by signal " << status; break;
    case End::timed_out: text << "timed out"; break;
    case End::cancelled: text << "was cancelled"; break;
    case End::not_started: text << "could not start"; break;
  }
  return text.str();
}

std::string find_program(const std::string& name, const std::filesystem::path& directory) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) {
    const std::filesystem::path path = directory / name;  // an absolute name stays as it is
    return executable(path) ? path.string() : "";
  }
  const char* path_variable = std::getenv("PATH");
  std::stringstream dirs(path_variable ? path_variable : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (executable(candidate)) return candidate.string();
  }
  return "";
}

CommandResult run_command(const std::vector<std::string>& argv, const std::string& input,
                          const std::filesystem::path& directory, std::chrono::duration<double> limit,
                          const std::function<bool()>& cancelled) {
  CommandResult result;
  const std::string program = argv.empty() ? "" : find_program(argv[0], directory);
  if (program.empty()) {
    result.err = argv.empty() ? "no command given" : "no program '" + argv[0] + "' (not on PATH, or not executable)";
    return result;
  }
  Fd in(input_file(input));
  int out_pipe[2];
  int err_pipe[2];
  if (in.fd < 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.err = std::string("cannot set up the command's input and output: ") + std::strerror(errno);
    return result;
  }
  Fd out_read(out_pipe[0]), out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.err = std::string("cannot set up the command's error output: ") + std::strerror(errno);
    return result;
  }
  Fd err_read(err_pipe[0]), err_write(err_pipe[1]);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) {
    result.err = std::string("fork: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {  // only async-signal-safe calls from here to exec
    ::setpgid(0, 0);
    ::dup2(in.fd, 0);
    ::dup2(out_write.fd, 1);
    ::dup2(err_write.fd, 2);
    if (::chdir(directory.c_str()) != 0) ::_exit(126);
    ::execv(program.c_str(), args.data());
    static const char kFailed[] = "exec failed\n";
    (void)!::write(2, kFailed, sizeof kFailed - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no race with the kill below
  out_write.reset();
  err_write.reset();

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(limit);
  bool exited = false;
  auto drained_by = deadline;
  int wait_status = 0;
  char buffer[65536];
  while (out_read.fd >= 0 || err_read.fd >= 0 || !exited) {
    if (!exited && ::waitpid(pid, &wait_status, WNOHANG) == pid) {
      exited = true;
      ::kill(-pid, SIGKILL);  // what it left behind must not hold its output open
      // ... nor one that left its process group: a second more for the output, then done.
      drained_by = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
    if (exited && std::chrono::steady_clock::now() >= drained_by) break;
    const bool late = std::chrono::steady_clock::now() >= deadline;
    const bool stop = cancelled && cancelled();
    if (late || stop) {
      ::kill(-pid, SIGKILL);
      if (!exited) ::waitpid(pid, &wait_status, 0);
      result.end = late ? CommandResult::End::timed_out : CommandResult::End::cancelled;
      return result;
    }
    pollfd fds[2] = {{out_read.fd, POLLIN, 0}, {err_read.fd, POLLIN, 0}};
    if (::poll(fds, 2, 100) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      Fd& fd = i == 0 ? out_read : err_read;
      if (fd.fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fd.fd, buffer, sizeof buffer);
      if (n > 0) {
        std::string& into = i == 0 ? result.out : result.err;
        into.append(buffer, static_cast<size_t>(n));
        if (i == 1 && into.size() > 2 * kErrorKept) into.erase(0, into.size() - kErrorKept);
      } else if (n == 0 || errno != EINTR) {
        fd.reset();
      }
    }
  }
  if (result.err.size() > kErrorKept) result.err.erase(0, result.err.size() - kErrorKept);
  if (WIFSIGNALED(wait_status)) {
    result.end = CommandResult::End::signalled;
    result.status = WTERMSIG(wait_status);
  } else {
    result.end = CommandResult::End::exited;
    result.status = WEXITSTATUS(wait_status);
  }
  return result;
}

}  // namespace example
