// Which Python runs the harness, and where the harness package is.
#pragma once

#include <string>
#include <vector>

namespace kforge::eval {

// The interpreter for a `python` parameter. "auto": $KFORGE_PYTHON when set, else the
// first of /usr/bin/python3, python3 on PATH, python on PATH that can `import torch`
// (each probed once per process with a short subprocess). Anything else names an
// interpreter (a path or a program on PATH), used as given. Throws std::runtime_error
// naming everything that was tried and why it was not taken.
std::string resolve_python(const std::string& setting);

// The directory holding the kforge_harness package, in this order: the `harness_dir`
// parameter when not empty, $KFORGE_HARNESS_DIR, the source tree this plugin was built
// from (when it still exists), the install location next to the plugin's shared object.
// Throws std::runtime_error listing the places looked at.
std::string locate_harness_dir(const std::string& parameter);

// The C++ include directories a torch extension needs, as `python` reports them: torch's
// (torch.utils.cpp_extension.include_paths()) and Python's own, asked once per interpreter. Throws
// std::runtime_error with the interpreter's output when it cannot tell.
std::vector<std::string> torch_include_paths(const std::string& python);

}  // namespace kforge::eval
