// L2 for native code: the candidate's C++ (g++/clang++ into a shared library) and CUDA
// (nvcc into an object file, so compile errors show on machines without a GPU). Both name
// the source file so that diagnostics read `candidate.cpp:12:5: error: ...`.
//
// Compile artifacts are the judge's: the compiler runs in the harness's sandbox
// (kforge_harness.sandbox: its own namespaces, no capabilities, seccomp, only its build
// directory writable), then this process (the trusted side) copies the output, a regular
// file, into the cache under the key of what was compiled (source, compiler identity,
// flags) and records the artifact's SHA-256 beside it. Every hand-out, cache hit or not,
// is checked against that record; an entry that fails is removed and rebuilt. No sandbox
// ever sees the cache directory.
#pragma once

#include "eval_job.hpp"
#include "harness_pool.hpp"
#include "harness_stages.hpp"

#include <memory>
#include <string>
#include <vector>

namespace kforge::eval {

// Set with compile.artifact: the SHA-256 of the artifact's content as handed out.
inline constexpr const char* kAttrArtifactSha256 = "compile.artifact_sha256";
// Set when the compile sandbox lacked protections on this host: sandbox.py's names,
// comma-separated (user_namespace, pid_namespace, ...).
inline constexpr const char* kAttrCompileSandboxMissing = "compile.sandbox_missing";

// $XDG_CACHE_HOME/kforge/<kind>, else $HOME/.cache/kforge/<kind>, else a directory
// under the system's temporary directory.
std::string default_cache_dir(const std::string& kind);

// The part of a compiler's output worth a short message: from the line before the first
// error on (warnings from headers come first and bury it), at most `limit` characters.
std::string compiler_error_excerpt(const std::string& output, size_t limit);

// "; line 1 of candidate.cpp is line N of the candidate file" when `source` appears
// verbatim in `code` (it does for a module-level string literal), else "".
std::string source_origin_note(const std::string& code, const std::string& source, const std::string& file_name);

// Splits a flags parameter on whitespace (no shell quoting: flags with spaces do not exist
// in practice, and no shell ever sees them).
std::vector<std::string> split_flags(const std::string& flags);

// The C++ compiler `setting` names (a path, or a program on PATH), as the run's environment
// has it. Throws std::runtime_error saying it was not found and what to install or set.
std::string locate_compiler(const std::string& setting);

// nvcc: `setting` when not empty (a path, or a program on PATH), else nvcc on PATH, else
// /usr/local/cuda/bin/nvcc. Throws std::runtime_error saying where it looked.
std::string locate_nvcc(const std::string& setting);

class CppCompileStage {
 public:
  struct Options {
    std::string compiler = "g++";
    std::string flags = "-O3 -march=native -fopenmp -shared -fPIC -std=c++17";
    std::string cache_dir;  // empty: default_cache_dir("cpp")
    double timeout_seconds = 120;
    ChildLimits check_limits;  // for asking the harness to extract cpp_source
    std::string python = "auto";  // runs the compile sandbox (kforge_harness.sandbox)
    std::string harness_dir;      // empty: locate_harness_dir's search
  };
  // `extractor` serves candidates that reach this stage without check.cpp_source.
  CppCompileStage(Options options, std::shared_ptr<HarnessPool> extractor);
  // Pass: compile.artifact = the shared library. Metrics compile_seconds, cached (0/1).
  StageResult process(const EvalJob& job) const;

 private:
  Options options_;
  std::shared_ptr<HarnessPool> extractor_;
};

class CudaCompileStage {
 public:
  struct Options {
    std::string nvcc;  // empty: nvcc on PATH, else /usr/local/cuda/bin/nvcc
    std::string flags = "-O3 -std=c++17 -Xcompiler -fPIC";
    // load_inline: compile as torch.utils.cpp_extension.load_inline does (its includes
    // and defines, torch's include directories); none: the source exactly as given.
    std::string prelude = "load_inline";
    std::string python = "auto";  // asked for torch's include directories; runs the sandbox
    std::string cache_dir;         // empty: default_cache_dir("cuda")
    double timeout_seconds = 300;
    ChildLimits check_limits;
    std::string harness_dir;       // empty: locate_harness_dir's search
  };
  CudaCompileStage(Options options, std::shared_ptr<HarnessPool> extractor);
  // Pass: compile.artifact = the object file. Metrics compile_seconds, cached (0/1).
  StageResult process(const EvalJob& job) const;

 private:
  Options options_;
  std::shared_ptr<HarnessPool> extractor_;
};

}  // namespace kforge::eval
