// Recipe 1 of docs/extending.md: an LLM backend as a plugin of its own. `command_llm.generate`
// asks a model that a command stands for (`ollama run MODEL`, `llm -m MODEL`, a script in
// front of an in-house endpoint): the prompt goes to its standard input, its answer comes
// from its standard output. Whatever is not an OpenAI-compatible HTTP API fits this shape.
#include "command.hpp"

#include <kforge/sdk.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using kforge::sdk::Job;
using kforge::sdk::Param;

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every "{{name}}" of `text` replaced by its value; values are not scanned again.
std::string render(const std::string& text, const std::vector<std::pair<std::string, std::string>>& values) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    bool replaced = false;
    for (const auto& [name, value] : values) {
      const std::string placeholder = "{{" + name + "}}";
      if (text.compare(at, placeholder.size(), placeholder) == 0) {
        out += value;
        at += placeholder.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += text[at++];
  }
  return out;
}

// The code in a model's answer: its first fenced block, else the whole answer.
std::string extract_code(const std::string& answer) {
  const size_t open = answer.find("```");
  if (open == std::string::npos) return answer;
  const size_t body = answer.find('\n', open);
  if (body == std::string::npos) return "";
  const size_t close = answer.find("\n```", body);
  return answer.substr(body + 1, close == std::string::npos ? std::string::npos : close - body);
}

constexpr const char* kDefaultPrompt =
    "Task {{task_name}}: write a {{target}} kernel for this PyTorch reference, as a module with a class ModelNew "
    "that replaces Model. Answer with the code in one fenced block.\n\n{{task_source}}\n";

class Generate : public kforge::sdk::Stage {
 public:
  struct Options {
    std::vector<std::string> command;
    std::string model;
    std::string target;
    std::filesystem::path prompt;
    kforge::sdk::Seconds timeout{};
  };
  static constexpr const char* kName = "command_llm.generate";
  static constexpr const char* kDoc =
      "Asks the model a command stands for: the prompt on its standard input, the answer on its standard output.";
  static constexpr kf_stage_role kRole = KF_ROLE_GENERATE;  // reports count it as generation time
  static constexpr uint32_t kFlags = KF_STAGE_WAITS;        // it waits on a child: threads of its own
  static std::vector<Param> params() {
    return {
        Param{"command", KF_PARAM_STRING_LIST, nullptr, true,
              "The program and its arguments, e.g. [ollama, run, qwen2.5-coder:7b]; run in the pipeline file's directory."}
            .bind(&Options::command),
        Param{"model", KF_PARAM_STRING, nullptr, true, "The model's name in the reports (candidate.model)."}.bind(
            &Options::model),
        Param{"target", KF_PARAM_STRING, nullptr, true, "The candidate's language."}
            .one_of({"cpp", "triton", "cuda"})
            .bind(&Options::target),
        Param{"prompt", KF_PARAM_STRING, "", false,
              "Template file ({{task_name}}, {{task_source}}, {{target}}), relative to the pipeline file; empty: a built-in one."}
            .bind(&Options::prompt),
        Param{"timeout", KF_PARAM_DURATION, "10m", false, "How long one answer may take."}.above(0).bind(
            &Options::timeout),
    };
  }

  Generate(const Options& options, const kforge::sdk::PipelineDir& dir)
      : options_(options), directory_(dir.path()), template_(kDefaultPrompt) {
    if (options_.command.empty()) throw std::invalid_argument("command is empty: give the program to run");
    if (!options_.prompt.empty()) {
      template_ = read_file(options_.prompt);
      if (template_.empty()) throw std::invalid_argument("prompt file " + options_.prompt.string() + " is missing or empty");
    }
  }

  // Before the first job, not in the constructor: `kforge validate` may run on another machine.
  void preflight() const {
    if (example::find_program(options_.command[0], directory_).empty()) {
      throw std::runtime_error("no program '" + options_.command[0] +
                               "' on PATH (or not executable); install it or give its path in command");
    }
  }

  void process(Job& job) override {
    std::string source = job.get_or(KF_KEY_TASK_SOURCE);
    if (source.empty()) source = read_file(job.get_or(KF_KEY_TASK_PATH));
    if (source.empty()) return job.error("task_unreadable", "the task has neither task.source nor a readable task.path");
    const std::string prompt = render(template_, {{"task_name", job.get_or(KF_KEY_TASK_NAME, job.get_or(KF_KEY_TASK_ID))},
                                                  {"task_source", source},
                                                  {"target", options_.target}});
    const auto limit = std::min(options_.timeout, kforge::sdk::Seconds(job.seconds_left()));
    const auto started = std::chrono::steady_clock::now();
    const example::CommandResult answer =
        example::run_command(options_.command, prompt, directory_, limit, [&job] { return job.cancelled(); });
    job.metric("llm_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    if (answer.end == example::CommandResult::End::cancelled) return job.error("cancelled", "the run is being cancelled");
    if (answer.end != example::CommandResult::End::exited || answer.status != 0) {
      // The model did not answer: not the candidate's fault, so an error, not a failure.
      job.log_tail(answer.err);
      return job.error("llm_error", options_.command[0] + " " + answer.describe() +
                                        (answer.err.empty() ? "" : ": " + last_line(answer.err)));
    }
    const std::string code = extract_code(answer.out);
    job.set(KF_KEY_CANDIDATE_MODEL, options_.model);
    job.set(KF_KEY_CANDIDATE_LANGUAGE, options_.target);
    if (code.find_first_not_of(" \t\r\n") == std::string::npos) {
      job.log_tail(answer.out);
      return job.fail("no_code", "the answer holds no code");
    }
    job.set(KF_KEY_CANDIDATE_CODE, code);
    job.pass();
  }

 private:
  static std::string last_line(const std::string& text) {
    const size_t end = text.find_last_not_of("\r\n");
    if (end == std::string::npos) return "";
    const size_t start = text.rfind('\n', end);
    return text.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
  }

  Options options_;
  std::filesystem::path directory_;
  std::string template_;
};

}  // namespace

KFORGE_PLUGIN("command_llm", "1.0.0", Generate)
