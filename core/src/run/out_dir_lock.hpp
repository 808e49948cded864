// One run per output directory: an OS lock (flock) on DIR/kforge.lock, held for the run's
// life. The kernel drops it when the process ends, however it ends, so a lock nobody holds
// means no run is alive there, whatever the store's runs table says.
#pragma once

#include <string>

namespace kforge {

inline constexpr const char* kLockFileName = "kforge.lock";

class OutDirLock {
 public:
  // Takes the lock (the directory must exist) and writes this process's id into the file;
  // throws RunSetupError naming the holder's pid when another process holds it.
  explicit OutDirLock(const std::string& dir);
  ~OutDirLock();
  OutDirLock(const OutDirLock&) = delete;
  OutDirLock& operator=(const OutDirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace kforge
