#include "model_selector.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace kforge::llm {

namespace {

std::string upper(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

}  // namespace

ModelSelector ModelSelector::by_complexity(const std::map<std::string, std::string>& table,
                                           std::string fallback) {
  ModelSelector selector;
  for (const auto& [complexity, model] : table) {
    std::string key = upper(complexity);
    if (key != "C1" && key != "C2" && key != "C3" && key != "C4") {
      throw std::invalid_argument("table key '" + complexity +
                                  "' is not a complexity class (C1, C2, C3, C4)");
    }
    if (model.empty()) throw std::invalid_argument("table entry " + key + " names no model");
    selector.table_[key] = model;
  }
  if (fallback.empty()) throw std::invalid_argument("the default model is empty");
  selector.fallback_ = std::move(fallback);
  return selector;
}

ModelSelector ModelSelector::fixed(std::string model) {
  if (model.empty()) throw std::invalid_argument("the fixed strategy needs a model (default)");
  ModelSelector selector;
  selector.fallback_ = std::move(model);
  selector.fixed_ = true;
  return selector;
}

ModelSelector::Choice ModelSelector::choose(std::string_view complexity) const {
  if (fixed_) return {fallback_, "fixed"};
  std::string key = upper(complexity);
  if (auto it = table_.find(key); it != table_.end()) return {it->second, key + " -> " + it->second};
  return {fallback_, key.empty() ? "default (task has no complexity class)"
                                 : "default (" + key + " not in the table)"};
}

}  // namespace kforge::llm
