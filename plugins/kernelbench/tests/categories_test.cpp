// KernelBenchX's rates by category (the report section kernelbench.categories), from tasks
// as the host hands them to a report section (kf_exporter_kind's JSON in kforge/abi.h).
#include "categories.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;
namespace kb = kforge::kernelbench;

json job(const std::string& status, const std::string& error_class = "", json speedup = nullptr) {
  return {{"sample", 0}, {"round", 0}, {"status", status}, {"passed", status == "pass"}, {"error_class", error_class},
          {"speedup", std::move(speedup)}, {"metrics", json::object()}};
}

std::string task(const std::string& category, std::vector<json> jobs) {
  return json{{"id", "t"}, {"category", category}, {"format", "kernelbenchx"}, {"jobs", std::move(jobs)}}.dump();
}

// Activation: a task with a candidate that passed at 2.0x and one that ran to the end but
// mismatched, and a task with one that passed at 0.9x and one that never compiled. Reduce:
// one candidate no stage could judge (not counted) and one that never built.
TEST(CategoryRates, CountCandidatesWithAVerdictPerCategory) {
  kb::CategoryRates rates;
  rates.task(task("Activation", {job("pass", "", 2.0), job("fail", "numerical_mismatch")}));
  rates.task(task("Activation", {job("pass", "", 0.9), job("fail", "compile_error")}));
  rates.task(task("Reduce", {job("error", "harness_error"), job("fail", "compile_error")}));
  const auto table = rates.table();
  ASSERT_TRUE(table.has_value());
  EXPECT_EQ(table->title, "KernelBenchX rates by category");
  EXPECT_EQ(table->columns,
            (std::vector<std::string>{"Category", "Candidates", "Call accuracy", "Execution accuracy", "Faster",
                                      "Mean speedup"}));
  ASSERT_EQ(table->rows.size(), 2u);
  EXPECT_EQ(table->rows[0],
            (std::vector<std::string>{"Activation", "4", "3/4 (75.0%)", "2/4 (50.0%)", "1/2 (50.0%)", "1.45x"}));
  EXPECT_EQ(table->rows[1], (std::vector<std::string>{"Reduce", "1", "0/1 (0.0%)", "0/1 (0.0%)", "-", "-"}));

  const json data = json::parse(table->data_json);
  ASSERT_EQ(data.size(), 2u);
  EXPECT_EQ(data[0]["name"], "Activation");
  EXPECT_EQ(data[0]["called"], (json{{"count", 3}, {"total", 4}, {"rate", 0.75}}));
  EXPECT_EQ(data[0]["faster"]["count"], 1);
  EXPECT_DOUBLE_EQ(data[0]["mean_speedup"].get<double>(), 1.45);
  EXPECT_TRUE(data[1]["mean_speedup"].is_null());
}

TEST(CategoryRates, ATaskWithoutCategoryIsNoneAndNoVerdictGivesNoTable) {
  kb::CategoryRates none;
  none.task(task("", {job("error", "host_error")}));
  EXPECT_FALSE(none.table().has_value()) << "no candidate had a verdict";
  none.task(task("", {job("fail", "cheat_detected")}));
  ASSERT_TRUE(none.table().has_value());
  EXPECT_EQ(none.table()->rows[0][0], "(none)");
  EXPECT_EQ(none.table()->rows[0][2], "1/1 (100.0%)") << "a rejected comparison ran to the end";
}

TEST(CategoryRates, ATaskThatIsNotJsonIsRefused) {
  kb::CategoryRates rates;
  EXPECT_THROW(rates.task("{"), std::exception);
  EXPECT_THROW(rates.task(R"({"id":"t"})"), std::runtime_error);
}

}  // namespace
