#include "run/out_dir_lock.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "run/session.hpp"

namespace kforge {

namespace {

// What the holder wrote into the lock file: its pid, or "" when it has not yet.
std::string holder_of(int fd) {
  char text[64] = {0};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string pid = n > 0 ? std::string(text, static_cast<size_t>(n)) : "";
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid;
}

}  // namespace

OutDirLock::OutDirLock(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / kLockFileName).string();
  // Close-on-exec: a child process (a harness server) must not keep the lock past kforge.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw RunSetupError(fmt::format("cannot create the lock file '{}': {}; check that the output directory is writable",
                                    path, std::strerror(errno)));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = holder_of(fd_);
    ::close(fd_);
    fd_ = -1;
    if (error == EWOULDBLOCK) {
      throw RunSetupError(fmt::format(
          "'{}' is in use by another kforge run ({}): one run writes an output directory at a time; wait for it to "
          "end (or stop it), or pass another --out",
          dir, holder.empty() ? "a process that is starting" : "pid " + holder));
    }
    throw RunSetupError(fmt::format("cannot lock '{}': {}", path, std::strerror(error)));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  const bool recorded =
      ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size());
  // The lock holds without the pid; only a second run's message is less precise.
  if (!recorded) spdlog::warn("could not write this run's pid into '{}': {}", path, std::strerror(errno));
}

OutDirLock::~OutDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace kforge
