#include "report/environment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "report/report.hpp"

namespace kforge {
namespace {

// The facts of every run stage that say where a job ran (kforge/abi.h).
constexpr const char* kWellKnownPlacement[] = {KF_ENV_HOST, KF_ENV_DEVICE, KF_ENV_OS};

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// An environment's facts in the order given, and which of them say where the job ran.
EnvironmentUse parse_use(const nlohmann::ordered_json& parsed) {
  EnvironmentUse use;
  std::vector<std::string> declared;
  for (const auto& [key, value] : parsed.items()) {
    if (key == KF_ENV_PLACEMENT) {
      if (!value.is_array()) continue;
      for (const auto& fact : value) {
        if (fact.is_string()) declared.push_back(fact.get<std::string>());
      }
      continue;
    }
    use.facts[key] = value.is_string() ? value.get<std::string>() : value.dump();
    use.order.push_back(key);
  }
  for (const std::string& fact : use.order) {
    const bool well_known = std::any_of(std::begin(kWellKnownPlacement), std::end(kWellKnownPlacement),
                                        [&](const char* name) { return fact == name; });
    if (well_known || contains(declared, fact)) use.placement.push_back(fact);
  }
  return use;
}

// The facts of `environments` in order of first appearance: those that decide timings, then
// (`placement`) those that say where the jobs ran. A fact any environment counts as
// placement is placement for all.
std::vector<std::string> facts_of(const std::vector<EnvironmentUse>& environments, bool placement) {
  std::vector<std::string> facts;
  for (const EnvironmentUse& use : environments) {
    for (const std::string& fact : use.order) {
      if (contains(facts, fact)) continue;
      const bool where = std::any_of(environments.begin(), environments.end(),
                                     [&](const EnvironmentUse& u) { return u.is_placement(fact); });
      if (where == placement) facts.push_back(fact);
    }
  }
  return facts;
}

}  // namespace

bool EnvironmentUse::is_placement(const std::string& fact) const { return contains(placement, fact); }

void EnvironmentTally::add(const JobOutcome& job) {
  if (job.environment.empty()) return;
  if (!last_text_.empty() && job.environment == last_text_) {
    ++uses_[last_use_].jobs;
    return;
  }
  const auto parsed = nlohmann::ordered_json::parse(job.environment, nullptr, false);
  if (!parsed.is_object()) return;
  EnvironmentUse use = parse_use(parsed);
  auto same = std::find_if(uses_.begin(), uses_.end(), [&](const EnvironmentUse& u) {
    return u.facts == use.facts && u.placement == use.placement;
  });
  if (same == uses_.end()) same = uses_.insert(uses_.end(), std::move(use));
  ++same->jobs;
  last_text_ = job.environment;
  last_use_ = static_cast<size_t>(same - uses_.begin());
}

std::vector<EnvironmentUse> environments_of(const std::vector<JobOutcome>& jobs) {
  EnvironmentTally tally;
  for (const JobOutcome& job : jobs) tally.add(job);
  return tally.uses();
}

Table environment_table(const std::vector<EnvironmentUse>& environments) {
  Table table;
  table.title = "Environment";
  table.note = "what judged the jobs: one row per setup of the run stages (jobs: how many it judged); the facts "
               "after the timing ones say where the jobs ran";
  std::vector<std::string> columns = facts_of(environments, false);
  for (const std::string& fact : facts_of(environments, true)) columns.push_back(fact);
  table.columns = columns;
  table.columns.push_back("jobs");
  for (const EnvironmentUse& use : environments) {
    std::vector<std::string> row;
    for (const std::string& fact : columns) {
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
    std::vector<EnvironmentUse> both = first.environments;
    both.insert(both.end(), other.environments.begin(), other.environments.end());
    for (const std::string& field : facts_of(both, false)) {
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
