// eval.check's rules files are checked twice: in C++ when the stage is created (validate),
// and by the harness at every job. These tests hold the two to the same verdicts, so the
// C++ check can neither let through what the harness refuses (every job a harness_error)
// nor refuse what it takes.
#include "rules_file.hpp"
#include "test_env.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kforge::eval {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testing::run_python;

// Patterns Python's `re` and the C++ check must judge alike: the usual ones, and the
// mistakes and edges where Python's syntax and PCRE2's differ.
const std::vector<std::string> kPatterns = {
    R"(\bprintf\s*\()", R"(torch\.(?P<fn>\w+))", R"((?P<n>a)(?P=n))", R"((a)\1)", R"((a)(?(1)a|b))",
    R"((?i)a)", R"((?i)(?m)a)", R"((?a)x)", R"((?u)x)", R"((?x) a b # comment \p)", R"((?i:a))", R"((?-i:a))",
    R"((?s:.))", R"((?>a))", R"(a*+)", R"(a*?)", R"((?<=ab|cd))", R"((?=a)*)", R"((?#c)x)", R"(a{,3})",
    R"(a{)", R"(a{x})", R"({})", R"([]a])", R"([^]a])", R"(\w-z)", R"(\u00e9)", R"(\U0001F600)", R"(\0)",
    R"(\08)", R"([\1])", R"([\b])", R"(\N{LATIN SMALL LETTER A})", R"(a{4294967294})", R"(a{70000})",
    R"([a-z0-9_])", R"(x|y|z)", R"(\.\*\+)", R"(é+)", R"([[])", R"(\d{2,4}-\d\d)", R"(^\s*#include\s*<(\w+)>)",
    // refused by Python
    R"(a(?i)b)", R"((?L)x)", R"(^*)", R"(\b*)", R"(a**)", R"(a{1,2}{3})", R"(a*?+)", R"(\p{L})", R"(\e)",
    R"(\c)", R"(\g<1>)", R"(\U0011FFFF)", R"(\x4)", R"([\x5a-\x41])", R"(\1)", R"((a\1))", R"(\400)", R"([\8])",
    R"([\A])", R"((?P=n))", R"((?P<1a>x))", R"((?P<a>x)(?P<a>y))", R"((?(1)a|b))", R"((?(x)a))", R"(a{3,2})",
    R"(()", R"())", R"([a)", R"(a|*)", R"((?P>n))", R"((?i-i:a))", R"($*)", R"(\Z*)", R"(\A+)", R"([z-a])",
    R"([\w-z])", R"(\u00e)", R"(a{4294967296})", R"((?<n>a))", R"(\k<n>)", R"((?<=a+))", R"((?(1)a|b|c))", R"((a)(?(1)a|b|c))",
    R"(*)", R"(+a)", R"(a\)", R"((?)", R"((?z))", R"((?#x)"};

TEST(RulesFile, RegularExpressionsAreJudgedAsPythonJudgesThem) {
  const std::string verdicts = run_python(R"(
import json, re, sys, warnings
warnings.simplefilter("ignore")  # FutureWarning on "[[" (a nested set, some day)
for pattern in json.load(sys.stdin):
    try:
        re.compile(pattern)
        print(json.dumps([pattern, ""]))
    except (re.error, OverflowError) as exc:
        print(json.dumps([pattern, str(exc)]))
)",
                                          kPatterns);
  size_t compared = 0;
  for (size_t at = 0, end; (end = verdicts.find('\n', at)) != std::string::npos; at = end + 1) {
    const json line = json::parse(verdicts.substr(at, end - at), nullptr, false);
    ASSERT_TRUE(line.is_array()) << verdicts;
    const std::string pattern = line[0], python = line[1];
    const std::string ours = python_regex_problem(pattern);
    EXPECT_EQ(ours.empty(), python.empty())
        << "pattern " << pattern << ": Python says '" << python << "', the C++ check '" << ours << "'";
    ++compared;
  }
  EXPECT_EQ(compared, kPatterns.size()) << verdicts;
}

// Where the C++ check is more lenient than the harness (PCRE2 allows look-behinds whose
// alternatives differ in width; character names are not looked up; yaml-cpp reads an
// unterminated quoted scalar to the end of the file): such a rules file passes validate
// and each job reports the harness's complaint. Listed here so that a change on either
// side shows.
TEST(RulesFile, KnownLeniencies) {
  for (const std::string pattern : {R"((?<=a|bc))", R"(\N{NO SUCH NAME})"}) {
    EXPECT_EQ(python_regex_problem(pattern), "") << pattern;
  }
  EXPECT_NO_THROW(check_rules_file(testing::test_data_dir() + "/rules-lenient/unterminated_quote.yaml"));
}

TEST(RulesFile, MessagesSayWhatAndWhere) {
  const std::string dir = testing::test_data_dir() + "/rules/";
  auto problem = [&](const std::string& name) {
    try {
      check_rules_file(dir + name);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(problem("good.yaml"), "");
  EXPECT_NE(problem("bad_regex.yaml").find("bad_regex.yaml:2:5: rule #1 (bad-regex): bad regular expression "
                                           "'(unclosed': missing ), unterminated subpattern at position 0"),
            std::string::npos)
      << problem("bad_regex.yaml");
  EXPECT_NE(problem("unknown_kind.yaml").find("unknown_kind.yaml:2:5: rule #1 (typo): unknown kind 'strng_pattern'"),
            std::string::npos)
      << problem("unknown_kind.yaml");
  EXPECT_NE(problem("bad_yaml.yaml").find("bad_yaml.yaml:4:"), std::string::npos) << problem("bad_yaml.yaml");
  EXPECT_NE(problem("bad_yaml.yaml").find("not valid YAML"), std::string::npos) << problem("bad_yaml.yaml");
  EXPECT_NE(problem("missing.yaml").find("cannot read rules file"), std::string::npos);
  EXPECT_NE(problem("").find("it is a directory"), std::string::npos) << problem("");
}

// Every rules file of the corpus gets the same verdict from the harness (its checker, as
// it loads a request's rules_file) and from the C++ check; and the names the C++ check
// knows are the harness's.
TEST(RulesFile, TheHarnessAndTheCheckAgreeOnEveryFileAndName) {
  KFORGE_REQUIRE_TORCH();  // the checker module imports torch
  const std::string dir = testing::test_data_dir() + "/rules";
  json input = {{"harness", testing::harness_dir()}, {"files", json::array()}};
  for (const auto& entry : fs::directory_iterator(dir)) input["files"].push_back(entry.path().string());
  const std::string output = run_python(R"(
import json, sys
request = json.load(sys.stdin)
sys.path.insert(0, request["harness"])
from kforge_harness import protocol
from kforge_harness.l1 import checker
print(json.dumps({"fields": list(checker.Rule.FIELDS), "kinds": sorted(checker.MATCHERS),
                  "regex_kinds": list(checker.REGEX_KINDS), "scopes": list(checker.SCOPES),
                  "severities": list(checker.SEVERITIES), "languages": list(protocol.LANGUAGES)}))
for path in request["files"]:
    try:
        checker.load_rules(path)
        print(json.dumps([path, ""]))
    except Exception as exc:  # the harness turns any of them into the job's error
        print(json.dumps([path, f"{type(exc).__name__}: {exc}"]))
)",
                                        input);
  const size_t first_end = output.find('\n');
  ASSERT_NE(first_end, std::string::npos) << output;
  const json names = json::parse(output.substr(0, first_end), nullptr, false);
  ASSERT_TRUE(names.is_object()) << output;
  const RulesGrammar& g = rules_grammar();
  std::vector<std::string> kinds = g.kinds;
  std::sort(kinds.begin(), kinds.end());
  EXPECT_EQ(names["fields"].get<std::vector<std::string>>(), g.fields);
  EXPECT_EQ(names["kinds"].get<std::vector<std::string>>(), kinds);
  EXPECT_EQ(names["regex_kinds"].get<std::vector<std::string>>(), g.regex_kinds);
  EXPECT_EQ(names["scopes"].get<std::vector<std::string>>(), g.scopes);
  EXPECT_EQ(names["severities"].get<std::vector<std::string>>(), g.severities);
  EXPECT_EQ(names["languages"].get<std::vector<std::string>>(), g.languages);

  size_t compared = 0, refused = 0;
  for (size_t at = first_end + 1, end; (end = output.find('\n', at)) != std::string::npos; at = end + 1) {
    const json line = json::parse(output.substr(at, end - at), nullptr, false);
    ASSERT_TRUE(line.is_array()) << output;
    const std::string path = line[0], harness = line[1];
    std::string ours;
    try {
      check_rules_file(path);
    } catch (const std::invalid_argument& e) {
      ours = e.what();
    }
    EXPECT_EQ(ours.empty(), harness.empty())
        << fs::path(path).filename() << ": the harness says '" << harness << "', the C++ check '" << ours << "'";
    ++compared;
    refused += harness.empty() ? 0 : 1;
  }
  EXPECT_EQ(compared, input["files"].size()) << output;
  EXPECT_GT(refused, compared / 2) << "the corpus is mostly mistakes";
}

}  // namespace
}  // namespace kforge::eval
