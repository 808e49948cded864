#include "store/sqlite.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <ctime>


namespace kforge::sql {

std::string now_iso() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", utc);
}

[[noreturn]] void fail(sqlite3* db, const std::string& path, const std::string& what) {
  const int code = sqlite3_extended_errcode(db);
  std::string hint;
  if ((code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED) {
    hint = "; another kforge process may be writing to this output directory: wait for it or use another --out";
  } else if ((code & 0xff) == SQLITE_FULL) {
    hint = "; the disk is full: free space and run again with --resume";
  } else if ((code & 0xff) == SQLITE_IOERR) {
    hint = "; the disk may be full or failing, or a file size limit reached (ulimit -f): fix that and run again with "
           "--resume";
  } else if ((code & 0xff) == SQLITE_READONLY || (code & 0xff) == SQLITE_CANTOPEN) {
    hint = "; check that the output directory exists and is writable";
  }
  throw StoreError(fmt::format("run store '{}': {}: {}{}", path, what, sqlite3_errmsg(db), hint));
}

void exec_sql(sqlite3* db, const std::string& path, const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw StoreError(fmt::format("run store '{}': {} (while running: {:.60}...)", path, message, sql));
  }
}


int user_version(sqlite3* db, const std::string& path) {
  Statement q(db, path, "PRAGMA user_version");
  int version = 0;
  while (q.step()) version = static_cast<int>(q.integer(0));
  return version;
}

}  // namespace kforge::sql
