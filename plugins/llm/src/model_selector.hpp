// Smart model selection (seed 000, section 6.1, strategy C): a model per complexity
// class C1..C4, with a default; and the fixed strategy (one model for every task), so
// one pipeline file can compare strategies over the same tasks.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace kforge::llm {

class ModelSelector {
 public:
  struct Choice {
    std::string model;
    std::string reason;  // "C3 -> deepseek-chat", "default (no class)", "fixed"
  };

  // `table` keys must be C1..C4 (any case); throws std::invalid_argument otherwise.
  static ModelSelector by_complexity(const std::map<std::string, std::string>& table,
                                     std::string fallback);
  static ModelSelector fixed(std::string model);

  // `complexity` as the task carries it ("C3", "c3"; empty when unknown).
  Choice choose(std::string_view complexity) const;

 private:
  ModelSelector() = default;
  std::map<std::string, std::string> table_;  // upper-case class -> model
  std::string fallback_;
  bool fixed_ = false;
};

}  // namespace kforge::llm
