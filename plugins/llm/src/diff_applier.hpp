// The DiffApplier: applies the FixAgent's search/replace edits to the candidate code.
//
// Each edit's old_string is looked for at four levels, stopping at the first that finds
// it: exact text; the same lines with leading/trailing whitespace ignored; the same
// text with every whitespace run counted as one space; then the most similar window of
// as many lines (similarity >= 0.8, refused when the runner-up window, one that does not
// overlap the best, scores within 0.1 of it: an edit that could land in two places lands
// in none). More than one match at the first three levels is an error unless the edit
// says replace_all. Edits apply in order, each to the result of the previous ones, and
// all or nothing: one edit that cannot be placed fails the whole answer.
#pragma once

#include "modifications.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace kforge::llm {

enum class MatchLevel { exact, line_trimmed, whitespace, fuzzy };
const char* to_string(MatchLevel level);

struct EditReport {
  MatchLevel level = MatchLevel::exact;
  double similarity = 1.0;  // below 1 only for fuzzy matches
  int replacements = 1;     // places changed (more than one only with replace_all)
};

struct ApplyResult {
  std::string code;
  std::vector<EditReport> edits;  // one per modification, in order
};

struct ApplierOptions {
  double fuzzy_threshold = 0.8;
  double ambiguity_margin = 0.1;
};

// Thrown when an edit cannot be placed; `edit()` is its 1-based number.
class ApplyError : public std::runtime_error {
 public:
  ApplyError(int edit, const std::string& message)
      : std::runtime_error("modification " + std::to_string(edit) + ": " + message), edit_(edit) {}
  int edit() const { return edit_; }

 private:
  int edit_;
};

ApplyResult apply_modifications(const std::string& code, const std::vector<Modification>& edits,
                                const ApplierOptions& options = {});

// 1 - edit distance / longer length, on text with whitespace runs collapsed; values
// below `floor` are reported as 0 (so that dissimilar windows cost little to rule out).
double similarity(std::string_view a, std::string_view b, double floor = 0.0);

}  // namespace kforge::llm
