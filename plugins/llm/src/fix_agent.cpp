#include "fix_agent.hpp"

#include "unified_diff.hpp"

#include <cstdio>
#include <stdexcept>

namespace kforge::llm {

std::string FixApplication::levels() const {
  if (rewrite) return "rewrite";
  std::string text;
  for (const EditReport& edit : edits) {
    if (!text.empty()) text += ",";
    text += to_string(edit.level);
    if (edit.level == MatchLevel::fuzzy) {
      char score[16];
      std::snprintf(score, sizeof score, "(%.2f)", edit.similarity);
      text += score;
    }
  }
  return text;
}

FixApplication apply_fix_answer(const std::string& code, std::string_view answer,
                                const ExtractOptions& code_options,
                                const ApplierOptions& applier_options) {
  FixAnswer parsed = parse_modifications(answer, code_options);
  FixApplication fix;
  fix.analysis = parsed.analysis;
  fix.summary = parsed.summary;
  if (parsed.rewrite) {
    fix.rewrite = true;
    fix.code = *parsed.rewrite;
  } else {
    ApplyResult applied = apply_modifications(code, parsed.modifications, applier_options);
    fix.code = std::move(applied.code);
    fix.edits = std::move(applied.edits);
  }
  if (fix.code == code) {
    throw std::runtime_error("the fix leaves the code unchanged, so it would fail the same way");
  }
  fix.diff = unified_diff(code, fix.code, "a/candidate.py", "b/candidate.py");
  return fix;
}

}  // namespace kforge::llm
