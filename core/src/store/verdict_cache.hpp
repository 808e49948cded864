// The verdict cache on the store's database (table verdict_cache).
#pragma once

#include <optional>
#include <string>

#include "engine/executor.hpp"
#include "store/store.hpp"

namespace kforge {

// A lookup that fails counts as a miss; a write that fails is logged, never thrown.
class StoredVerdictCache : public VerdictCache {
 public:
  explicit StoredVerdictCache(Store& store) : store_(store) {}
  std::optional<CachedVerdict> find(const std::string& key) override;
  void put(const std::string& key, const CachedVerdict& entry) override;

 private:
  Store& store_;
};

}  // namespace kforge
