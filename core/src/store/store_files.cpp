#include "store/store_files.hpp"

#include <fmt/format.h>

#include <sys/stat.h>

namespace kforge {

namespace {

bool same_time(const timespec& a, const timespec& b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

}  // namespace

StoreFiles::StoreFiles(std::string database_path)
    : database_path_(std::move(database_path)), log_path_(database_path_ + "-wal") {
  record();
}

// stat(), never open(): closing a descriptor of the database in this process would drop
// the POSIX locks SQLite holds on it.
StoreFiles::State StoreFiles::take(const std::string& path) {
  State state;
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return state;
  state.exists = true;
  state.device = info.st_dev;
  state.inode = info.st_ino;
  state.size = info.st_size;
  state.modified = info.st_mtim;
  return state;
}

void StoreFiles::record() {
  database_ = take(database_path_);
  log_ = take(log_path_);
}

std::string StoreFiles::change(const State& was, const State& now, const std::string& what) {
  if (was.exists && !now.exists) return fmt::format("{} was deleted", what);
  if (!was.exists && now.exists) return fmt::format("{} was created by another process", what);
  if (!was.exists) return "";
  if (now.device != was.device || now.inode != was.inode) return fmt::format("{} was replaced by another file", what);
  if (now.size < was.size) {
    return fmt::format("{} was truncated by another process (from {} to {} bytes)", what, was.size, now.size);
  }
  if (now.size > was.size) {
    return fmt::format("{} was extended by another process (from {} to {} bytes)", what, was.size, now.size);
  }
  if (!same_time(now.modified, was.modified)) return fmt::format("{} was written by another process", what);
  return "";
}

std::string StoreFiles::changes() const {
  std::string what = change(database_, take(database_path_), fmt::format("the run store '{}'", database_path_));
  if (what.empty()) {
    what = change(log_, take(log_path_), fmt::format("its write-ahead log '{}'", log_path_));
  }
  return what;
}

bool StoreFiles::database_unchanged() const {
  return change(database_, take(database_path_), "").empty();
}

bool StoreFiles::log_is_ours() const {
  const State now = take(log_path_);
  return log_.exists && now.exists && now.device == log_.device && now.inode == log_.inode;
}

}  // namespace kforge
