// Which Python runs the harness, and where the harness package is.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace kforge::eval {

// The probes below run once per process and are shared by every caller; each caller waits
// only until its `deadline` (the job's stage deadline). This is thrown when the deadline
// passed first, or a probe did not finish (its own limit, a kill): the question stays
// open and the next call asks again, so nothing may keep it as the answer.
class ProbeUnanswered : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The interpreter for a `python` parameter. "auto": $KFORGE_PYTHON when set, else the
// first of /usr/bin/python3, python3 on PATH, python on PATH that can `import torch`
// (each probed once per process with a short subprocess). Anything else names an
// interpreter (a path or a program on PATH), used as given. Throws std::runtime_error
// naming everything that was tried and why it was not taken; ProbeUnanswered when
// `deadline` passed, or a probe did not finish, before an interpreter earlier in the
// order was known to import torch or not.
std::string resolve_python(const std::string& setting,
                           std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

// The directory holding the kforge_harness package, in this order: the `harness_dir`
// parameter when not empty, $KFORGE_HARNESS_DIR, the source tree this plugin was built
// from (when it still exists), the install location next to the plugin's shared object.
// Throws std::runtime_error listing the places looked at.
std::string locate_harness_dir(const std::string& parameter);

// The absolute path of the arena allocator's library (libkforge_arena_allocator.so, the
// harness's handover/arena.py loads it in a CUDA candidate child): the one installed with
// this plugin (relative to its shared object), else the one of the build tree it was built
// in; empty when neither exists (the harness then says so and copies outputs instead).
std::string locate_arena_allocator();

// The C++ include directories a torch extension needs, as `python` reports them: torch's
// (torch.utils.cpp_extension.include_paths()) and Python's own, asked once per interpreter
// (a failure is asked again). Throws std::runtime_error with the interpreter's output when
// it cannot tell, ProbeUnanswered when `deadline` passed first.
std::vector<std::string> torch_include_paths(
    const std::string& python, std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

// The run-start check of a device: whether a harness server for `device` can start with
// `python` (torch built for it, its vendor's package installed) and the device is there
// (`python -m kforge_harness check-device`, in a process of its own: the server must not
// initialise the device before it forks). Asked once per process for each interpreter,
// harness and device. Throws std::runtime_error with the harness's reason and what to
// install, ProbeUnanswered when `deadline` passed first.
void check_device(const std::string& python, const std::string& harness_dir, const std::string& device,
                  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

}  // namespace kforge::eval
