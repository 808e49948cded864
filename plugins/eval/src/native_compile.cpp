#include "native_compile.hpp"

#include "process.hpp"
#include "python_env.hpp"
#include "sha256.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

namespace kforge::eval {
namespace fs = std::filesystem;
namespace {

// Bounds of what a compile verdict carries: the message is for the fix loop's prompt,
// the log tail for a human reading the report.
constexpr size_t kMessageChars = 2000;
constexpr size_t kLogTailChars = 8000;
constexpr double kVersionProbeSeconds = 30;

// load_inline puts these in front of every CUDA source.
constexpr const char* kLoadInlineCudaPrelude =
    "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n";
// ... and compiles with these (torch.utils.cpp_extension's COMMON_NVCC_FLAGS).
const std::vector<std::string> kLoadInlineNvccFlags = {
    "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__", "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__", "--expt-relaxed-constexpr"};

std::string tail_of(const std::string& text, size_t limit) {
  return text.size() <= limit ? text : "[... " + std::to_string(text.size() - limit) + " chars cut]\n" + text.substr(text.size() - limit);
}

// First line of `<compiler> --version`, once per compiler: part of the cache key, so a
// compiler upgraded in place does not reuse old artifacts.
std::string compiler_identity(const std::string& path, double timeout_seconds) {
  static std::mutex mutex;
  static std::map<std::string, std::string> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(path); it != cache.end()) return it->second;
  std::string identity = path;
  try {
    const CommandResult result = run_command({{path, "--version"}, {}, {}}, RunLimits::within(std::min(kVersionProbeSeconds, timeout_seconds)));
    std::istringstream lines(result.output);
    std::string line;
    while (std::getline(lines, line)) identity += "\n" + line;
  } catch (const SpawnError&) {
  }
  cache[path] = identity;
  return identity;
}

struct Build {
  std::string tool;                   // for messages: g++, nvcc
  std::vector<std::string> command;   // compiler and flags; source, -o and output follow
  std::string identity;
  std::string source_name;            // candidate.cpp, candidate.cu
  std::string source_text;            // exactly what is compiled
  std::string artifact_suffix;        // .so, .o
  std::string cache_dir;
  double timeout_seconds = 120;
  std::function<bool()> cancelled;
  std::string origin_note;            // where the source's line 1 is in the candidate file
};

std::atomic<uint64_t> g_build_counter{0};

StageResult build_cached(const Build& build) {
  std::string key_material;
  for (const std::string& part : build.command) key_material += part + '\n';
  const std::string key = kforge::sha256_of_fields({build.source_text, build.identity, key_material});
  const fs::path cache_dir(build.cache_dir);
  const fs::path artifact = cache_dir / (key + build.artifact_suffix);
  std::error_code ec;
  if (fs::exists(artifact, ec)) {
    StageResult hit;
    hit.attributes.emplace_back(kAttrArtifact, artifact.string());
    hit.metrics = {{"compile_seconds", 0}, {"cached", 1}};
    return hit;
  }
  // Build in a private directory, then rename into place: concurrent builds of the same
  // source (k samples, two runs) never see a half-written artifact.
  const fs::path work = cache_dir / (".build-" + key.substr(0, 16) + "-" + std::to_string(::getpid()) + "-" +
                                     std::to_string(g_build_counter++));
  fs::create_directories(work, ec);
  if (ec) {
    return StageResult::error("harness_error", "cannot create the build directory " + work.string() + ": " +
                                                   ec.message() + " (set the stage parameter cache_dir)");
  }
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } cleanup{work};
  {
    std::ofstream out(work / build.source_name, std::ios::binary);
    out << build.source_text;
    if (!out) return StageResult::error("harness_error", "cannot write " + (work / build.source_name).string());
  }
  const std::string output_name = "candidate" + build.artifact_suffix;
  SpawnSpec spec;
  spec.argv = build.command;
  spec.argv.insert(spec.argv.end(), {build.source_name, "-o", output_name});
  spec.cwd = work.string();
  CommandResult result;
  try {
    RunLimits limits = RunLimits::within(build.timeout_seconds);
    limits.cancelled = build.cancelled;
    result = run_command(spec, limits);
  } catch (const SpawnError& e) {
    return StageResult::error("harness_error", e.what());
  }
  StageResult verdict;
  if (result.cancelled) {
    verdict = StageResult::error("harness_error", build.tool + " was stopped: the run is being cancelled");
  } else if (result.timed_out) {
    verdict = StageResult::fail("timeout", build.tool + " did not finish compiling " + build.source_name +
                                               " within " + std::to_string(static_cast<int>(build.timeout_seconds)) +
                                               " s and was killed");
  } else if (!result.ok()) {
    verdict = StageResult::fail("compile_error", build.tool + " could not compile " + build.source_name + " (" +
                                                     result.describe() + build.origin_note + "):\n" +
                                                     compiler_error_excerpt(result.output, kMessageChars));
  }
  if (verdict.status != KF_VERDICT_PASS) {
    verdict.log_tail = tail_of(result.output, kLogTailChars);
    verdict.metrics = {{"compile_seconds", result.seconds}, {"cached", 0}};
    return verdict;
  }
  fs::rename(work / output_name, artifact, ec);
  if (ec) return StageResult::error("harness_error", "cannot move the artifact into " + artifact.string() + ": " + ec.message());
  // The source beside its artifact, for whoever debugs a cached build.
  fs::copy_file(work / build.source_name, cache_dir / (key + fs::path(build.source_name).extension().string()),
                fs::copy_options::overwrite_existing, ec);
  StageResult pass;
  pass.attributes.emplace_back(kAttrArtifact, artifact.string());
  pass.metrics = {{"compile_seconds", result.seconds}, {"cached", 0}};
  if (!result.output.empty()) pass.log_tail = tail_of(result.output, kLogTailChars);  // warnings
  return pass;
}

// The extracted source the check stage left on the job, or the harness' extraction now.
std::optional<std::string> extracted_source(const EvalJob& job, const char* attribute, const char* field,
                                            const std::string& language, HarnessPool* extractor,
                                            const ChildLimits& limits, StageResult& failure) {
  if (const std::string* source = job.attribute(attribute)) return *source;
  if (!job.code) {
    failure = StageResult::fail("no_candidate", "the job has no candidate.code to compile");
    return std::nullopt;
  }
  const HarnessResponse response =
      extractor->call(harness_request("check", job, language, limits), DeviceUse::None, call_budget(job, limits));
  if (response.status != "pass") {
    failure = result_from_response(response);
    return std::nullopt;
  }
  auto it = response.extracted.find(field);
  if (it == response.extracted.end() || !it->is_string()) {
    failure = StageResult::fail("checker_rejected", std::string("the candidate has no ") + field +
                                                        " to compile (expected a module-level string named " +
                                                        (std::string(field) == "cpp_source" ? "cpp_source" : "cuda_source, or load_inline(cuda_sources=...)") + ")");
    return std::nullopt;
  }
  return it->get<std::string>();
}

std::string resolve_cache_dir(const std::string& configured, const std::string& kind) {
  return configured.empty() ? default_cache_dir(kind) : configured;
}

}  // namespace

std::string default_cache_dir(const std::string& kind) {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
    return (fs::path(xdg) / "kforge" / kind).string();
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    return (fs::path(home) / ".cache" / "kforge" / kind).string();
  }
  return (fs::temp_directory_path() / "kforge-cache" / kind).string();
}

std::string compiler_error_excerpt(const std::string& output, size_t limit) {
  size_t start = 0;
  size_t error_at = output.find(": error");
  if (error_at == std::string::npos) error_at = output.find("error:");
  if (error_at == std::string::npos) error_at = output.find("error");
  if (error_at != std::string::npos) {
    const size_t line_start = output.rfind('\n', error_at);
    start = line_start == std::string::npos ? 0 : line_start + 1;
    // Keep one line of context before it ("In function ...").
    if (start > 0) {
      const size_t previous = output.rfind('\n', start - 2);
      start = previous == std::string::npos ? 0 : previous + 1;
    }
  }
  std::string excerpt = output.substr(start, limit);
  if (output.size() - start > limit) excerpt += "\n[...]";
  return excerpt;
}

std::string source_origin_note(const std::string& code, const std::string& source, const std::string& file_name) {
  if (source.empty()) return {};
  const size_t at = code.find(source);
  if (at == std::string::npos) return {};
  const size_t line = 1 + static_cast<size_t>(std::count(code.begin(), code.begin() + static_cast<long>(at), '\n'));
  return "; line 1 of " + file_name + " is line " + std::to_string(line) + " of the candidate file";
}

std::vector<std::string> split_flags(const std::string& flags) {
  std::istringstream words(flags);
  std::vector<std::string> out;
  std::string word;
  while (words >> word) out.push_back(word);
  return out;
}

CppCompileStage::CppCompileStage(Options options, std::shared_ptr<HarnessPool> extractor)
    : options_(std::move(options)), extractor_(std::move(extractor)) {
  if (options_.timeout_seconds <= 0) throw std::invalid_argument("timeout_s must be > 0");
}

StageResult CppCompileStage::process(const EvalJob& job) const {
  StageResult failure;
  const auto source = extracted_source(job, kAttrCppSource, "cpp_source", "cpp", extractor_.get(),
                                       options_.check_limits, failure);
  if (!source) return failure;
  const auto compiler = find_program(options_.compiler);
  if (!compiler) {
    return StageResult::error("harness_error", "C++ compiler '" + options_.compiler +
                                                   "' not found on PATH (stage parameter compiler)");
  }
  Build build;
  build.tool = fs::path(options_.compiler).filename().string();
  build.command = {*compiler};
  for (const std::string& flag : split_flags(options_.flags)) build.command.push_back(flag);
  build.identity = compiler_identity(*compiler, options_.timeout_seconds);
  build.source_name = "candidate.cpp";
  build.source_text = *source;
  build.artifact_suffix = ".so";
  build.cache_dir = resolve_cache_dir(options_.cache_dir, "cpp");
  build.timeout_seconds = std::min(options_.timeout_seconds, job.seconds_left);
  build.cancelled = job.cancelled;
  if (job.code) build.origin_note = source_origin_note(*job.code, *source, build.source_name);
  return build_cached(build);
}

CudaCompileStage::CudaCompileStage(Options options, std::shared_ptr<HarnessPool> extractor)
    : options_(std::move(options)), extractor_(std::move(extractor)) {
  if (options_.prelude != "load_inline" && options_.prelude != "none") {
    throw std::invalid_argument("prelude must be load_inline or none, got '" + options_.prelude + "'");
  }
  if (options_.timeout_seconds <= 0) throw std::invalid_argument("timeout_s must be > 0");
}

StageResult CudaCompileStage::process(const EvalJob& job) const {
  StageResult failure;
  const auto source = extracted_source(job, kAttrCudaSource, "cuda_source", "cuda", extractor_.get(),
                                       options_.check_limits, failure);
  if (!source) return failure;
  std::optional<std::string> nvcc;
  if (!options_.nvcc.empty()) {
    nvcc = find_program(options_.nvcc);
    if (!nvcc) return StageResult::error("harness_error", "nvcc '" + options_.nvcc + "' not found (stage parameter nvcc)");
  } else {
    nvcc = find_program("nvcc");
    if (!nvcc) nvcc = find_program("/usr/local/cuda/bin/nvcc");
    if (!nvcc) {
      return StageResult::error("harness_error",
                                "nvcc not found: looked for nvcc on PATH and /usr/local/cuda/bin/nvcc; install the "
                                "CUDA toolkit or set the stage parameter nvcc");
    }
  }
  Build build;
  build.tool = "nvcc";
  build.command = {*nvcc, "-c"};
  for (const std::string& flag : split_flags(options_.flags)) build.command.push_back(flag);
  build.source_name = "candidate.cu";
  if (options_.prelude == "load_inline") {
    std::vector<std::string> includes;
    try {
      includes = torch_include_paths(resolve_python(options_.python));
    } catch (const std::exception& e) {
      return StageResult::error("harness_error", std::string("the load_inline prelude needs torch's headers: ") + e.what() +
                                                     " (or set prelude: none)");
    }
    for (const std::string& flag : kLoadInlineNvccFlags) build.command.push_back(flag);
    // -isystem: warnings inside torch's headers are not the candidate's.
    for (const std::string& dir : includes) build.command.insert(build.command.end(), {"-isystem", dir});
    // #line keeps diagnostics on the candidate's own line numbers after the prelude.
    build.source_text = std::string(kLoadInlineCudaPrelude) + "#line 1 \"candidate.cu\"\n" + *source;
  } else {
    build.source_text = *source;
  }
  build.identity = compiler_identity(*nvcc, options_.timeout_seconds);
  build.artifact_suffix = ".o";
  build.cache_dir = resolve_cache_dir(options_.cache_dir, "cuda");
  build.timeout_seconds = std::min(options_.timeout_seconds, job.seconds_left);
  build.cancelled = job.cancelled;
  if (job.code) build.origin_note = source_origin_note(*job.code, *source, build.source_name);
  return build_cached(build);
}

}  // namespace kforge::eval
