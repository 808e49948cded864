#include "native_compile.hpp"

#include "joined.hpp"
#include "process.hpp"
#include "python_env.hpp"
#include "shared_probe.hpp"

#include <kforge/sha256.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

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

struct Build {
  std::string tool;                   // for messages: g++, nvcc
  std::vector<std::string> command;   // compiler and flags; source, -o and output follow
  std::string identity;
  std::string source_name;            // candidate.cpp, candidate.cu
  std::string source_text;            // exactly what is compiled
  std::string artifact_suffix;        // .so, .o
  std::string cache_dir;
  double timeout_seconds = 120;       // the stage's compile limit
  std::function<double()> seconds_left;  // the stage timeout's time left (EvalJob::seconds_left)
  std::function<bool()> cancelled;
  std::string origin_note;            // where the source's line 1 is in the candidate file
  std::string python;                 // runs the sandbox
  std::string harness_dir;
  std::vector<std::string> readonly;  // what the compiler needs beyond the system's dirs
};

// What the stage timeout leaves the build now (+inf without one).
double stage_seconds_left(const Build& build) {
  return build.seconds_left ? build.seconds_left() : std::numeric_limits<double>::infinity();
}

// What the compile may take: the compile limit, cut to what the stage timeout leaves when
// it starts. The probes before it (interpreter, --version) are not the candidate's compile:
// a job waits for them until the stage's deadline, each under a limit of its own.
double step_limit(const Build& build) { return std::min(build.timeout_seconds, stage_seconds_left(build)); }

std::atomic<uint64_t> g_build_counter{0};

// A compiler's output larger than this is refused (it is also the sandbox's file-size
// limit, so the compiler cannot fill the disk either).
constexpr int kMaxArtifactMb = 1024;

// The file's content, read without following a link, if it is a regular file of at most
// kMaxArtifactMb; else nullopt with `why`.
std::optional<std::string> read_regular_file(const fs::path& path, std::string& why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    why = std::string(std::strerror(errno));
    return std::nullopt;
  }
  struct stat info {};
  std::string content;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    why = "not a regular file";
  } else if (info.st_size > static_cast<off_t>(kMaxArtifactMb) * 1024 * 1024) {
    why = "larger than " + std::to_string(kMaxArtifactMb) + " MB";
  } else {
    content.resize(static_cast<size_t>(info.st_size));
    size_t got = 0;
    while (got < content.size()) {
      const ssize_t n = ::read(fd, content.data() + got, content.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (got != content.size()) why = "short read";
  }
  ::close(fd);
  if (!why.empty()) return std::nullopt;
  return content;
}

// Writes `content` to `path` through a private temporary file and a rename, so that no
// reader ever sees half of it.
void write_atomically(const fs::path& path, const std::string& content) {
  const fs::path temporary = path.parent_path() / (".tmp-" + path.filename().string() + "-" +
                                                   std::to_string(::getpid()) + "-" + std::to_string(g_build_counter++));
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out.flush()) throw std::runtime_error("cannot write " + temporary.string());
  }
  fs::permissions(temporary, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                                 fs::perms::others_read);
  fs::rename(temporary, path);
}

// The compile cache. For key K: K.sha256 records the artifact's content hash H (written
// last: it publishes the entry), the artifact is K-<H[:16]><suffix> and the source it was
// built from sits beside it with the source's extension (kforge_cpp.load checks it).
// Naming artifacts by content lets concurrent builds of one key publish without ever
// pairing a record with another build's bytes.
class ArtifactCache {
 public:
  struct Entry {
    std::string path;
    std::string sha256;
  };

  ArtifactCache(fs::path dir, std::string suffix) : dir_(std::move(dir)), suffix_(std::move(suffix)) {}

  // The entry of `key` after checking its content against the record; nullopt when there
  // is none, or (with `rejected` saying why) when it failed the check and was removed.
  std::optional<Entry> find(const std::string& key, std::string& rejected) const {
    std::string recorded, why;
    const auto record = read_regular_file(record_path(key), why);
    if (!record) return std::nullopt;
    recorded = record->substr(0, 64);
    const fs::path artifact = artifact_path(key, recorded);
    const auto content = read_regular_file(artifact, why);
    const std::string actual = content ? kforge::sha256_hex(*content) : "";
    if (content && actual == recorded) return Entry{artifact.string(), actual};
    rejected = artifact.string() + (content ? " does not match its recorded SHA-256" : ": " + why);
    std::error_code ignored;
    fs::remove(record_path(key), ignored);
    fs::remove(artifact, ignored);
    return std::nullopt;
  }

  // Copies a freshly built artifact (read as a regular file, never through a link) and
  // its source into the cache. Throws std::runtime_error saying what failed.
  Entry publish(const std::string& key, const fs::path& built, const std::string& source_extension,
                const std::string& source_text) const {
    std::string why;
    const auto content = read_regular_file(built, why);
    if (!content) throw std::runtime_error("the compiler's output " + built.filename().string() + " is unusable: " + why);
    const std::string sha256 = kforge::sha256_hex(*content);
    const fs::path artifact = artifact_path(key, sha256);
    write_atomically(artifact, *content);
    write_atomically(fs::path(artifact).replace_extension(source_extension), source_text);
    write_atomically(record_path(key), sha256 + "\n");
    return {artifact.string(), sha256};
  }

 private:
  fs::path record_path(const std::string& key) const { return dir_ / (key + ".sha256"); }
  fs::path artifact_path(const std::string& key, const std::string& sha256) const {
    return dir_ / (key + "-" + sha256.substr(0, 16) + suffix_);
  }

  fs::path dir_;
  std::string suffix_;
};

// What the sandbox's first output line says: kforge-sandbox: {"missing": [...], ...}.
constexpr std::string_view kSandboxReportPrefix = "kforge-sandbox: ";
// The sandbox's exit status when it could not start the command at all.
constexpr int kSandboxFailed = 125;

// The compiler's command line run through the harness's sandbox: the build directory the
// only writable place, `readonly` visible too, the compiler's CPU time and file sizes
// bounded (the wall-clock limit stays with run_command).
SpawnSpec sandboxed(const Build& build, const fs::path& work, const std::vector<std::string>& command) {
  SpawnSpec spec;
  spec.argv = {build.python, "-I", "-S", "-c",
               "import sys; sys.path.insert(0, sys.argv[1]); from kforge_harness import sandbox; "
               "sandbox.main(sys.argv[2:])",
               build.harness_dir, "run", "--workdir", work.string(),
               "--limit", "cpu_s=" + std::to_string(static_cast<long>(build.timeout_seconds) + 5),
               "--limit", "file_size_mb=" + std::to_string(kMaxArtifactMb)};
  for (const std::string& path : build.readonly) spec.argv.insert(spec.argv.end(), {"--ro", path});
  spec.argv.push_back("--");
  spec.argv.insert(spec.argv.end(), command.begin(), command.end());
  spec.cwd = work.string();
  return spec;
}

// Takes the sandbox's report line off the compiler's output; the protections it lacked.
// nullopt when the output does not start with one (the sandbox failed before the command).
std::optional<std::vector<std::string>> take_sandbox_report(std::string& output) {
  if (output.rfind(kSandboxReportPrefix, 0) != 0) return std::nullopt;
  const size_t end = output.find('\n');
  const nlohmann::json report = nlohmann::json::parse(
      output.substr(kSandboxReportPrefix.size(), end - kSandboxReportPrefix.size()), nullptr, false);
  if (!report.is_object() || !report.contains("missing") || !report["missing"].is_array()) return std::nullopt;
  output.erase(0, end == std::string::npos ? output.size() : end + 1);
  std::vector<std::string> missing;
  for (const auto& name : report["missing"]) {
    if (name.is_string()) missing.push_back(name.get<std::string>());
  }
  return missing;
}

// A private directory of the cache for one sandboxed command, removed with this object.
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const fs::path& cache_dir, const std::string& name) {
    path = cache_dir / ("." + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(g_build_counter++));
    std::error_code ec;
    fs::create_directories(path, ec);
    if (ec) {
      throw std::runtime_error("cannot create " + path.string() + ": " + ec.message() +
                               " (set the stage parameter cache_dir)");
    }
    fs::permissions(path, fs::perms::owner_all, ec);
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// `<compiler> --version`: part of the cache key, so a compiler upgraded in place does not
// reuse old artifacts. Run in the sandbox too: this stage never runs a compiler, or anything
// a pipeline names as one, outside it. Once per compiler and process, shared by all jobs
// (SharedProbe: none waits past its own step limit). What a probe that exited printed is
// kept, whatever its status (a compiler without --version is known by its path and what it
// said); one that hung, was killed or could not start is not: the next job asks again.
struct CompilerIdentity {
  std::string identity;
  std::string problem;  // why there is none
};

SharedProbe<CompilerIdentity>::Found probe_compiler(Build build, const std::function<bool()>& stopping) {
  SharedProbe<CompilerIdentity>::Found found;
  const std::string& path = build.command.front();
  try {
    const ScratchDir work(build.cache_dir, "probe");
    RunLimits limits = RunLimits::within(kVersionProbeSeconds);
    limits.cancelled = stopping;
    CommandResult result = run_command(sandboxed(build, work.path, {path, "--version"}), limits);
    if (!result.exited()) {
      found.value.problem = "`" + path + " --version` did not finish: " + result.describe();
      return found;
    }
    if (!take_sandbox_report(result.output)) {
      found.value.problem = "the compile sandbox (" + build.python + ") failed to run `" + path + " --version` (" +
                            result.describe() + "):\n" + tail_of(result.output, kMessageChars);
      return found;
    }
    found.value.identity = path;
    std::istringstream lines(result.output);
    std::string line;
    while (std::getline(lines, line)) found.value.identity += "\n" + line;
    found.settled = true;
  } catch (const std::exception& e) {
    found.value.problem = "cannot ask `" + path + " --version`: " + e.what();
  }
  return found;
}

// Sets build.identity; an error verdict when there is none within the step's limit.
std::optional<StageResult> identify_compiler(Build& build) {
  static SharedProbe<CompilerIdentity> probes;
  // The probe outlives this job: it gets a copy that refers to nothing of the job.
  Build probe_build = build;
  probe_build.seconds_left = nullptr;
  probe_build.cancelled = nullptr;
  probe_build.timeout_seconds = kVersionProbeSeconds;
  const auto found = probes.get(build.command.front(), probe_deadline_after(stage_seconds_left(build)),
                                [probe_build](const std::function<bool()>& stopping) {
                                  return probe_compiler(probe_build, stopping);
                                });
  if (!found) {
    return StageResult::error("timeout", "the stage timeout passed while waiting for `" + build.command.front() +
                                             " --version` (the compiler's identity, asked once per process): the "
                                             "compiler or the host is too slow");
  }
  if (!found->problem.empty()) return StageResult::error("harness_error", found->problem);
  build.identity = found->identity;
  return std::nullopt;
}

StageResult handed_out(const ArtifactCache::Entry& entry, double seconds, bool cached) {
  StageResult pass;
  pass.attributes.emplace_back(kAttrArtifact, entry.path);
  pass.attributes.emplace_back(kAttrArtifactSha256, entry.sha256);
  pass.metrics = {{"compile_seconds", seconds}, {"cached", cached ? 1.0 : 0.0}};
  return pass;
}

StageResult build_cached(Build build) {
  std::error_code ec;
  fs::create_directories(build.cache_dir, ec);
  if (auto problem = identify_compiler(build)) return *problem;
  std::string key_material;
  for (const std::string& part : build.command) key_material += part + '\n';
  const std::string key = kforge::sha256_of_fields({build.source_text, build.identity, key_material});
  const fs::path cache_dir(build.cache_dir);
  const ArtifactCache cache(cache_dir, build.artifact_suffix);
  std::string rejected;
  if (const auto entry = cache.find(key, rejected)) return handed_out(*entry, 0, true);
  const std::string rejection_note =
      rejected.empty() ? "" : "compile cache: " + rejected + "; the entry was removed and rebuilt\n";

  // Each build in a private directory: the sandbox sees it and nothing else of the cache.
  std::optional<ScratchDir> scratch;
  try {
    scratch.emplace(cache_dir, "build-" + key.substr(0, 16));
  } catch (const std::exception& e) {
    return StageResult::error("harness_error", e.what());
  }
  const fs::path& work = scratch->path;
  {
    std::ofstream out(work / build.source_name, std::ios::binary);
    out << build.source_text;
    if (!out) return StageResult::error("harness_error", "cannot write " + (work / build.source_name).string());
  }
  const std::string output_name = "candidate" + build.artifact_suffix;
  const double compile_limit = std::max(0.0, step_limit(build));
  CommandResult result;
  try {
    RunLimits limits = RunLimits::within(compile_limit);
    limits.cancelled = build.cancelled;
    std::vector<std::string> command = build.command;
    command.insert(command.end(), {build.source_name, "-o", output_name});
    result = run_command(sandboxed(build, work, command), limits);
  } catch (const SpawnError& e) {
    return StageResult::error("harness_error", std::string("cannot start the compile sandbox: ") + e.what());
  }
  const auto missing = take_sandbox_report(result.output);
  if (!missing && !result.cancelled && !result.timed_out) {
    return StageResult::error("harness_error", "the compile sandbox (" + build.python + " -m kforge_harness.sandbox) failed (" +
                                                   result.describe() + "):\n" + tail_of(result.output, kMessageChars));
  }
  StageResult verdict;
  if (result.cancelled) {
    verdict = StageResult::error("harness_error", build.tool + " was stopped: the run is being cancelled");
  } else if (result.timed_out) {
    verdict = StageResult::fail(KF_ERROR_TIMEOUT, build.tool + " did not finish compiling " + build.source_name +
                                               " within " + std::to_string(static_cast<int>(compile_limit)) +
                                               " s and was killed");
  } else if (!result.ok()) {
    verdict = StageResult::fail(KF_ERROR_COMPILE, build.tool + " could not compile " + build.source_name + " (" +
                                                     result.describe() + build.origin_note + "):\n" +
                                                     compiler_error_excerpt(result.output, kMessageChars));
  } else {
    try {
      verdict = handed_out(cache.publish(key, work / output_name, fs::path(build.source_name).extension().string(),
                                         build.source_text),
                           result.seconds, false);
    } catch (const std::exception& e) {  // exit status 0 without a usable output: the toolchain's fault
      verdict = StageResult::error("harness_error", build.tool + " reported success, but " + e.what());
    }
  }
  if (verdict.metrics.empty()) verdict.metrics = {{"compile_seconds", result.seconds}, {"cached", 0}};
  std::string sandbox_note;
  if (missing && !missing->empty()) {
    verdict.attributes.emplace_back(kAttrCompileSandboxMissing, joined(*missing, ","));
    sandbox_note = "compile sandbox: this host could not give " + joined(*missing, ", ") + "\n";
  }
  const std::string log = rejection_note + sandbox_note + result.output;
  if (!log.empty()) verdict.log_tail = tail_of(log, kLogTailChars);  // errors, warnings
  return verdict;
}

// The extracted source the check stage left on the job, or the harness' extraction now.
std::optional<std::string> extracted_source(const EvalJob& job, const char* attribute, const char* field,
                                            const std::string& language, HarnessPool* extractor,
                                            const ChildLimits& limits, StageResult& failure) {
  if (const std::string* source = job.attribute(attribute)) return *source;
  if (!job.code) {
    failure = StageResult::fail(KF_ERROR_NO_CANDIDATE, "the job has no candidate.code to compile");
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
    failure = StageResult::fail(KF_ERROR_CHECKER_REJECTED, std::string("the candidate has no ") + field +
                                                        " to compile (expected a module-level string named " +
                                                        (std::string(field) == "cpp_source" ? "cpp_source" : "cuda_source, or load_inline(cuda_sources=...)") + ")");
    return std::nullopt;
  }
  return it->get<std::string>();
}

// The interpreter and the harness that run the compile sandbox; an error result when
// either is missing, or when the step's time ran out while the interpreter was probed.
std::optional<StageResult> find_sandbox(const std::string& python, const std::string& harness_dir, Build& build) {
  try {
    build.python = resolve_python(python, probe_deadline_after(stage_seconds_left(build)));
    build.harness_dir = locate_harness_dir(harness_dir);
  } catch (const ProbeUnanswered& e) {
    return StageResult::error("timeout", e.what());
  } catch (const std::exception& e) {
    return StageResult::error("harness_error", std::string("compiles run in the harness's sandbox, which needs "
                                                           "Python and kforge_harness: ") + e.what());
  }
  return std::nullopt;
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

std::string locate_compiler(const std::string& setting) {
  if (auto path = find_program(setting)) return *path;
  throw std::runtime_error("C++ compiler '" + setting + "' not found " +
                           (setting.find('/') != std::string::npos ? std::string("(no such executable file)")
                                                                   : "on PATH") +
                           ": install it (Debian: g++) or set the stage parameter compiler");
}

std::string locate_nvcc(const std::string& setting) {
  if (!setting.empty()) {
    if (auto path = find_program(setting)) return *path;
    throw std::runtime_error("nvcc '" + setting + "' not found: install the CUDA toolkit or correct the stage parameter nvcc");
  }
  for (const char* candidate : {"nvcc", "/usr/local/cuda/bin/nvcc"}) {
    if (auto path = find_program(candidate)) return *path;
  }
  throw std::runtime_error("nvcc not found: looked for nvcc on PATH and /usr/local/cuda/bin/nvcc; install the CUDA "
                           "toolkit or set the stage parameter nvcc");
}

CppCompileStage::CppCompileStage(Options options, std::shared_ptr<HarnessPool> extractor)
    : options_(std::move(options)), extractor_(std::move(extractor)) {}

StageResult CppCompileStage::process(const EvalJob& job) const {
  StageResult failure;
  const auto source = extracted_source(job, kAttrCppSource, "cpp_source", kLanguageCpp, extractor_.get(),
                                       options_.check_limits, failure);
  if (!source) return failure;
  std::string compiler;
  try {
    compiler = locate_compiler(options_.compiler);
  } catch (const std::runtime_error& e) {
    return StageResult::error("harness_error", e.what());
  }
  Build build;
  build.tool = fs::path(options_.compiler).filename().string();
  build.command = {compiler};
  for (const std::string& flag : split_flags(options_.flags)) build.command.push_back(flag);
  build.source_name = "candidate.cpp";
  build.source_text = *source;
  build.artifact_suffix = ".so";
  build.cache_dir = resolve_cache_dir(options_.cache_dir, kLanguageCpp);
  build.timeout_seconds = options_.timeout_seconds;
  build.seconds_left = job.seconds_left;
  build.cancelled = job.cancelled;
  if (job.code) build.origin_note = source_origin_note(*job.code, *source, build.source_name);
  build.readonly = {compiler};
  if (auto problem = find_sandbox(options_.python, options_.harness_dir, build)) return *problem;
  return build_cached(build);
}

CudaCompileStage::CudaCompileStage(Options options, std::shared_ptr<HarnessPool> extractor)
    : options_(std::move(options)), extractor_(std::move(extractor)) {}

StageResult CudaCompileStage::process(const EvalJob& job) const {
  StageResult failure;
  const auto source = extracted_source(job, kAttrCudaSource, "cuda_source", kLanguageCuda, extractor_.get(),
                                       options_.check_limits, failure);
  if (!source) return failure;
  std::string nvcc;
  try {
    nvcc = locate_nvcc(options_.nvcc);
  } catch (const std::runtime_error& e) {
    return StageResult::error("harness_error", e.what());
  }
  Build build;
  build.tool = "nvcc";
  build.command = {nvcc, "-c"};
  for (const std::string& flag : split_flags(options_.flags)) build.command.push_back(flag);
  build.source_name = "candidate.cu";
  if (options_.prelude == "load_inline") {
    std::vector<std::string> includes;
    try {
      const auto deadline = probe_deadline_after(job.seconds_left());
      includes = torch_include_paths(resolve_python(options_.python, deadline), deadline);
    } catch (const ProbeUnanswered& e) {
      return StageResult::error("timeout", e.what());
    } catch (const std::exception& e) {
      return StageResult::error("harness_error", std::string("the load_inline prelude needs torch's headers: ") + e.what() +
                                                     " (or set prelude: none)");
    }
    for (const std::string& flag : kLoadInlineNvccFlags) build.command.push_back(flag);
    // -isystem: warnings inside torch's headers are not the candidate's.
    for (const std::string& dir : includes) {
      build.command.insert(build.command.end(), {"-isystem", dir});
      std::error_code ec;
      if (fs::exists(dir, ec)) build.readonly.push_back(dir);  // torch lists some that are not there
    }
    // #line keeps diagnostics on the candidate's own line numbers after the prelude.
    build.source_text = std::string(kLoadInlineCudaPrelude) + "#line 1 \"candidate.cu\"\n" + *source;
  } else {
    build.source_text = *source;
  }
  build.artifact_suffix = ".o";
  build.cache_dir = resolve_cache_dir(options_.cache_dir, kLanguageCuda);
  build.timeout_seconds = options_.timeout_seconds;
  build.seconds_left = job.seconds_left;
  build.cancelled = job.cancelled;
  if (job.code) build.origin_note = source_origin_note(*job.code, *source, build.source_name);
  // The whole toolkit (nvcc finds cicc, ptxas and its headers relative to itself).
  std::error_code ec;
  build.readonly.push_back(fs::canonical(nvcc, ec).parent_path().parent_path().string());
  if (auto problem = find_sandbox(options_.python, options_.harness_dir, build)) return *problem;
  return build_cached(build);
}

}  // namespace kforge::eval
