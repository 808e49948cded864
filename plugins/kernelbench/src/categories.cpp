#include "categories.hpp"

#include <kforge/abi.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>

namespace kforge::kernelbench {
namespace {

// The well-known error classes of a run stage's comparison: the candidate's code ran to the
// end and its outputs were compared.
constexpr const char* kComparisonErrors[] = {KF_ERROR_SHAPE_MISMATCH, KF_ERROR_DTYPE_MISMATCH,
                                             KF_ERROR_NUMERICAL_MISMATCH, KF_ERROR_CHEAT_DETECTED};

std::string text_of(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// "3/4 (75.0%)"; "-" for none.
std::string share_text(uint64_t count, uint64_t total) {
  if (total == 0) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%llu/%llu (%.1f%%)", static_cast<unsigned long long>(count),
                static_cast<unsigned long long>(total), 100.0 * static_cast<double>(count) / static_cast<double>(total));
  return text;
}

std::string speedup_text(std::optional<double> speedup) {
  if (!speedup) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", *speedup);
  return text;
}

nlohmann::ordered_json share_json(uint64_t count, uint64_t total) {
  return {{"count", count},
          {"total", total},
          {"rate", total == 0 ? 0.0 : static_cast<double>(count) / static_cast<double>(total)}};
}

}  // namespace

void CategoryRates::task(std::string_view task_json) {
  const nlohmann::json task = nlohmann::json::parse(task_json);
  std::string category = text_of(task, "category");
  if (category.empty()) category = "(none)";
  const auto jobs = task.find("jobs");
  if (jobs == task.end() || !jobs->is_array()) throw std::runtime_error("a task without its jobs");
  for (const nlohmann::json& job : *jobs) {
    const std::string status = text_of(job, "status");
    if (status != "pass" && status != "fail") continue;  // not judged: nobody's rate
    const bool passed = status == "pass";
    const std::string error_class = text_of(job, "error_class");
    const bool compared = std::any_of(std::begin(kComparisonErrors), std::end(kComparisonErrors),
                                      [&](const char* c) { return error_class == c; });
    Tally& t = categories_[category];
    ++t.called.total;
    ++t.correct.total;
    if (passed || compared) ++t.called.count;
    if (!passed) continue;
    ++t.correct.count;
    const auto speedup = job.find("speedup");
    if (speedup == job.end() || !speedup->is_number()) continue;
    const double x = speedup->get<double>();
    ++t.faster.total;
    if (x > 1.0) ++t.faster.count;
    t.speedup_sum += x;
    ++t.speedups;
  }
}

std::optional<kforge::sdk::ReportTable> CategoryRates::table() const {
  if (categories_.empty()) return std::nullopt;
  kforge::sdk::ReportTable table;
  table.title = "KernelBenchX rates by category";
  table.note =
      "candidates with a verdict; call: ran to the end (passed, or failed only by the comparison); execution: "
      "correct; faster: correct and timed faster than the reference";
  table.columns = {"Category", "Candidates", "Call accuracy", "Execution accuracy", "Faster", "Mean speedup"};
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (const auto& [name, t] : categories_) {
    const std::optional<double> mean =
        t.speedups == 0 ? std::nullopt : std::optional<double>(t.speedup_sum / static_cast<double>(t.speedups));
    table.rows.push_back({name, std::to_string(t.called.total), share_text(t.called.count, t.called.total),
                          share_text(t.correct.count, t.correct.total), share_text(t.faster.count, t.faster.total),
                          speedup_text(mean)});
    data.push_back({{"name", name},
                    {"called", share_json(t.called.count, t.called.total)},
                    {"correct", share_json(t.correct.count, t.correct.total)},
                    {"faster", share_json(t.faster.count, t.faster.total)},
                    {"mean_speedup", mean ? nlohmann::ordered_json(*mean) : nlohmann::ordered_json(nullptr)}});
  }
  table.data_json = data.dump();
  return table;
}

}  // namespace kforge::kernelbench
