// The signals a user can send kforge (Ctrl-C, kill, a closed terminal, a reader that went
// away), handled the same way from main's first line to its last.
#pragma once

#include <string>

#include "engine/cancel.hpp"

namespace kforge::cli {

// Exit code of a run stopped by a signal (docs/cli.md).
inline constexpr int kExitInterrupted = 130;

// Call first in main. SIGINT, SIGTERM and SIGHUP are handled: while a run is registered
// (set_running_run), the first one requests its cancellation (it stops taking jobs, ends
// what runs, is marked interrupted and can be resumed) and a second one leaves at once;
// otherwise (start-up, the run-start checks, the report) one leaves at once. Leaving at
// once kills the process group of every child kforge started (a torch probe, a compiler,
// a harness server) and exits 130. SIGPIPE is ignored: a closed stdout (`| head`) is a
// failed write, not a death (print_stdout). SIGBUS (a memory-mapped file gone: SQLite's
// -shm on a directory that turned read-only) is said in words and exits 3.
void install_signal_handling();

// The run the next signal cancels; nullptr when none is running.
void set_running_run(CancelToken* token);

// Writes to stdout; once a write fails (the reader closed the pipe) further output is
// dropped and the command goes on to its own exit code.
void print_stdout(const std::string& text);

}  // namespace kforge::cli
