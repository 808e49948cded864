#include "code_extract.hpp"

#include <gtest/gtest.h>

namespace kforge::llm {
namespace {

TEST(ExtractCode, TakesTheFencedBlockOutOfProse) {
  auto code = extract_code("Here is the kernel:\n```python\nimport torch\nx = 1\n```\nIt is fast.",
                           ExtractOptions{});
  ASSERT_TRUE(code);
  EXPECT_EQ(code->code, "import torch\nx = 1\n");
  EXPECT_EQ(code->language, "python");
  EXPECT_TRUE(code->fenced);
}

TEST(ExtractCode, FirstOrLastBlockAsConfigured) {
  const std::string answer = "```python\nfirst = 1\n```\ntext\n```python\nlast = 2\n```\n";
  EXPECT_EQ(extract_code(answer, {false, {"python"}})->code, "first = 1\n");
  EXPECT_EQ(extract_code(answer, {true, {"python"}})->code, "last = 2\n");
}

TEST(ExtractCode, PrefersBlocksWithAPreferredLanguageTag) {
  const std::string answer =
      "The CUDA part:\n```cuda\n__global__ void k() {}\n```\nThe module:\n```Python\nclass ModelNew: pass\n```";
  auto code = extract_code(answer, ExtractOptions{});
  ASSERT_TRUE(code);
  EXPECT_EQ(code->code, "class ModelNew: pass\n");
  // Without a preferred tag present, any block qualifies.
  auto cuda_only = extract_code("```cuda\n__global__ void k() {}\n```", ExtractOptions{});
  ASSERT_TRUE(cuda_only);
  EXPECT_EQ(cuda_only->language, "cuda");
}

TEST(ExtractCode, UntaggedFencesAndTildeFencesCount) {
  EXPECT_EQ(extract_code("```\nx = 1\n```", ExtractOptions{})->code, "x = 1\n");
  EXPECT_EQ(extract_code("~~~python\ny = 2\n~~~\n", ExtractOptions{})->code, "y = 2\n");
}

TEST(ExtractCode, ALongerFenceMayHoldTripleBackticks) {
  auto code = extract_code("````python\ns = '''\n```\n'''\n````", ExtractOptions{});
  ASSERT_TRUE(code);
  EXPECT_EQ(code->code, "s = '''\n```\n'''\n");
}

TEST(ExtractCode, AnAnswerWithoutFencesIsCodeAsAWhole) {
  auto code = extract_code("\n\nimport torch\nclass ModelNew: pass\n\n", ExtractOptions{});
  ASSERT_TRUE(code);
  EXPECT_EQ(code->code, "import torch\nclass ModelNew: pass\n");
  EXPECT_FALSE(code->fenced);
}

TEST(ExtractCode, NothingUsableGivesNothing) {
  EXPECT_FALSE(extract_code("", ExtractOptions{}));
  EXPECT_FALSE(extract_code("  \n\t\n", ExtractOptions{}));
  EXPECT_FALSE(extract_code("```python\n\n```", ExtractOptions{}));
}

TEST(ExtractCode, AnAnswerCutByMaxTokensKeepsItsOpenBlock) {
  auto code = extract_code("Sure:\n```python\nimport torch\ndef f(", ExtractOptions{});
  ASSERT_TRUE(code);
  EXPECT_EQ(code->code, "import torch\ndef f(\n");
}

TEST(ExtractCode, DropsTheReasoningPreamble) {
  const std::string answer =
      "<think>\nmaybe:\n```python\ndraft = 0\n```\n</think>\nFinal:\n```python\nfinal = 1\n```";
  EXPECT_EQ(extract_code(answer, ExtractOptions{})->code, "final = 1\n");
}

TEST(FencedBlocks, FindsEveryBlockInOrderWithCrLfLines) {
  auto blocks = fenced_blocks("```json\r\n{}\r\n```\r\ntext\r\n```cpp\r\nint x;\r\n```\r\n");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].language, "json");
  EXPECT_EQ(blocks[0].code, "{}\n");
  EXPECT_EQ(blocks[1].language, "cpp");
  EXPECT_EQ(blocks[1].code, "int x;\n");
}

}  // namespace
}  // namespace kforge::llm
