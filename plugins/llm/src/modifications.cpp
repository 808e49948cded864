#include "modifications.hpp"
#include "text.hpp"

#include <nlohmann/json.hpp>

#include <cctype>

namespace kforge::llm {

namespace {

bool looks_like_json(std::string_view text) {
  text = trim(text);
  return !text.empty() && (text.front() == '{' || text.front() == '[');
}

bool is_json_block(const CodeBlock& block) {
  if (block.language == "json" || block.language == "jsonc") return true;
  return block.language.empty() && looks_like_json(block.code);
}

// The span from the first '{' or '[' to the last matching closer: JSON wrapped in prose.
std::string_view outermost_json_span(std::string_view text) {
  size_t open = text.find_first_of("{[");
  if (open == std::string_view::npos) return {};
  char closer = text[open] == '{' ? '}' : ']';
  size_t close = text.rfind(closer);
  if (close == std::string_view::npos || close < open) return {};
  return text.substr(open, close - open + 1);
}

Modification read_modification(const nlohmann::json& item, size_t index) {
  std::string where = "modification " + std::to_string(index + 1) + ": ";
  if (!item.is_object()) throw std::runtime_error(where + "must be an object");
  auto old_string = item.find("old_string");
  auto new_string = item.find("new_string");
  if (old_string == item.end() || !old_string->is_string()) {
    throw std::runtime_error(where + "\"old_string\" (a string) is missing");
  }
  if (new_string == item.end() || !new_string->is_string()) {
    throw std::runtime_error(where + "\"new_string\" (a string) is missing");
  }
  Modification m;
  m.old_string = old_string->get<std::string>();
  m.new_string = new_string->get<std::string>();
  if (trim(m.old_string).empty()) {
    throw std::runtime_error(where + "\"old_string\" is empty; it must quote the code to replace");
  }
  if (auto all = item.find("replace_all"); all != item.end() && !all->is_null()) {
    if (!all->is_boolean()) throw std::runtime_error(where + "\"replace_all\" must be true or false");
    m.replace_all = all->get<bool>();
  }
  return m;
}

FixAnswer interpret(const nlohmann::json& value) {
  FixAnswer answer;
  const nlohmann::json* list = &value;
  if (value.is_object()) {
    auto mods = value.find("modifications");
    if (mods == value.end()) {
      throw std::runtime_error("the JSON object has no \"modifications\" array");
    }
    list = &*mods;
    if (value.contains("analysis") && value["analysis"].is_string()) {
      answer.analysis = value["analysis"].get<std::string>();
    }
    if (value.contains("summary") && value["summary"].is_string()) {
      answer.summary = value["summary"].get<std::string>();
    }
  }
  if (!list->is_array()) throw std::runtime_error("\"modifications\" must be an array");
  if (list->empty()) throw std::runtime_error("\"modifications\" is empty: nothing to change");
  for (size_t i = 0; i < list->size(); ++i) {
    answer.modifications.push_back(read_modification((*list)[i], i));
  }
  return answer;
}

}  // namespace

FixAnswer parse_modifications(std::string_view raw_answer, const ExtractOptions& code_options) {
  const std::string text = strip_reasoning(raw_answer);
  std::vector<CodeBlock> blocks = fenced_blocks(text);

  // Where JSON may be, most explicit first: JSON fences, the whole answer, the outermost
  // braces of an answer with prose around the JSON.
  std::vector<std::string> candidates;
  for (const CodeBlock& block : blocks) {
    if (is_json_block(block)) candidates.push_back(block.code);
  }
  if (blocks.empty() || !candidates.empty()) {
    candidates.emplace_back(trim(text));
    candidates.emplace_back(outermost_json_span(text));
  }
  std::string parse_error;
  for (const std::string& candidate : candidates) {
    if (!looks_like_json(candidate)) continue;
    try {
      return interpret(nlohmann::json::parse(candidate));
    } catch (const nlohmann::json::parse_error& e) {
      if (parse_error.empty()) parse_error = e.what();
    }
  }
  if (!parse_error.empty()) {
    throw std::runtime_error("the answer's JSON edit is malformed: " + parse_error);
  }

  // No JSON at all: a fenced code block is the whole new program.
  std::vector<CodeBlock> code_blocks;
  for (CodeBlock& block : blocks) {
    if (!is_json_block(block)) code_blocks.push_back(std::move(block));
  }
  if (auto code = choose_block(code_blocks, code_options)) {
    FixAnswer answer;
    answer.rewrite = code->code;
    return answer;
  }
  throw std::runtime_error(
      "the answer has neither a JSON edit ({\"modifications\": [{\"old_string\", "
      "\"new_string\"}]}) nor a fenced code block");
}

}  // namespace kforge::llm
