#include "store/scratch.hpp"

namespace kforge::sql {

ScratchDb::ScratchDb(const char* schema) {
  // An empty file name: a private database on disk that SQLite deletes when it closes.
  if (sqlite3_open_v2("", &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw StoreError(fmt::format("cannot open a scratch database: {}; check that the temporary directory (TMPDIR, "
                                 "else /tmp) exists and is writable",
                                 message));
  }
  try {
    // Nothing here outlives the process, so nothing is journaled or synced; 8 MiB of pages
    // are kept in memory, the rest is in the file.
    exec("PRAGMA journal_mode = OFF");
    exec("PRAGMA synchronous = OFF");
    exec("PRAGMA cache_size = -8192");
    exec(schema);
  } catch (...) {
    sqlite3_close(db_);
    throw;
  }
}

ScratchDb::~ScratchDb() { sqlite3_close_v2(db_); }

}  // namespace kforge::sql
