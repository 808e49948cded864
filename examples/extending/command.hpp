// Runs a program to completion under a deadline, for the example stages that hand their work
// to a command (a model's CLI, a device vendor's runner): its standard input from a string,
// its output and error collected, its whole process group killed when the time is up or the
// run is cancelled.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace example {

struct CommandResult {
  enum class End { exited, signalled, timed_out, cancelled, not_started };
  End end = End::not_started;
  int status = 0;  // the exit status, or the signal that ended it
  std::string out;
  std::string err;  // at most its last 64 KiB: what a message quotes
  // "exited with status 3", "killed by signal 9", "timed out after 2.0 s", ...
  std::string describe() const;
};

// Runs argv[0] (looked up on PATH when it has no slash) with `argv` in `directory`, `input`
// on its standard input. Polls `cancelled` ten times a second; gives up at `limit`.
CommandResult run_command(const std::vector<std::string>& argv, const std::string& input,
                          const std::filesystem::path& directory, std::chrono::duration<double> limit,
                          const std::function<bool()>& cancelled);

// The program argv[0] names, as run_command would run it from `directory`, or "" when there
// is none (for a stage's run-start check).
std::string find_program(const std::string& name, const std::filesystem::path& directory);

}  // namespace example
