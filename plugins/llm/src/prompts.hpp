// What the generation and fix templates are filled with. The placeholder lists are the
// contract with the template files in pipelines/prompts/.
#pragma once

#include "chat.hpp"
#include "prompt_template.hpp"

#include <map>
#include <string>
#include <vector>

namespace kforge::llm {

struct GenerationInput {
  std::string task_name;
  std::string task_source;  // the reference program
  std::string target;       // cpp | triton | cuda
};

struct FixInput {
  std::string task_name;
  std::string task_source;
  std::string target;
  std::string code;  // the candidate that failed
  std::string stage;
  std::string error_class;
  std::string message;
  std::string log_tail;
  int round = 0;
};

// {{task_name}} {{task_source}} {{target}}
const std::vector<std::string>& generation_variables();
// The generation ones plus {{code}} {{stage}} {{error_class}} {{error_log}} {{round}}
const std::vector<std::string>& fix_variables();

std::map<std::string, std::string> generation_values(const GenerationInput& input);

// {{error_log}} is the failure message followed by the log tail, cut to `log_limit`
// bytes keeping its head third and tail two-thirds (cut_middle).
std::map<std::string, std::string> fix_values(const FixInput& input, size_t log_limit);

// A system message (when not empty) and the user message.
std::vector<Message> chat_messages(const std::string& system, std::string user);

}  // namespace kforge::llm
