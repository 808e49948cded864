#include "complexity.hpp"
#include "tasks.hpp"
#include "test_files.hpp"

#include <gtest/gtest.h>

namespace kforge::kernelbench {
namespace {

std::string model(const std::string& init, const std::string& forward) {
  return "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
         "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n" +
         init + "\n    def forward(self, x, y=None):\n" + forward +
         "\n\nbatch_size = 16\n\ndef get_inputs():\n    return [torch.randn(batch_size, 64)]\n";
}

TEST(ComplexityClass, FollowsSeed000Boundaries) {
  EXPECT_EQ(complexity_class(1.5), "C1");
  EXPECT_EQ(complexity_class(2.0), "C1");
  EXPECT_EQ(complexity_class(2.5), "C2");
  EXPECT_EQ(complexity_class(3.0), "C3");
  EXPECT_EQ(complexity_class(3.99), "C3");
  EXPECT_EQ(complexity_class(4.0), "C4");
}

TEST(Complexity, ElementwiseIsC1) {
  const auto e = estimate_complexity(model("", "        return torch.relu(x)"));
  EXPECT_DOUBLE_EQ(e.score, 1.5);
  EXPECT_EQ(e.complexity, "C1");
  EXPECT_EQ(e.category, "Activation");
  EXPECT_EQ(e.ops, std::vector<std::string>{"relu"});
}

TEST(Complexity, PlainArithmeticIsC1Math) {
  const auto e = estimate_complexity(model("", "        return x * 2.0 + y"));
  EXPECT_EQ(e.complexity, "C1");
  EXPECT_EQ(e.category, "Math");
  EXPECT_TRUE(e.ops.empty());
}

TEST(Complexity, ReductionsNormsAndPoolingAreC2) {
  EXPECT_EQ(estimate_complexity(model("", "        return torch.softmax(x, dim=1)")).complexity, "C2");
  const auto norm = estimate_complexity(model("        self.norm = nn.LayerNorm(64)", "        return self.norm(x)"));
  EXPECT_EQ(norm.complexity, "C2");
  EXPECT_EQ(norm.category, "Normalization");
  const auto pool = estimate_complexity(model("", "        return F.max_pool2d(x, 2)"));
  EXPECT_EQ(pool.category, "Pooling");
  EXPECT_EQ(estimate_complexity(model("", "        return x.sum(dim=1, keepdim=True)")).category, "Reduce");
}

TEST(Complexity, MatmulIsC3AndMatmulOperatorCounts) {
  const auto e = estimate_complexity(model("", "        return torch.matmul(x, y)"));
  EXPECT_DOUBLE_EQ(e.score, 3.5);
  EXPECT_EQ(e.complexity, "C3");
  EXPECT_EQ(e.category, "MatrixMultiply");
  EXPECT_EQ(estimate_complexity(model("", "        return x @ y")).complexity, "C3");
}

TEST(Complexity, ConvolutionLossAndAttentionAreC4) {
  const auto conv = estimate_complexity(model("        self.conv = nn.Conv2d(3, 8, 3)", "        return self.conv(x)"));
  EXPECT_EQ(conv.complexity, "C4");
  EXPECT_EQ(conv.category, "Convolution");
  const auto loss = estimate_complexity(model("", "        return F.cross_entropy(x, y)"));
  EXPECT_EQ(loss.complexity, "C4");
  EXPECT_EQ(loss.category, "Loss");
  const auto attention = estimate_complexity(
      model("", "        s = torch.matmul(x, y.transpose(-2, -1))\n        return torch.matmul(torch.softmax(s, -1), y)"));
  EXPECT_EQ(attention.complexity, "C4");
  EXPECT_EQ(attention.category, "Fusion");
}

TEST(Complexity, SeveralOperatorsRaiseTheScore) {
  const auto fused = estimate_complexity(
      model("        self.fc = nn.Linear(64, 64)", "        return torch.relu(self.fc(x)).sum(dim=1)"));
  EXPECT_DOUBLE_EQ(fused.score, 3.5 + 2 * 0.25);
  EXPECT_EQ(fused.complexity, "C4");
  EXPECT_EQ(fused.category, "Fusion");
}

TEST(Complexity, IgnoresCommentsStringsDecoratorsAndCodeOutsideModel) {
  const std::string source =
      "import torch\n# torch.conv2d( in a comment\n"
      "def helper(x):\n    return torch.matmul(x, x)\n"
      "class Model(torch.nn.Module):\n"
      "    \"\"\"Calls conv2d( in a docstring.\"\"\"\n"
      "    @torch.no_grad()\n"
      "    def forward(self, x):\n        name = 'softmax('\n        return torch.tanh(x)\n"
      "def get_inputs():\n    return [torch.randn(4, 4)]\n";
  const auto e = estimate_complexity(source);
  EXPECT_EQ(e.ops, std::vector<std::string>{"tanh"});
  EXPECT_EQ(e.complexity, "C1");
}

// The scorer against the hand-written classes of the bundled suite: it is a fallback for
// manifests that say nothing, so it must agree with people most of the time.
TEST(Complexity, AgreesWithTheBundledManifestMostly) {
  const auto& tasks = testing::bundled_tasks();
  ASSERT_GE(tasks.size(), 40u);
  size_t agree = 0, off_by_more_than_one = 0;
  std::string disagreements;
  for (const TaskEntry& task : tasks) {
    const auto e = estimate_complexity(testing::read_file(task.path), task.id);
    if (e.complexity == task.complexity) {
      ++agree;
    } else {
      disagreements += task.id + ": manifest " + task.complexity + ", scorer " + e.complexity + "\n";
      if (std::abs(e.complexity[1] - task.complexity[1]) > 1) ++off_by_more_than_one;
    }
  }
  RecordProperty("agreement", std::to_string(agree) + "/" + std::to_string(tasks.size()));
  std::printf("complexity scorer agrees on %zu of %zu bundled tasks; disagreements:\n%s", agree, tasks.size(),
              disagreements.c_str());
  EXPECT_GE(static_cast<double>(agree) / static_cast<double>(tasks.size()), 0.75) << disagreements;
  EXPECT_EQ(off_by_more_than_one, 0u) << disagreements;
}

}  // namespace
}  // namespace kforge::kernelbench
