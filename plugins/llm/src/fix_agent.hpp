// The FixAgent's last step: from its answer to the next version of the candidate.
#pragma once

#include "code_extract.hpp"
#include "diff_applier.hpp"
#include "modifications.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace kforge::llm {

struct FixApplication {
  std::string code;  // the new candidate
  // Unified diff from the old one, labelled a/candidate.py and b/candidate.py; the
  // verdict that carries it says which round it belongs to.
  std::string diff;
  std::vector<EditReport> edits;  // empty for a rewrite
  bool rewrite = false;
  std::string analysis;
  std::string summary;

  // "exact,line_trimmed,fuzzy(0.86)" or "rewrite": which level placed each edit.
  std::string levels() const;
};

// Parses the answer (parse_modifications), applies it (apply_modifications) and diffs
// the result. Throws std::runtime_error saying why when the answer cannot be parsed or
// applied, or when it leaves the code as it was (the next round would fail the same way).
FixApplication apply_fix_answer(const std::string& code, std::string_view answer,
                                const ExtractOptions& code_options,
                                const ApplierOptions& applier_options = {});

}  // namespace kforge::llm
