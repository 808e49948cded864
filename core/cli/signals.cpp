#include "signals.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace kforge::cli {
namespace {

// The handler only writes the signal's number into this pipe (async-signal-safe); a
// thread of its own reads it and does what the signal means, with no handler's limits.
int g_signal_pipe[2] = {-1, -1};
std::atomic<CancelToken*> g_running_run{nullptr};
std::atomic<bool> g_stdout_closed{false};

// A bus error is what an access to a memory-mapped file that went away gives: SQLite maps
// the store's kforge.db-shm, which an output directory turned read-only or removed takes
// from under it. Nothing can be saved from here (async-signal-safe calls only): say so
// and exit 3, as for any runtime error, instead of dying by the signal.
void on_bus_error(int) {
  static const char message[] =
      "kforge: SIGBUS: a memory-mapped file became inaccessible, most likely the run store's kforge.db-shm on an "
      "output directory that turned read-only, filled up or was removed under the run. The run stops here; what it "
      "saved before is in kforge.db, and `--resume` continues once the directory is usable again\n";
  [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, message, sizeof message - 1);
  ::_exit(3);
}

void on_signal(int signal_number) {
  const int saved = errno;
  const auto byte = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] const ssize_t ignored = ::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

void say(const std::string& text) {
  [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
}

// The parent pid in /proc/PID/stat: the field after the command name, which is in
// parentheses and may itself hold spaces and parentheses.
pid_t parent_of(const char* pid) {
  const std::string path = std::string("/proc/") + pid + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[512];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return -1;
  text[n] = '\0';
  const char* end_of_name = std::strrchr(text, ')');
  if (end_of_name == nullptr) return -1;
  char state = 0;
  int parent = -1;
  if (std::sscanf(end_of_name + 1, " %c %d", &state, &parent) != 2) return -1;
  return parent;
}

// SIGKILL to every child of this process and to its process group (the evaluation
// plugin starts each child in a group of its own, so that its own children go with it).
void kill_children() {
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return;
  const pid_t self = ::getpid();
  while (const dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9' || parent_of(entry->d_name) != self) continue;
    const pid_t child = static_cast<pid_t>(std::atoi(entry->d_name));
    if (::getpgid(child) == child) ::kill(-child, SIGKILL);
    ::kill(child, SIGKILL);
  }
  ::closedir(proc);
}

[[noreturn]] void leave_now(int signal_number) {
  say(std::string("kforge: SIG") + sigabbrev_np(signal_number) + ": stopping now\n");
  kill_children();
  std::fflush(nullptr);
  ::_exit(kExitInterrupted);
}

void watch_signals() {
  for (;;) {
    unsigned char byte = 0;
    const ssize_t n = ::read(g_signal_pipe[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    CancelToken* run = g_running_run.load();
    if (run == nullptr || run->requested()) leave_now(byte);
    run->request();
    say(std::string("kforge: SIG") + sigabbrev_np(byte) +
        ": stopping the run: no new jobs; running ones end, finished ones are saved, `--resume` continues "
        "(send it again to stop at once)\n");
  }
}

}  // namespace

void install_signal_handling() {
  std::signal(SIGPIPE, SIG_IGN);
  if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) return;  // then the default actions stay
  std::thread(watch_signals).detach();
  struct sigaction action {};
  action.sa_handler = on_signal;
  ::sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signal_number, &action, nullptr);
  struct sigaction bus {};
  bus.sa_handler = on_bus_error;
  ::sigemptyset(&bus.sa_mask);
  ::sigaction(SIGBUS, &bus, nullptr);
}

void set_running_run(CancelToken* token) { g_running_run.store(token); }

void print_stdout(const std::string& text) {
  if (g_stdout_closed.load()) return;
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    g_stdout_closed.store(true);
  }
}

}  // namespace kforge::cli
