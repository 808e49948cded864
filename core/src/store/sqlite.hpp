// Thin wrappers over SQLite for the run store: errors that say which database and what to
// do, prepared statements that reset themselves, transactions that roll back on the way out.
#pragma once

#include <fmt/format.h>
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>

#include "store/store_error.hpp"

namespace kforge::sql {

// Now, UTC, ISO 8601: what every time column holds.
std::string now_iso();

// Throws StoreError with SQLite's message and a hint for the common causes.
[[noreturn]] void fail(sqlite3* db, const std::string& path, const std::string& what);

// Runs SQL text without results; throws StoreError.
void exec_sql(sqlite3* db, const std::string& path, const char* sql);

// PRAGMA user_version: the schema version of a database.
int user_version(sqlite3* db, const std::string& path);

// A prepared statement, reused: bind, step, and reset after each use.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK) {
      fail(db, path, fmt::format("cannot prepare '{:.60}'", sql));
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& text) {
    check(sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Statement& bind(int i, const std::string* text) { return text ? bind(i, *text) : bind_null(i); }
  Statement& bind(int i, int64_t value) {
    check(sqlite3_bind_int64(stmt_, i, value));
    return *this;
  }
  Statement& bind(int i, double value) {
    check(sqlite3_bind_double(stmt_, i, value));
    return *this;
  }
  Statement& bind(int i, std::optional<double> value) { return value ? bind(i, *value) : bind_null(i); }
  Statement& bind_blob(int i, const std::string& bytes) {
    check(sqlite3_bind_blob(stmt_, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Statement& bind_null(int i) {
    check(sqlite3_bind_null(stmt_, i));
    return *this;
  }

  // True while there is a row to read; resets itself at the end.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) {
      reset();
      return false;
    }
    const std::string sql = sqlite3_sql(stmt_);
    reset();
    fail(db_, path_, fmt::format("'{:.60}' failed", sql));
  }
  void run() {
    while (step()) {
    }
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::optional<double> optional_real(int col) const {
    return is_null(col) ? std::nullopt : std::optional<double>(real(col));
  }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail(db_, path_, "cannot bind a value");
  }
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back when left by an exception.
class Transaction {
 public:
  Transaction(Statement& begin, Statement& commit, Statement& rollback) : commit_(commit), rollback_(rollback) {
    begin.run();
  }
  ~Transaction() {
    if (!done_) {
      try {
        rollback_.run();
      } catch (const StoreError&) {
        // The transaction is gone either way; the error that brought us here is reported.
      }
    }
  }
  void commit() {
    commit_.run();
    done_ = true;
  }

 private:
  Statement& commit_;
  Statement& rollback_;
  bool done_ = false;
};

}  // namespace kforge::sql
