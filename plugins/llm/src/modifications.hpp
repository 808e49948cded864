// The FixAgent's answer format and its parser (parse_modifications).
//
// The LLM is asked for JSON:
//   {"analysis": "...", "modifications": [{"old_string": "...", "new_string": "...",
//    "replace_all": false}], "summary": "..."}
// Search/replace edits rather than a unified diff or line numbers, because LLMs
// miscount lines. Tolerated: the JSON inside a ``` fence or surrounded by prose, a bare
// array of modifications, and instead of JSON a fenced code block, taken as the whole
// new program.
#pragma once

#include "code_extract.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::llm {

struct Modification {
  std::string old_string;
  std::string new_string;
  bool replace_all = false;
};

struct FixAnswer {
  std::string analysis;
  std::string summary;
  std::vector<Modification> modifications;
  std::optional<std::string> rewrite;  // set when the answer is a full code block
};

// Throws std::runtime_error saying why the answer cannot be used.
FixAnswer parse_modifications(std::string_view answer, const ExtractOptions& code_options);

}  // namespace kforge::llm
