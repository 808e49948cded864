// A compile failure that is the machine's, not the candidate's: a header of the toolchain
// (pybind11, Python, torch, CUDA) that the build needs and this machine lacks. Such a
// failure is a host_error naming the package to install, never the candidate's
// compile_error.
#pragma once

#include "eval_job.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kforge::eval {

struct MissingHeader {
  std::string header;   // as the compiler named it: pybind11/pybind11.h
  std::string package;  // what provides it: pybind11-dev
};

// The toolchain header `compiler_output` says is missing ("fatal error: X: No such file
// or directory"), when it is one of the toolchain's and it is really in none of
// `include_dirs` (a candidate's own text cannot make its failure the machine's).
std::optional<MissingHeader> missing_toolchain_header(const std::string& compiler_output,
                                                      const std::vector<std::string>& include_dirs);

// Where a build looks for the toolchain's headers: the system's, CUDA's (beside
// `compiler` when it is given), and torch's and Python's as `python` reports them.
std::vector<std::string> toolchain_include_dirs(const std::string& python, const std::string& compiler);

// Turns a compile_error caused by a missing toolchain header into a host_error (the
// directories looked in: toolchain_include_dirs(python, compiler)).
void blame_missing_toolchain(StageResult& result, const std::string& python, const std::string& compiler);

}  // namespace kforge::eval
