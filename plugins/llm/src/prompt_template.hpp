// Prompt templates: text files with {{name}} placeholders.
//
// Only `{{identifier}}` (spaces inside the braces allowed) is a placeholder; any other
// `{{` is kept as written, so C++ brace initialisers in one-shot examples need no
// escaping. Values are inserted once and never scanned again, so a task source that
// contains `{{x}}` stays as it is.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::llm {

class PromptTemplate {
 public:
  // Reads a template file; throws std::runtime_error naming the path.
  static PromptTemplate load(const std::string& path);

  // `origin` names the template in error messages (its path).
  PromptTemplate(std::string_view text, std::string origin);

  // Throws std::runtime_error naming the first placeholder without a value.
  std::string render(const std::map<std::string, std::string>& values) const;

  // Throws when the template uses a placeholder outside `known`, naming it and listing
  // the known ones: templates are checked when a stage is created, not on the first job.
  void check_placeholders(const std::vector<std::string>& known) const;

  const std::string& origin() const { return origin_; }

 private:
  struct Piece {
    bool placeholder;
    std::string text;  // literal text, or the placeholder's name
  };
  std::vector<Piece> pieces_;
  std::string origin_;
};

// Shortens `text` to about `limit` bytes by cutting out its middle: the first third and
// the last two thirds are kept (the start of an error log says what failed, the end says
// where), with a line saying how much was cut. Cuts never split a UTF-8 character.
std::string cut_middle(std::string_view text, size_t limit);

}  // namespace kforge::llm
