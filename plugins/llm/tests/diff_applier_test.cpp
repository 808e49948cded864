#include "diff_applier.hpp"

#include <gtest/gtest.h>

namespace kforge::llm {
namespace {

const std::string kCode =
    "import torch\n"
    "\n"
    "class ModelNew(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "\n"
    "    def forward(self, x):\n"
    "        y = torch.empty_like(x)\n"
    "        n = x.numel()\n"
    "        grid = (triton.cdiv(n, 1024),)\n"
    "        relu_kernel[grid](x, y, n, BLOCK=1024)\n"
    "        return y\n";

ApplyResult apply(const std::string& code, std::vector<Modification> edits) {
  return apply_modifications(code, edits);
}

std::string error_of(const std::string& code, std::vector<Modification> edits) {
  try {
    apply(code, std::move(edits));
  } catch (const ApplyError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(DiffApplier, ExactMatch) {
  ApplyResult r = apply(kCode, {{"BLOCK=1024", "BLOCK=256"}});
  EXPECT_NE(r.code.find("relu_kernel[grid](x, y, n, BLOCK=256)"), std::string::npos);
  ASSERT_EQ(r.edits.size(), 1u);
  EXPECT_EQ(r.edits[0].level, MatchLevel::exact);
  EXPECT_EQ(r.edits[0].replacements, 1);
}

TEST(DiffApplier, ExactMatchInSeveralPlacesNeedsReplaceAll) {
  std::string message = error_of(kCode, {{"1024", "256"}});
  EXPECT_NE(message.find("modification 1"), std::string::npos) << message;
  EXPECT_NE(message.find("matches 2 places"), std::string::npos) << message;

  ApplyResult r = apply(kCode, {{"1024", "256", true}});
  EXPECT_EQ(r.code.find("1024"), std::string::npos);
  EXPECT_EQ(r.edits[0].replacements, 2);
}

TEST(DiffApplier, LineTrimmedMatchKeepsTheCodesIndentation) {
  // The model quoted the lines without their indentation, and wrote the new ones the same way.
  ApplyResult r = apply(kCode, {{"n = x.numel()\ngrid = (triton.cdiv(n, 1024),)\n",
                                 "n = x.numel()\nif n == 0:\n    return y\ngrid = (triton.cdiv(n, 256),)\n"}});
  EXPECT_EQ(r.edits[0].level, MatchLevel::line_trimmed);
  EXPECT_NE(r.code.find("        n = x.numel()\n"
                        "        if n == 0:\n"
                        "            return y\n"
                        "        grid = (triton.cdiv(n, 256),)\n"),
            std::string::npos)
      << r.code;
}

TEST(DiffApplier, WhitespaceNormalisedMatch) {
  // Same tokens, different spacing and line breaks.
  ApplyResult r = apply(kCode, {{"relu_kernel[grid](x,  y, n,\n BLOCK=1024)", "relu_kernel[grid](x, y, n, BLOCK=512)"}});
  EXPECT_EQ(r.edits[0].level, MatchLevel::whitespace);
  EXPECT_NE(r.code.find("        relu_kernel[grid](x, y, n, BLOCK=512)\n        return y\n"), std::string::npos)
      << r.code;
}

TEST(DiffApplier, FuzzyMatchPlacesANearlyRightQuote) {
  // A misremembered name: no exact, trimmed or whitespace match.
  ApplyResult r = apply(kCode, {{"    def forward(self, x):\n        y = torch.empty_like(inp)\n        n = x.numel()\n",
                                 "    def forward(self, x):\n        y = torch.zeros_like(x)\n        n = x.numel()\n"}});
  ASSERT_EQ(r.edits[0].level, MatchLevel::fuzzy);
  EXPECT_GE(r.edits[0].similarity, 0.8);
  EXPECT_LT(r.edits[0].similarity, 1.0);
  EXPECT_NE(r.code.find("        y = torch.zeros_like(x)\n"), std::string::npos) << r.code;
  EXPECT_EQ(r.code.find("empty_like"), std::string::npos);
}

TEST(DiffApplier, FuzzyMatchBelowTheThresholdIsRefused) {
  std::string message = error_of(kCode, {{"completely different text here", "x"}});
  EXPECT_NE(message.find("not in the code"), std::string::npos) << message;
}

TEST(DiffApplier, FuzzyMatchBetweenTwoLookalikesIsRefused) {
  const std::string code =
      "a = load(ptr_a + offs, mask=mask)\n"
      "tmp = 0\n"
      "b = load(ptr_b + offs, mask=mask)\n";
  // Equally close to both loads.
  std::string message = error_of(code, {{"c = load(ptr_c + offs, mask=mask)", "c = 0"}});
  EXPECT_NE(message.find("two places resemble it"), std::string::npos) << message;
}

TEST(DiffApplier, EditsApplyInOrderToTheResultOfTheEarlierOnes) {
  // The second edit quotes text that only exists after the first one.
  ApplyResult r = apply(kCode, {{"BLOCK=1024)", "BLOCK=BLOCK_SIZE)"},
                                {"n, BLOCK=BLOCK_SIZE)", "n, BLOCK=BLOCK_SIZE, num_warps=4)"}});
  EXPECT_NE(r.code.find("relu_kernel[grid](x, y, n, BLOCK=BLOCK_SIZE, num_warps=4)"), std::string::npos);
}

TEST(DiffApplier, OverlappingEditsFailOnTheOneThatNoLongerFits) {
  // Both quote the launch line; after the first rewrites it, the second cannot be placed
  // anywhere and nothing is applied at all.
  std::string message = error_of(kCode, {{"relu_kernel[grid](x, y, n, BLOCK=1024)", "relu_kernel[grid](x, y, n)"},
                                         {"y, n, BLOCK=1024)\n        return y", "y, n, BLOCK=64)\n        return y"}});
  EXPECT_NE(message.find("modification 2"), std::string::npos) << message;
}

TEST(DiffApplier, DeletesWithAnEmptyNewString) {
  ApplyResult r = apply(kCode, {{"        super().__init__()\n", ""}});
  EXPECT_EQ(r.code.find("super()"), std::string::npos);
  EXPECT_NE(r.code.find("    def __init__(self):\n\n    def forward"), std::string::npos) << r.code;
}

TEST(DiffApplier, KeepsAMissingFinalNewlineMissing) {
  ApplyResult r = apply("a = 1\nb = 2", {{"  b = 2  ", "b = 3\n"}});
  EXPECT_EQ(r.edits[0].level, MatchLevel::line_trimmed);
  EXPECT_EQ(r.code, "a = 1\nb = 3");
}

TEST(DiffApplier, ReplaceAllIsNeverFuzzy) {
  std::string message = error_of(kCode, {{"relu_kernal[grid](x, y, n, BLOCK=1024)", "k()", true}});
  EXPECT_NE(message.find("never placed by similarity"), std::string::npos) << message;
}

TEST(Similarity, IsOneMinusNormalisedEditDistance) {
  EXPECT_DOUBLE_EQ(similarity("abcd", "abcd"), 1.0);
  EXPECT_DOUBLE_EQ(similarity("abcd", "abce"), 0.75);
  EXPECT_DOUBLE_EQ(similarity("a  b\n c", "a b c"), 1.0) << "whitespace runs count once";
  EXPECT_DOUBLE_EQ(similarity("", ""), 1.0);
  EXPECT_DOUBLE_EQ(similarity("abcd", "wxyz"), 0.0);
}

TEST(Similarity, ReportsZeroBelowTheFloor) {
  EXPECT_DOUBLE_EQ(similarity("abcdefghij", "abcdefghzz", 0.7), 0.8);
  EXPECT_DOUBLE_EQ(similarity("abcdefghij", "abcdezzzzz", 0.7), 0.0);
  EXPECT_DOUBLE_EQ(similarity("abcdefghij", "abc", 0.7), 0.0);
}

}  // namespace
}  // namespace kforge::llm
