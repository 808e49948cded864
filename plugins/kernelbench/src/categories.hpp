// KernelBenchX's rates by category (seed 001), the report section kernelbench.categories of
// runs with tasks of its format: per task.category, over the candidates with a verdict on
// them (pass or fail; an error verdict blames the task, the harness or the machine, not the
// candidate), how many ran to the end (call accuracy: passed, or failed only by the
// comparison of their outputs), how many were correct (execution accuracy), how many of the
// correct timed ones were faster than the reference, and their mean speedup.
// docs/kernelbenchx.md#the-report.
#pragma once

#include <kforge/sdk.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace kforge::kernelbench {

class CategoryRates {
 public:
  // One task as the host hands it to a report section (kf_exporter_kind's JSON).
  void task(std::string_view task_json);
  // The table, with its numbers as report.json's data; nullopt when no candidate had a
  // verdict on it.
  std::optional<kforge::sdk::ReportTable> table() const;

 private:
  struct Share {
    uint64_t count = 0;
    uint64_t total = 0;
  };
  struct Tally {
    Share called;
    Share correct;
    Share faster;
    double speedup_sum = 0;
    uint64_t speedups = 0;
  };
  std::map<std::string, Tally> categories_;  // "(none)" for tasks without a category
};

}  // namespace kforge::kernelbench
