// Child processes for the evaluation stages: compilers run to completion under a
// wall-clock limit, the harness server runs for long with pipes to talk over. Every child
// gets its own process group, so a timeout kills it together with whatever it started
// (cc1plus under g++, forked workers under python), inherits no descriptor but its three
// standard ones, and no variable of this process' environment but an allowlist: kforge
// runs with API keys in its environment, and children run candidate code.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kforge::eval {

struct SpawnSpec {
  std::vector<std::string> argv;            // argv[0] without '/' is looked up on this process' PATH
  std::map<std::string, std::string> env;   // set on top of the inherited variables
  std::string cwd;                          // empty: this process' working directory
  // This process' variables passed on beyond passes_to_children()'s: those a pipeline
  // names explicitly.
  std::vector<std::string> pass;
};

// Whether this process' variable `name` reaches every child: paths, locale, device
// selection, toolchain and thread settings (PATH, HOME, LANG, LC_*, LD_LIBRARY_PATH,
// PYTHONPATH, CUDA_*, TRITON_*, TORCH_*, OMP_NUM_THREADS, ...), never a credential.
bool passes_to_children(const std::string& name);

// The environment spawn_process gives `spec`'s child, as NAME=VALUE entries.
std::vector<std::string> child_environment(const SpawnSpec& spec);

// Thrown when a child cannot be started at all (program missing, not executable).
class SpawnError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The full path of `program` (PATH lookup when it has no '/'), or nullopt.
std::optional<std::string> find_program(const std::string& program);

// A started child and the parent's ends of its pipes (-1 where not piped).
struct ChildProcess {
  pid_t pid = -1;
  int stdin_fd = -1;   // a socket: write with send(MSG_NOSIGNAL) so a dead child is EPIPE, not SIGPIPE
  int stdout_fd = -1;  // carries stderr too when the child was started with merged output
  int stderr_fd = -1;
};

enum class ChildStdin { Null, Pipe };
enum class ChildStderr { Separate, Merged };

// Starts `spec` in a new process group. Throws SpawnError naming the program and the reason.
ChildProcess spawn_process(const SpawnSpec& spec, ChildStdin in, ChildStderr err);

// Kills the child's whole process group (SIGKILL).
void kill_process_group(pid_t pid);

// waitpid() status as words: "exit status 1", "killed by SIGSEGV".
std::string describe_wait_status(int status);

struct CommandResult {
  int exit_code = -1;     // -1 when killed by a signal or by the timeout
  int signal = 0;         // the terminating signal, 0 when it exited
  bool timed_out = false;
  bool cancelled = false;
  std::string output;     // stdout and stderr interleaved, at most max_output bytes kept
  bool output_truncated = false;
  double seconds = 0;

  bool ok() const { return exit_code == 0; }
  // It ended on its own (an exit status), not by a signal, a time limit or a cancellation:
  // what it said is its answer, not an accident of the moment.
  bool exited() const { return signal == 0 && !timed_out && !cancelled; }
  std::string describe() const;  // "exit status 1", "killed by SIGKILL after the 60 s limit", ...
};

struct RunLimits {
  double timeout_seconds = 60;
  size_t max_output = 1 << 20;
  std::function<bool()> cancelled;  // polled a few times a second; true kills the child

  static RunLimits within(double seconds) {
    RunLimits limits;
    limits.timeout_seconds = seconds;
    return limits;
  }
};

// Runs `spec` to completion (stdin /dev/null), killing its process group at the limit (or
// at a cancellation). Returns at most about a second after the kill, whatever holds the
// output pipe or keeps the child from dying; a child that closes its output is still
// waited for only until the limit.
CommandResult run_command(const SpawnSpec& spec, const RunLimits& limits);

}  // namespace kforge::eval
