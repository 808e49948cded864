#include "report/environment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "report/report.hpp"

namespace kforge {

void EnvironmentTally::add(const JobOutcome& job) {
  if (job.environment.empty()) return;
  if (!last_text_.empty() && job.environment == last_text_) {
    ++uses_[last_use_].jobs;
    return;
  }
  const auto parsed = nlohmann::json::parse(job.environment, nullptr, false);
  if (!parsed.is_object()) return;
  std::map<std::string, std::string> facts;
  for (const auto& [key, value] : parsed.items()) facts[key] = value.is_string() ? value.get<std::string>() : value.dump();
  auto same = std::find_if(uses_.begin(), uses_.end(), [&](const EnvironmentUse& u) { return u.facts == facts; });
  if (same == uses_.end()) same = uses_.insert(uses_.end(), EnvironmentUse{std::move(facts), 0});
  ++same->jobs;
  last_text_ = job.environment;
  last_use_ = static_cast<size_t>(same - uses_.begin());
}

std::vector<EnvironmentUse> environments_of(const std::vector<JobOutcome>& jobs) {
  EnvironmentTally tally;
  for (const JobOutcome& job : jobs) tally.add(job);
  return tally.uses();
}

namespace {

constexpr const char* kPlacementFacts[] = {"host", "device", "gpu_uuid", "os"};

bool has_column(const std::string& fact) {
  return std::any_of(std::begin(kEnvironmentColumns), std::end(kEnvironmentColumns),
                     [&](const EnvironmentColumn& c) { return fact == c.fact; });
}

// The facts that decide timings in any of `environments` and have no column of their own, by name.
std::set<std::string> other_facts(const std::vector<EnvironmentUse>& environments) {
  std::set<std::string> facts;
  for (const EnvironmentUse& use : environments) {
    for (const auto& [fact, value] : use.facts) {
      if (decides_timing(fact) && !has_column(fact)) facts.insert(fact);
    }
  }
  return facts;
}

}  // namespace

bool decides_timing(const std::string& fact) {
  return std::none_of(std::begin(kPlacementFacts), std::end(kPlacementFacts),
                      [&](const char* placement) { return fact == placement; });
}

Table environment_table(const std::vector<EnvironmentUse>& environments) {
  Table table;
  table.title = "Environment";
  table.note = "what judged the jobs: one row per device/harness server setup (jobs: how many it judged)";
  std::vector<std::pair<std::string, std::string>> columns;  // title, fact
  for (const EnvironmentColumn& c : kEnvironmentColumns) columns.emplace_back(c.title, c.fact);
  // Other facts before the placement columns (Host, GPU UUID), which close the row.
  const auto host = std::find_if(columns.begin(), columns.end(), [](const auto& c) { return c.second == "host"; });
  auto placement = host - columns.begin();
  for (const std::string& fact : other_facts(environments)) columns.emplace(columns.begin() + placement++, fact, fact);
  for (const auto& [title, fact] : columns) table.columns.push_back(title);
  table.columns.push_back("Jobs");
  for (const EnvironmentUse& use : environments) {
    std::vector<std::string> row;
    for (const auto& [title, fact] : columns) {
      const auto it = use.facts.find(fact);
      row.push_back(it == use.facts.end() ? "-" : it->second);
    }
    row.push_back(std::to_string(use.jobs));
    table.rows.push_back(std::move(row));
  }
  return table;
}

namespace {

// Every value a strategy's environments give `field`, joined: "NVIDIA H100" or "A, B".
std::string values_of(const Metrics& m, const std::string& field) {
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
    // The bundled harness's facts in the table's order, then any other by name.
    std::vector<std::string> fields;
    for (const EnvironmentColumn& c : kEnvironmentColumns) {
      if (decides_timing(c.fact)) fields.emplace_back(c.fact);
    }
    std::vector<EnvironmentUse> both = first.environments;
    both.insert(both.end(), other.environments.begin(), other.environments.end());
    for (const std::string& fact : other_facts(both)) fields.push_back(fact);
    for (const std::string& field : fields) {
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
