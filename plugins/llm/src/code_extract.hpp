// Getting code out of an LLM answer: fenced blocks (``` or ~~~), a language-tag
// preference, the first or the last block, and the whole answer when it has no fence.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::llm {

struct CodeBlock {
  std::string code;
  std::string language;  // the fence's tag, lower-case; empty when none
  bool fenced = true;
};

struct ExtractOptions {
  bool take_last = false;  // which block when several qualify
  // Blocks tagged with any of these qualify; when no block carries one of them, every
  // block does (an untagged fence is common).
  std::vector<std::string> languages = {"python", "py"};
};

// Drops a reasoning preamble (<think>...</think>), which local reasoning models put into
// the answer and which holds drafts, not the final code.
std::string strip_reasoning(std::string_view answer);

// Every fenced block, in order. An unclosed last fence (an answer cut by max_tokens)
// runs to the end of the text.
std::vector<CodeBlock> fenced_blocks(std::string_view text);

// The block `options` picks among `blocks`; nullopt when there is none or it is blank.
std::optional<CodeBlock> choose_block(const std::vector<CodeBlock>& blocks,
                                      const ExtractOptions& options);

// The code of an answer: the chosen fenced block, else the whole (trimmed) answer when
// it has no fence at all; nullopt when that is empty.
std::optional<CodeBlock> extract_code(std::string_view answer, const ExtractOptions& options);

}  // namespace kforge::llm
