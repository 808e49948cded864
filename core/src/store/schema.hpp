// The run store's schema, as numbered steps from an empty database (docs/reports.md).
#pragma once

#include <functional>
#include <string>
#include <vector>

struct sqlite3;

namespace kforge {

// One schema step: brings a database at version `to - 1` to version `to`.
struct Migration {
  int to = 0;
  std::function<void(sqlite3*)> apply;
};

// The steps from an empty database (version 0) to the current schema, in order.
const std::vector<Migration>& schema_migrations();

// Applies every step above the database's PRAGMA user_version, each in its own
// transaction together with the new version number. Throws StoreError when the database
// is newer than the last step or a step fails (that step is rolled back).
void migrate(sqlite3* db, const std::vector<Migration>& steps, const std::string& path);

}  // namespace kforge
