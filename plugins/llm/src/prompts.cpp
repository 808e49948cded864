#include "prompts.hpp"

namespace kforge::llm {

const std::vector<std::string>& generation_variables() {
  static const std::vector<std::string> names = {"task_name", "task_source", "target"};
  return names;
}

const std::vector<std::string>& fix_variables() {
  static const std::vector<std::string> names = {"task_name", "task_source", "target",
                                                 "code",      "stage",       "error_class",
                                                 "error_log", "round"};
  return names;
}

std::map<std::string, std::string> generation_values(const GenerationInput& input) {
  return {{"task_name", input.task_name},
          {"task_source", input.task_source},
          {"target", input.target}};
}

std::map<std::string, std::string> fix_values(const FixInput& input, size_t log_limit) {
  std::string log = input.message;
  // Stages often repeat the message at the end of their log; say it once.
  if (!input.log_tail.empty() && input.log_tail.find(input.message) == std::string::npos) {
    if (!log.empty()) log += "\n";
    log += input.log_tail;
  } else if (!input.log_tail.empty()) {
    log = input.log_tail;
  }
  if (log.empty()) log = "(the failing stage left no message)";
  return {{"task_name", input.task_name},
          {"task_source", input.task_source},
          {"target", input.target},
          {"code", input.code},
          {"stage", input.stage},
          {"error_class", input.error_class.empty() ? "unknown" : input.error_class},
          {"error_log", cut_middle(log, log_limit)},
          {"round", std::to_string(input.round)}};
}

std::vector<Message> chat_messages(const std::string& system, std::string user) {
  std::vector<Message> messages;
  if (!system.empty()) messages.push_back({"system", system});
  messages.push_back({"user", std::move(user)});
  return messages;
}

}  // namespace kforge::llm
