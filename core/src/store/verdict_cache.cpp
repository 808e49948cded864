#include "store/verdict_cache.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "store/json_text.hpp"
#include "store/statements.hpp"

namespace kforge {
namespace {

using json = nlohmann::ordered_json;
using sql::now_iso;
using sql::Statement;

}  // namespace

std::optional<CachedVerdict> Store::find_cached(const std::string& key) {
  std::string verdict_text, strings_text, numbers_text;
  {
    std::lock_guard lock(mutex_);
    Statement& q = writes().find_cached;
    q.bind(1, key);
    bool found = false;
    while (q.step()) {
      verdict_text = q.text(0);
      strings_text = q.text(1);
      numbers_text = q.text(2);
      found = true;
    }
    if (!found) return std::nullopt;
  }
  const json verdict = json::parse(verdict_text, nullptr, false);
  const json strings = json::parse(strings_text, nullptr, false);
  const json numbers = json::parse(numbers_text, nullptr, false);
  if (verdict.is_discarded() || strings.is_discarded() || numbers.is_discarded()) {
    throw StoreError(fmt::format("run store '{}': verdict cache entry {} is not valid JSON", path_, key));
  }
  CachedVerdict entry;
  Verdict& v = entry.verdict;
  v.status = parse_status(verdict.value("status", "error"));
  v.route = verdict.value("route", "");
  v.error_class = verdict.value("error_class", "");
  v.message = verdict.value("message", "");
  v.log_tail = verdict.value("log_tail", "");
  v.measured = verdict.value("measured", false);
  for (const auto& metric : verdict.value("metrics", json::array())) {
    v.metrics.emplace_back(metric.at(0).get<std::string>(), metric.at(1).get<double>());
  }
  for (const auto& s : strings) entry.strings.emplace_back(s.at(0).get<std::string>(), s.at(1).get<std::string>());
  for (const auto& n : numbers) entry.numbers.emplace_back(n.at(0).get<std::string>(), n.at(1).get<double>());
  return entry;
}

void Store::put_cached(const std::string& key, const CachedVerdict& entry) {
  const Verdict& v = entry.verdict;
  json verdict = {{"status", to_string(v.status)},
                  {"route", v.route},
                  {"error_class", v.error_class},
                  {"message", v.message},
                  {"log_tail", v.log_tail},
                  {"measured", v.measured}};
  auto& metrics = verdict["metrics"] = json::array();
  for (const auto& [name, value] : v.metrics) metrics.push_back({name, value});
  json strings = json::array();
  for (const auto& [name, text] : entry.strings) strings.push_back({name, text});
  json numbers = json::array();
  for (const auto& [name, value] : entry.numbers) numbers.push_back({name, value});

  std::lock_guard lock(mutex_);
  const OwnWrite own(*this);
  writes().put_cached.bind(1, key).bind(2, json_text(verdict)).bind(3, json_text(strings)).bind(4, json_text(numbers))
      .bind(5, now_iso()).run();
}


std::optional<CachedVerdict> StoredVerdictCache::find(const std::string& key) {
  try {
    return store_.find_cached(key);
  } catch (const std::exception& e) {
    spdlog::warn("verdict cache lookup failed, evaluating instead: {}", e.what());
    return std::nullopt;
  }
}

void StoredVerdictCache::put(const std::string& key, const CachedVerdict& entry) {
  try {
    store_.put_cached(key, entry);
  } catch (const std::exception& e) {
    spdlog::warn("verdict cache write failed (the result is recorded, only not cached): {}", e.what());
  }
}


}  // namespace kforge
