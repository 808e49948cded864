// Recipe 2 of docs/extending.md: a device runner. `device_runner.run` is L3 for a device
// kforge has never heard of: it hands the candidate and the task to the device's own
// evaluator (a vendor's script, a remote runner) and turns the one JSON line that evaluator
// prints into the verdict, with the ABI's well-known names, so every report shows it as it
// shows kforge's own runner: pass rates, error classes, speedups, timings, the device and
// its environment.
//
// The evaluator's last line of output:
//   {"status": "pass" | "fail" | "error", "error_class": "numerical_mismatch", "message": "...",
//    "metrics": {"speedup": 2.5, "candidate_ms": 2.0, "reference_ms": 5.0, "trials": 5},
//    "environment": {"npu": "Ascend 910B", "cann": "8.0"}}
#include "command.hpp"

#include <kforge/sdk.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using kforge::sdk::Job;
using kforge::sdk::Param;

// The last line of `out` that is a JSON object, or a discarded value.
nlohmann::json result_line(const std::string& out) {
  size_t end = out.size();
  while (end > 0) {
    const size_t start = out.rfind('\n', end - 1);
    const size_t from = start == std::string::npos ? 0 : start + 1;
    nlohmann::json line = nlohmann::json::parse(out.substr(from, end - from), nullptr, false);
    if (line.is_object()) return line;
    if (start == std::string::npos) break;
    end = start;
  }
  return nlohmann::json::value_t::discarded;
}

// `text` with each placeholder of `values` replaced by its value.
std::string expand(std::string text, const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [placeholder, value] : values) {
    for (size_t at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + value.size())) {
      text.replace(at, placeholder.size(), value);
    }
  }
  return text;
}

class Run : public kforge::sdk::Stage {
 public:
  struct Options {
    std::vector<std::string> command;
    std::string device;
    kforge::sdk::Seconds timeout{};
  };
  static constexpr const char* kName = "device_runner.run";
  static constexpr const char* kDoc =
      "L3 on a device of its own: runs the device's evaluator on the candidate and reads its JSON verdict.";
  static constexpr kf_stage_role kRole = KF_ROLE_RUN;    // its speedups and timings are the run's
  static constexpr uint32_t kFlags = KF_STAGE_WAITS;     // it waits on the evaluator
  static std::vector<Param> params() {
    return {
        Param{"command", KF_PARAM_STRING_LIST, nullptr, true,
              "The evaluator and its arguments; {candidate}, {task}, {device} and {language} are replaced "
              "(files holding the candidate's code and the task's source). Run in the pipeline file's directory."}
            .bind(&Options::command),
        Param{"device", KF_PARAM_STRING, "npu:0", false, "The device it runs on (candidate.device)."}.bind(
            &Options::device),
        Param{"timeout", KF_PARAM_DURATION, "10m", false, "How long one evaluation may take."}.above(0).bind(
            &Options::timeout),
    };
  }

  Run(const Options& options, const kforge::sdk::PipelineDir& dir) : options_(options), directory_(dir.path()) {
    if (options_.command.empty()) throw std::invalid_argument("command is empty: give the evaluator to run");
  }

  void preflight() const {
    if (example::find_program(options_.command[0], directory_).empty()) {
      throw std::runtime_error("no evaluator '" + options_.command[0] +
                               "' (not on PATH, or not executable); install the device's tools or give its path");
    }
  }

  void process(Job& job) override {
    const std::string code = job.get_or(KF_KEY_CANDIDATE_CODE);
    if (code.empty()) return job.fail(KF_ERROR_NO_CANDIDATE, "the job has no candidate.code to run");
    job.set(KF_KEY_CANDIDATE_DEVICE, options_.device);

    // The evaluator reads files: the candidate, and the task when it has no file of its own.
    const std::filesystem::path scratch = scratch_directory();
    const std::filesystem::path candidate = scratch / "candidate.py";
    std::ofstream(candidate, std::ios::binary) << code;
    std::string task = job.get_or(KF_KEY_TASK_PATH);
    if (task.empty()) {
      task = (scratch / "task.py").string();
      std::ofstream(task, std::ios::binary) << job.get_or(KF_KEY_TASK_SOURCE);
    }
    std::vector<std::string> argv;
    for (const std::string& arg : options_.command) {
      argv.push_back(expand(arg, {{"{candidate}", candidate.string()},
                                  {"{task}", task},
                                  {"{device}", options_.device},
                                  {"{language}", job.get_or(KF_KEY_CANDIDATE_LANGUAGE)}}));
    }
    const auto limit = std::min(options_.timeout, kforge::sdk::Seconds(job.seconds_left()));
    const example::CommandResult run =
        example::run_command(argv, "", directory_, limit, [&job] { return job.cancelled(); });
    std::error_code ignored;
    std::filesystem::remove_all(scratch, ignored);
    job.log_tail(run.err);

    if (run.end == example::CommandResult::End::cancelled) return job.error("cancelled", "the run is being cancelled");
    if (run.end == example::CommandResult::End::timed_out) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", limit.count());
      return job.fail(KF_ERROR_TIMEOUT, std::string("the evaluation took longer than its limit, ") + seconds + " s");
    }
    const nlohmann::json verdict = result_line(run.out);
    if (!verdict.is_object()) {
      // No verdict: the evaluator broke, not the candidate.
      return job.error(KF_ERROR_HOST, options_.command[0] + " " + run.describe() + " without a JSON verdict line");
    }
    if (verdict.contains("environment") && verdict["environment"].is_object()) {
      job.set(KF_KEY_RUN_ENVIRONMENT, verdict["environment"].dump());
    }
    if (verdict.contains("metrics") && verdict["metrics"].is_object()) {
      for (const auto& [name, value] : verdict["metrics"].items()) {
        if (value.is_number()) job.metric(name.c_str(), value.get<double>());
      }
    }
    const std::string status = verdict.value("status", "");
    const std::string message = verdict.value("message", "");
    if (status == "pass") return job.pass();
    if (status == "fail") return job.fail(verdict.value("error_class", KF_ERROR_RUNTIME), message);
    return job.error(verdict.value("error_class", KF_ERROR_HOST),
                     status == "error" ? message : "the evaluator's status '" + status + "' is not pass, fail or error");
  }

 private:
  static std::filesystem::path scratch_directory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "device_runner.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a scratch directory in " + pattern);
    return pattern;
  }

  Options options_;
  std::filesystem::path directory_;
};

}  // namespace

KFORGE_PLUGIN("device_runner", "1.0.0", Run)
