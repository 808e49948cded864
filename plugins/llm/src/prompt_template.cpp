#include "prompt_template.hpp"

#include <kforge/bounded_file.hpp>

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>

namespace kforge::llm {

namespace {

// A prompt is a page of text; the tasks and code it names are filled in later.
constexpr uint64_t kMaxPromptBytes = 1u << 20;

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// If `text` at `at` holds `{{ name }}`, returns the name and sets `end` past it.
bool read_placeholder(std::string_view text, size_t at, std::string& name, size_t& end) {
  size_t i = at + 2;
  while (i < text.size() && text[i] == ' ') ++i;
  if (i >= text.size() || !is_name_start(text[i])) return false;
  size_t begin = i;
  while (i < text.size() && is_name_char(text[i])) ++i;
  size_t name_end = i;
  while (i < text.size() && text[i] == ' ') ++i;
  if (text.substr(i, 2) != "}}") return false;
  name = std::string(text.substr(begin, name_end - begin));
  end = i + 2;
  return true;
}

bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

PromptTemplate PromptTemplate::load(const std::string& path) {
  std::string why;
  std::optional<std::string> text = read_bounded_file(path, kMaxPromptBytes, why);
  if (!text) throw std::runtime_error("prompt template " + path + " cannot be read: " + why);
  return PromptTemplate(*text, path);
}

PromptTemplate::PromptTemplate(std::string_view text, std::string origin)
    : origin_(std::move(origin)) {
  std::string literal;
  size_t i = 0;
  while (i < text.size()) {
    std::string name;
    size_t end = 0;
    if (text.substr(i, 2) == "{{" && read_placeholder(text, i, name, end)) {
      if (!literal.empty()) pieces_.push_back({false, std::move(literal)});
      literal.clear();
      pieces_.push_back({true, std::move(name)});
      i = end;
    } else {
      literal.push_back(text[i++]);
    }
  }
  if (!literal.empty()) pieces_.push_back({false, std::move(literal)});
}

std::string PromptTemplate::render(const std::map<std::string, std::string>& values) const {
  std::string out;
  for (const Piece& piece : pieces_) {
    if (!piece.placeholder) {
      out += piece.text;
      continue;
    }
    auto it = values.find(piece.text);
    if (it == values.end()) {
      throw std::runtime_error("prompt template " + origin_ + " uses {{" + piece.text +
                               "}}, which has no value here");
    }
    out += it->second;
  }
  return out;
}

void PromptTemplate::check_placeholders(const std::vector<std::string>& known) const {
  for (const Piece& piece : pieces_) {
    if (!piece.placeholder || std::find(known.begin(), known.end(), piece.text) != known.end()) {
      continue;
    }
    std::string list;
    for (const std::string& name : known) list += (list.empty() ? "{{" : ", {{") + name + "}}";
    throw std::runtime_error("prompt template " + origin_ + " uses the unknown placeholder {{" +
                             piece.text + "}}; known here: " + list);
  }
}

std::string cut_middle(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  size_t head = limit / 3;
  size_t tail_start = text.size() - (limit - head);
  while (head > 0 && is_continuation_byte(text[head])) --head;
  while (tail_start < text.size() && is_continuation_byte(text[tail_start])) ++tail_start;
  std::string out(text.substr(0, head));
  out += "\n[... " + std::to_string(tail_start - head) + " bytes cut ...]\n";
  out += text.substr(tail_start);
  return out;
}

}  // namespace kforge::llm
