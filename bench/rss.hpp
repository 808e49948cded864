// Resident memory of this process, for benchmarks that show memory stays flat.
#pragma once

#include <fstream>
#include <string>

namespace kforge::bench {

// VmRSS from /proc/self/status, in KiB (0 where that file does not exist).
inline long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      long kib = 0;
      status >> kib;
      return kib;
    }
  }
  return 0;
}

}  // namespace kforge::bench
