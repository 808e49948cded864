// Room for work that must not hold a whole run in memory: a private SQLite database that
// SQLite keeps in a small page cache and spills to a temporary file (in SQLITE_TMPDIR,
// TMPDIR or /tmp), deleted when it is closed. The run-end agreement check keeps a digest
// per job here, the KernelBench export its problems until it writes them in id order.
#pragma once

#include <string>

#include "store/sqlite.hpp"

namespace kforge::sql {

class ScratchDb {
 public:
  // Opens an empty one and runs `schema` (CREATE TABLE ...) in it. Throws StoreError when
  // SQLite cannot open one (no temporary directory it can write) or `schema` fails.
  explicit ScratchDb(const char* schema);
  ~ScratchDb();
  ScratchDb(const ScratchDb&) = delete;
  ScratchDb& operator=(const ScratchDb&) = delete;

  // Runs SQL text without results (CREATE TABLE, BEGIN, COMMIT); throws StoreError.
  void exec(const char* sql) { exec_sql(db_, name_, sql); }
  // A statement on this database; it must not outlive it.
  sqlite3* db() const { return db_; }
  const std::string& name() const { return name_; }

 private:
  sqlite3* db_ = nullptr;
  std::string name_ = "(scratch database)";  // what errors call it
};

}  // namespace kforge::sql
