#include "python_env.hpp"

#include "process.hpp"
#include "shared_probe.hpp"

#include <dlfcn.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace kforge::eval {
namespace fs = std::filesystem;
namespace {

// Importing torch takes seconds on a loaded machine; more than this means it is stuck.
constexpr double kPythonProbeSeconds = 90;

struct Probe {
  bool ok = false;
  bool finished = false;  // `import torch` ran to its end (ok or not): a lasting answer
  std::string why;        // when not ok
};

// One probe per interpreter path per process: stages created by the dozen must not each
// pay seconds of `import torch`. nullopt when `deadline` passed first.
std::optional<Probe> probe_torch(const std::string& python, ProbeClock::time_point deadline) {
  static SharedProbe<Probe> probes;
  return probes.get(python, deadline, [python](const std::function<bool()>& stopping) {
    SharedProbe<Probe>::Found found;
    try {
      RunLimits limits = RunLimits::within(kPythonProbeSeconds);
      limits.cancelled = stopping;
      const CommandResult result = run_command({{python, "-c", "import torch"}, {}, {}}, limits);
      found.value.ok = result.ok();
      found.value.finished = found.settled = result.exited();
      if (!result.exited()) {
        found.value.why = "`import torch` did not finish: " + result.describe();
      } else if (!found.value.ok) {
        std::string output = result.output;
        const size_t last_line = output.find_last_of('\n', output.size() >= 2 ? output.size() - 2 : 0);
        if (last_line != std::string::npos && last_line + 1 < output.size()) output = output.substr(last_line + 1);
        while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
        found.value.why = "`import torch` failed (" + result.describe() + (output.empty() ? "" : ": " + output) + ")";
      }
    } catch (const SpawnError& e) {
      found.value.why = e.what();
    }
    return found;
  });
}

bool is_harness_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "kforge_harness" / "__init__.py", ec);
}

// Where this code was loaded from: the plugin's shared object (or a test executable).
fs::path own_binary_dir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&own_binary_dir), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  const fs::path binary = fs::weakly_canonical(fs::path(info.dli_fname), ec);
  return binary.parent_path();
}

}  // namespace

std::string resolve_python(const std::string& setting, ProbeClock::time_point deadline) {
  if (setting != "auto") {
    const auto path = find_program(setting);
    if (!path) throw std::runtime_error("python interpreter '" + setting + "' not found (parameter python)");
    return *path;
  }
  if (const char* env = std::getenv("KFORGE_PYTHON"); env != nullptr && *env != '\0') {
    const auto path = find_program(env);
    if (!path) throw std::runtime_error(std::string("KFORGE_PYTHON names '") + env + "', which is not an executable");
    return *path;
  }
  std::vector<std::string> tried;
  for (const char* candidate : {"/usr/bin/python3", "python3", "python"}) {
    const auto path = find_program(candidate);
    if (!path) {
      tried.push_back(std::string(candidate) + ": not found");
      continue;
    }
    const std::optional<Probe> probe = probe_torch(*path, deadline);
    if (!probe) {
      throw ProbeUnanswered("the stage timeout passed while waiting to learn whether " + *path +
                            " can import torch (a first `import torch` takes seconds on a loaded machine)");
    }
    if (probe->ok) return *path;
    // Whether this one, earlier in the order, imports torch is not known: taking a later
    // one would keep a choice made by a slow moment.
    if (!probe->finished) throw ProbeUnanswered("cannot tell whether " + *path + " can import torch: " + probe->why);
    tried.push_back(*path + ": " + probe->why);
  }
  std::string message = "no Python interpreter that can import torch was found; tried:";
  for (const std::string& line : tried) message += "\n  " + line;
  message += "\nInstall torch for one of them, set KFORGE_PYTHON, or set the stage parameter python.";
  throw std::runtime_error(message);
}

std::string locate_harness_dir(const std::string& parameter) {
  std::vector<std::string> looked;
  auto accept = [&](const fs::path& dir, const std::string& origin) -> std::optional<std::string> {
    if (dir.empty()) return std::nullopt;
    std::error_code ec;
    const fs::path full = fs::weakly_canonical(dir, ec);
    if (is_harness_dir(full)) return full.string();
    looked.push_back(dir.string() + " (" + origin + ")");
    return std::nullopt;
  };
  if (!parameter.empty()) {
    if (auto found = accept(parameter, "parameter harness_dir")) return *found;
    throw std::runtime_error("harness_dir '" + parameter + "' holds no kforge_harness package");
  }
  if (const char* env = std::getenv("KFORGE_HARNESS_DIR"); env != nullptr && *env != '\0') {
    if (auto found = accept(env, "KFORGE_HARNESS_DIR")) return *found;
    throw std::runtime_error(std::string("KFORGE_HARNESS_DIR '") + env + "' holds no kforge_harness package");
  }
  if (auto found = accept(KFORGE_HARNESS_SOURCE_DIR, "the source tree")) return *found;
  const fs::path binary_dir = own_binary_dir();
  if (!binary_dir.empty()) {
    if (auto found = accept(binary_dir / KFORGE_HARNESS_INSTALL_RELATIVE, "install location")) return *found;
  }
  std::string message = "the kforge harness (kforge_harness package) was not found; looked in:";
  for (const std::string& line : looked) message += "\n  " + line;
  message += "\nSet the stage parameter harness_dir or KFORGE_HARNESS_DIR.";
  throw std::runtime_error(message);
}

std::string locate_arena_allocator() {
  // The installed plugin's own install first: a moved prefix (scripts/bundle.sh) keeps it,
  // and a build tree left on the machine must not be taken for it.
  const fs::path binary_dir = own_binary_dir();
  std::error_code ec;
  if (!binary_dir.empty()) {
    const fs::path installed = binary_dir / KFORGE_ARENA_ALLOCATOR_INSTALL_RELATIVE;
    if (fs::is_regular_file(installed, ec)) return fs::weakly_canonical(installed, ec).string();
  }
  if (fs::is_regular_file(KFORGE_ARENA_ALLOCATOR_BUILD_FILE, ec)) return KFORGE_ARENA_ALLOCATOR_BUILD_FILE;
  return {};
}

std::vector<std::string> torch_include_paths(const std::string& python, ProbeClock::time_point deadline) {
  struct Includes {
    std::vector<std::string> paths;
    std::string problem;  // when there are none
  };
  // Only a list is kept: a failure (torch missing, a slow machine) is asked again.
  static SharedProbe<Includes> probes;
  const auto includes = probes.get(python, deadline, [python](const std::function<bool()>& stopping) {
    SharedProbe<Includes>::Found found;
    RunLimits limits = RunLimits::within(kPythonProbeSeconds);
    limits.cancelled = stopping;
    CommandResult result;
    try {
      result = run_command(
          {{python, "-c",
            // torch's own directories, and Python's (torch/extension.h includes Python.h),
            // as load_inline passes them.
            "import sysconfig, torch.utils.cpp_extension as e\n"
            "for p in e.include_paths() + [sysconfig.get_paths()['include']]: print('KFORGE_INCLUDE ' + p)"},
           {},
           {}},
          limits);
    } catch (const SpawnError& e) {
      found.value.problem = python + " could not tell torch's include directories: " + e.what();
      return found;
    }
    std::istringstream lines(result.output);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("KFORGE_INCLUDE ", 0) == 0) found.value.paths.push_back(line.substr(15));
    }
    if (!result.ok() || found.value.paths.empty()) {
      found.value.paths.clear();
      found.value.problem = python + " could not tell torch's include directories (" + result.describe() + "):\n" +
                            result.output.substr(0, 2000);
    }
    found.settled = found.value.problem.empty();  // a list comes only from a run that exited 0
    return found;
  });
  if (!includes) {
    throw ProbeUnanswered("the stage timeout passed while waiting for " + python +
                          " to tell torch's include directories (a first `import torch` takes seconds on a loaded "
                          "machine)");
  }
  if (!includes->problem.empty()) throw std::runtime_error(includes->problem);
  return includes->paths;
}

void check_device(const std::string& python, const std::string& harness_dir, const std::string& device,
                  ProbeClock::time_point deadline) {
  struct Readiness {
    std::string problem;  // empty: ready
  };
  static SharedProbe<Readiness> probes;
  const std::string key = python + '\n' + harness_dir + '\n' + device;
  const auto readiness = probes.get(key, deadline, [=](const std::function<bool()>& stopping) {
    SharedProbe<Readiness>::Found found;
    RunLimits limits = RunLimits::within(kPythonProbeSeconds);
    limits.cancelled = stopping;
    CommandResult result;
    try {
      result = run_command({{python, "-m", "kforge_harness", "check-device", "--device", device},
                            {{"PYTHONPATH", harness_dir}, {"PYTHONUNBUFFERED", "1"}},
                            {}},
                           limits);
    } catch (const SpawnError& e) {
      found.value.problem = "cannot ask " + python + " whether " + device + " can be used: " + e.what();
      return found;
    }
    found.settled = result.exited();
    if (result.ok()) return found;
    // The harness's answer is a JSON line: {"ready": false, "error": "..."}.
    std::istringstream lines(result.output);
    for (std::string line; std::getline(lines, line);) {
      const auto answer = nlohmann::json::parse(line, nullptr, false);
      if (answer.is_object() && answer.value("error", nlohmann::json()).is_string()) {
        found.value.problem = answer["error"].get<std::string>();
      }
    }
    if (found.value.problem.empty()) {
      found.value.problem = python + " -m kforge_harness check-device --device " + device + " failed (" +
                            result.describe() + "): " + result.output.substr(0, 2000);
    }
    return found;
  });
  if (!readiness) {
    throw ProbeUnanswered("the stage timeout passed while waiting to learn whether " + python + " can use " + device);
  }
  if (!readiness->problem.empty()) throw std::runtime_error(readiness->problem);
}

}  // namespace kforge::eval
