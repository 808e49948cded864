#include "report/environment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "report/report.hpp"

namespace kforge {

std::vector<EnvironmentUse> environments_of(const std::vector<JobOutcome>& jobs) {
  std::vector<EnvironmentUse> uses;
  for (const JobOutcome& job : jobs) {
    if (job.environment.empty()) continue;
    const auto parsed = nlohmann::json::parse(job.environment, nullptr, false);
    if (!parsed.is_object()) continue;
    std::map<std::string, std::string> facts;
    for (const auto& [key, value] : parsed.items()) facts[key] = value.is_string() ? value.get<std::string>() : value.dump();
    auto same = std::find_if(uses.begin(), uses.end(), [&](const EnvironmentUse& u) { return u.facts == facts; });
    if (same == uses.end()) same = uses.insert(uses.end(), EnvironmentUse{std::move(facts), 0});
    ++same->jobs;
  }
  return uses;
}

Table environment_table(const std::vector<EnvironmentUse>& environments) {
  Table table;
  table.title = "Environment";
  table.note = "what judged the jobs: one row per device/harness server setup (jobs: how many it judged)";
  const std::vector<std::pair<const char*, const char*>> fields = {
      {"Device", "device"}, {"GPU", "gpu"},         {"Driver", "driver"}, {"CUDA", "cuda"}, {"torch", "torch"},
      {"Triton", "triton"}, {"nvcc", "nvcc"},        {"C++", "cxx"},       {"CPU", "cpu"},   {"Python", "python"},
      {"Host", "host"}};
  for (const auto& [title, key] : fields) table.columns.push_back(title);
  table.columns.push_back("Jobs");
  for (const EnvironmentUse& use : environments) {
    std::vector<std::string> row;
    for (const auto& [title, key] : fields) {
      const auto it = use.facts.find(key);
      row.push_back(it == use.facts.end() ? "-" : it->second);
    }
    row.push_back(std::to_string(use.jobs));
    table.rows.push_back(std::move(row));
  }
  return table;
}

namespace {

// Every value a strategy's environments give `field`, joined: "NVIDIA H100" or "A, B".
std::string values_of(const Metrics& m, const char* field) {
  std::set<std::string> values;
  for (const EnvironmentUse& use : m.environments) {
    const auto it = use.facts.find(field);
    values.insert(it == use.facts.end() ? "(unknown)" : it->second);
  }
  return fmt::format("{}", fmt::join(values, ", "));
}

}  // namespace

std::vector<std::string> environment_mismatches(const std::vector<Metrics>& strategies) {
  std::vector<std::string> problems;
  if (strategies.size() < 2) return problems;
  for (const Metrics& m : strategies) {
    if (m.environments.empty()) {
      problems.push_back(fmt::format(
          "'{}' recorded no environment (no run stage judged it, or its store predates schema 3): its timings "
          "cannot be checked for comparability",
          m.label));
    }
  }
  const Metrics& first = strategies.front();
  if (first.environments.empty()) return problems;
  for (size_t i = 1; i < strategies.size(); ++i) {
    const Metrics& other = strategies[i];
    if (other.environments.empty()) continue;
    for (const char* field : kTimingRelevantFields) {
      const std::string a = values_of(first, field);
      const std::string b = values_of(other, field);
      if (a != b) {
        problems.push_back(fmt::format("'{}' and '{}' were timed with different {}: {} vs {}", first.label,
                                       other.label, field, a, b));
      }
    }
  }
  return problems;
}

}  // namespace kforge
