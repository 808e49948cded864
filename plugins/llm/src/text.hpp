// Small text helpers shared by the answer parsers, the diff applier and the diff writer.
#pragma once

#include <cctype>
#include <string_view>
#include <vector>

namespace kforge::llm {

inline bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// `s` without leading and trailing whitespace.
inline std::string_view trim(std::string_view s) {
  size_t b = 0;
  while (b < s.size() && is_space(s[b])) ++b;
  size_t e = s.size();
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// Lines of `text` with their terminating '\n' (the last one may have none).
inline std::vector<std::string_view> lines_with_ends(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    end = end == std::string_view::npos ? text.size() : end + 1;
    lines.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return lines;
}

}  // namespace kforge::llm
