#include "toolchain.hpp"

#include "python_env.hpp"

#include <filesystem>
#include <regex>

namespace kforge::eval {
namespace {

struct KnownHeader {
  const char* header;
  const char* package;
};

// The headers a load_inline build includes that are not the candidate's, and the Debian
// package of each (the same table as the harness's errors.TOOLCHAIN_HEADERS).
constexpr KnownHeader kToolchainHeaders[] = {
    {"pybind11/pybind11.h", "pybind11-dev"},
    {"Python.h", "python3-dev"},
    {"torch/extension.h", "libtorch-dev"},
    {"torch/types.h", "libtorch-dev"},
    {"cuda_runtime.h", "nvidia-cuda-toolkit (or the CUDA toolkit from NVIDIA)"},
    {"cuda.h", "nvidia-cuda-toolkit (or the CUDA toolkit from NVIDIA)"},
};

}  // namespace

std::optional<MissingHeader> missing_toolchain_header(const std::string& compiler_output,
                                                      const std::vector<std::string>& include_dirs) {
  static const std::regex missing(R"(fatal error: ([\w./+-]+): No such file or directory)");
  for (auto it = std::sregex_iterator(compiler_output.begin(), compiler_output.end(), missing);
       it != std::sregex_iterator(); ++it) {
    const std::string named = (*it)[1];
    for (const KnownHeader& known : kToolchainHeaders) {
      const std::string header = known.header;
      if (named != header && !named.ends_with("/" + header)) continue;
      std::error_code ec;
      bool present = false;
      for (const std::string& dir : include_dirs) present = present || std::filesystem::exists(dir + "/" + header, ec);
      if (!present) return MissingHeader{header, known.package};
    }
  }
  return std::nullopt;
}

std::vector<std::string> toolchain_include_dirs(const std::string& python, const std::string& compiler) {
  std::vector<std::string> dirs = {"/usr/include", "/usr/local/include", "/usr/local/cuda/include"};
  if (!compiler.empty()) dirs.push_back((std::filesystem::path(compiler).parent_path().parent_path() / "include").string());
  try {
    for (const std::string& dir : torch_include_paths(resolve_python(python))) dirs.push_back(dir);
  } catch (const std::exception&) {
    // No torch to ask: its headers count as missing, which is what a build saw too.
  }
  return dirs;
}

void blame_missing_toolchain(StageResult& result, const std::string& python, const std::string& compiler) {
  if (result.error_class != KF_ERROR_COMPILE) return;
  const auto missing =
      missing_toolchain_header(result.message + "\n" + result.log_tail, toolchain_include_dirs(python, compiler));
  if (!missing) return;
  result.status = KF_VERDICT_ERROR;
  result.error_class = "host_error";
  result.message = "the build needs " + missing->header + ", which this machine lacks: install " + missing->package +
                   " (then evaluate again; the candidate was not judged)\n" + result.message;
}

}  // namespace kforge::eval
