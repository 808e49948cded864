#include "model_selector.hpp"

#include <gtest/gtest.h>

namespace kforge::llm {
namespace {

TEST(ModelSelector, LooksTheComplexityClassUpInTheTable) {
  auto selector = ModelSelector::by_complexity({{"C4", "glm-5.1"}, {"c3", "deepseek-reasoner"}},
                                               "deepseek-chat");
  EXPECT_EQ(selector.choose("C4").model, "glm-5.1");
  EXPECT_EQ(selector.choose("C4").reason, "C4 -> glm-5.1");
  EXPECT_EQ(selector.choose("c3").model, "deepseek-reasoner") << "classes are case-insensitive";
  EXPECT_EQ(selector.choose("C1").model, "deepseek-chat");
  EXPECT_EQ(selector.choose("C1").reason, "default (C1 not in the table)");
  EXPECT_EQ(selector.choose("").model, "deepseek-chat");
  EXPECT_EQ(selector.choose("").reason, "default (task has no complexity class)");
}

TEST(ModelSelector, FixedPicksOneModelForEveryTask) {
  auto selector = ModelSelector::fixed("qwen2.5-coder-7b");
  EXPECT_EQ(selector.choose("C4").model, "qwen2.5-coder-7b");
  EXPECT_EQ(selector.choose("").model, "qwen2.5-coder-7b");
}

TEST(ModelSelector, RefusesTablesThatAreNotAboutComplexityClasses) {
  EXPECT_THROW(ModelSelector::by_complexity({{"C5", "x"}}, "d"), std::invalid_argument);
  EXPECT_THROW(ModelSelector::by_complexity({{"elementwise", "x"}}, "d"), std::invalid_argument);
  EXPECT_THROW(ModelSelector::by_complexity({{"C1", ""}}, "d"), std::invalid_argument);
  EXPECT_THROW(ModelSelector::by_complexity({{"C1", "x"}}, ""), std::invalid_argument);
  EXPECT_THROW(ModelSelector::fixed(""), std::invalid_argument);
}

}  // namespace
}  // namespace kforge::llm
