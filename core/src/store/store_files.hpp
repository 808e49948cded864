// The run store's files on disk, kforge.db and its write-ahead log kforge.db-wal, as this
// process last left them: taken after each of its own writes, compared before the next
// one and by the run's watcher in between (RunSession). Whatever else changes them (a
// process that truncates, overwrites, replaces or deletes one) is named, so the run stops
// within seconds instead of writing on into files nobody can trust.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <string>

namespace kforge {

class StoreFiles {
 public:
  explicit StoreFiles(std::string database_path);

  // Takes the files as they are now: after a write of this process's own.
  void record();
  // "" while both are as recorded; else what changed, in words ("the run store '...' was
  // truncated by another process (from 81920 to 0 bytes)").
  std::string changes() const;
  // The database file at the path is the recorded one, unchanged.
  bool database_unchanged() const;
  // The log file at the path is the recorded one (whatever it holds).
  bool log_is_ours() const;
  const std::string& log_path() const { return log_path_; }

 private:
  struct State {
    bool exists = false;
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    timespec modified{};  // an overwrite in place (of SQLite's header, say) changes it
  };
  static State take(const std::string& path);
  static std::string change(const State& was, const State& now, const std::string& what);

  std::string database_path_;
  std::string log_path_;
  State database_;
  State log_;
};

}  // namespace kforge
