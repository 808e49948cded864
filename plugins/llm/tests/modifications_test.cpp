#include "modifications.hpp"

#include <gtest/gtest.h>

namespace kforge::llm {
namespace {

FixAnswer parse(const std::string& answer) { return parse_modifications(answer, ExtractOptions{}); }

std::string error_of(const std::string& answer) {
  try {
    parse(answer);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ParseModifications, ReadsTheFullObject) {
  FixAnswer a = parse(R"({"analysis": "off by one", "modifications": [
      {"old_string": "i <= n", "new_string": "i < n"},
      {"old_string": "x", "new_string": "y", "replace_all": true}], "summary": "fixed the bound"})");
  EXPECT_EQ(a.analysis, "off by one");
  EXPECT_EQ(a.summary, "fixed the bound");
  ASSERT_EQ(a.modifications.size(), 2u);
  EXPECT_EQ(a.modifications[0].old_string, "i <= n");
  EXPECT_EQ(a.modifications[0].new_string, "i < n");
  EXPECT_FALSE(a.modifications[0].replace_all);
  EXPECT_TRUE(a.modifications[1].replace_all);
  EXPECT_FALSE(a.rewrite);
}

TEST(ParseModifications, ToleratesFencesAndProseAround) {
  FixAnswer fenced = parse("The bug is the bound.\n```json\n{\"modifications\": [{\"old_string\": \"a\", "
                           "\"new_string\": \"b\"}]}\n```\nDone.");
  ASSERT_EQ(fenced.modifications.size(), 1u);
  FixAnswer prose = parse("Change this: {\"modifications\": [{\"old_string\": \"a\", \"new_string\": \"b\"}]} ok?");
  ASSERT_EQ(prose.modifications.size(), 1u);
  EXPECT_EQ(prose.modifications[0].new_string, "b");
}

TEST(ParseModifications, ToleratesABareArray) {
  FixAnswer a = parse(R"([{"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": ""}])");
  ASSERT_EQ(a.modifications.size(), 2u);
  EXPECT_EQ(a.modifications[1].new_string, "") << "an empty new_string deletes";
}

TEST(ParseModifications, AcceptsAFullCodeBlockAsARewrite) {
  FixAnswer a = parse("I rewrote it:\n```python\nclass ModelNew:\n    pass\n```\n");
  ASSERT_TRUE(a.rewrite);
  EXPECT_EQ(*a.rewrite, "class ModelNew:\n    pass\n");
  EXPECT_TRUE(a.modifications.empty());
}

TEST(ParseModifications, PrefersTheJsonEditOverACodeBlock) {
  FixAnswer a = parse("```python\nold = 1\n```\n```json\n[{\"old_string\": \"old = 1\", \"new_string\": \"old = 2\"}]\n```");
  EXPECT_FALSE(a.rewrite);
  ASSERT_EQ(a.modifications.size(), 1u);
}

TEST(ParseModifications, MalformedJsonIsAnErrorNotARewrite) {
  EXPECT_NE(error_of(R"({"modifications": [{"old_string": "a", "new_string": "b"})").find("malformed"),
            std::string::npos);
  EXPECT_NE(error_of("```json\n{\"modifications\": [}\n```").find("malformed"), std::string::npos);
}

TEST(ParseModifications, SaysWhatIsMissing) {
  EXPECT_NE(error_of(R"({"analysis": "x"})").find("no \"modifications\""), std::string::npos);
  EXPECT_NE(error_of(R"({"modifications": []})").find("empty"), std::string::npos);
  EXPECT_NE(error_of(R"({"modifications": [{"new_string": "b"}]})").find("modification 1: \"old_string\""),
            std::string::npos);
  EXPECT_NE(error_of(R"([{"old_string": "a", "new_string": "b"}, {"old_string": "a"}])")
                .find("modification 2: \"new_string\""),
            std::string::npos);
  EXPECT_NE(error_of(R"([{"old_string": "  ", "new_string": "b"}])").find("empty"), std::string::npos);
  EXPECT_NE(error_of(R"([{"old_string": "a", "new_string": "b", "replace_all": "yes"}])").find("replace_all"),
            std::string::npos);
  EXPECT_NE(error_of("I cannot fix this.").find("neither"), std::string::npos);
}

}  // namespace
}  // namespace kforge::llm
