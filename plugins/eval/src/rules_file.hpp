// eval.check's `rules` file, checked when the stage is created (so `kforge validate`
// refuses what the harness would refuse at every job): the grammar of the harness's L1
// rules (harness/kforge_harness/checker.py: Rule, _parse_rules), read as the harness's
// YAML loader reads it, with its regular expressions compiled by Python's rules.
// rules_file_test.cpp holds the two to the same verdicts on a corpus of rules files, and
// these lists to the harness's own.
#pragma once

#include <string>
#include <vector>

namespace kforge::eval {

// What a rule may say, as checker.py and protocol.py define it.
struct RulesGrammar {
  std::vector<std::string> fields;     // Rule.FIELDS
  std::vector<std::string> kinds;      // MATCHERS' names
  std::vector<std::string> regex_kinds;  // REGEX_KINDS: match and allow are regular expressions
  std::vector<std::string> scopes;     // SCOPES
  std::vector<std::string> severities; // SEVERITIES
  std::vector<std::string> languages;  // protocol.LANGUAGES
};
const RulesGrammar& rules_grammar();

// Throws std::invalid_argument saying what is wrong and where ("FILE:LINE:COL: rule #2
// (my-rule): unknown kind 'strng_pattern'; ...") when the harness would refuse the file:
// not a regular file of at most 1 MiB, not YAML, no `rules` list, or a rule it would
// not build.
void check_rules_file(const std::string& path);

// The problem Python's `re.compile` finds in `pattern`, or "" when it compiles.
std::string python_regex_problem(const std::string& pattern);

}  // namespace kforge::eval
