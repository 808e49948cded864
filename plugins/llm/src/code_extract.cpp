#include "code_extract.hpp"
#include "text.hpp"

#include <algorithm>
#include <cctype>

namespace kforge::llm {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// A fence line: optional indentation, then 3+ backticks or tildes. Returns the fence
// character and length, and the info string after it.
bool parse_fence(std::string_view line, char& fence_char, size_t& fence_len, std::string_view& info) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i >= line.size() || (line[i] != '`' && line[i] != '~')) return false;
  char c = line[i];
  size_t start = i;
  while (i < line.size() && line[i] == c) ++i;
  if (i - start < 3) return false;
  fence_char = c;
  fence_len = i - start;
  info = trim(line.substr(i));
  return true;
}

}  // namespace

std::string strip_reasoning(std::string_view answer) {
  std::string_view text = trim(answer);
  if (text.substr(0, 7) == "<think>") {
    size_t end = text.find("</think>");
    if (end != std::string_view::npos) return std::string(text.substr(end + 8));
  }
  return std::string(answer);
}

std::vector<CodeBlock> fenced_blocks(std::string_view text) {
  std::vector<CodeBlock> blocks;
  bool inside = false;
  char open_char = 0;
  size_t open_len = 0;
  CodeBlock current;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    char fence_char = 0;
    size_t fence_len = 0;
    std::string_view info;
    bool is_fence = parse_fence(line, fence_char, fence_len, info);
    if (!inside) {
      if (is_fence) {
        inside = true;
        open_char = fence_char;
        open_len = fence_len;
        current = CodeBlock{};
        std::string_view tag = info.substr(0, info.find_first_of(" \t{"));
        current.language = lower(tag);
      }
    } else if (is_fence && fence_char == open_char && fence_len >= open_len && info.empty()) {
      blocks.push_back(std::move(current));
      inside = false;
    } else {
      current.code.append(line);
      current.code.push_back('\n');
    }
    if (end == text.size()) break;
    pos = end + 1;
  }
  if (inside) blocks.push_back(std::move(current));
  return blocks;
}

std::optional<CodeBlock> choose_block(const std::vector<CodeBlock>& blocks,
                                      const ExtractOptions& options) {
  std::vector<const CodeBlock*> preferred;
  for (const CodeBlock& block : blocks) {
    for (const std::string& language : options.languages) {
      if (block.language == lower(language)) {
        preferred.push_back(&block);
        break;
      }
    }
  }
  if (preferred.empty()) {
    for (const CodeBlock& block : blocks) preferred.push_back(&block);
  }
  if (preferred.empty()) return std::nullopt;
  const CodeBlock* chosen = options.take_last ? preferred.back() : preferred.front();
  if (trim(chosen->code).empty()) return std::nullopt;
  return *chosen;
}

std::optional<CodeBlock> extract_code(std::string_view answer, const ExtractOptions& options) {
  std::string text = strip_reasoning(answer);
  std::vector<CodeBlock> blocks = fenced_blocks(text);
  if (!blocks.empty()) return choose_block(blocks, options);
  std::string_view whole = trim(text);
  if (whole.empty()) return std::nullopt;
  return CodeBlock{std::string(whole) + "\n", "", false};
}

}  // namespace kforge::llm
