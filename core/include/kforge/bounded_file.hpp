// Reading a file that a user names (a pipeline, a prompt template, a task, a cassette, a
// rules file) without trusting what is there: it is opened without blocking (a FIFO with
// no writer would wait forever), refused unless it is a regular file (a device never ends,
// a directory holds no text), and read up to a limit only (a file may grow while it is
// read, or be a sparse file of 10 GB). The pipeline loader and the bundled plugins read
// every file a pipeline names through it; plugins may too (header-only, no ABI). Text a
// parser reads as UTF-8 is checked to be UTF-8 (invalid_utf8_at), so the error says where.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace kforge {

// "1 MiB", "16 MiB", "512 KiB", "100 bytes": a limit as users read it.
inline std::string byte_size_text(uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

// What a path is when it is not a regular file, for the message that refuses it.
inline const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The text of the regular file at `path`, at most `max_bytes` of it; nullopt with `why`
// set when it cannot be (a missing file, a directory, a FIFO, a device, a file over the
// limit), in words that follow the file's name: "'x.md': it is a directory; ...".
inline std::optional<std::string> read_bounded_file(const std::string& path, uint64_t max_bytes, std::string& why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  if (!S_ISREG(info.st_mode)) {
    why = std::string("it is ") + file_type_name(info.st_mode) + ", not a regular file";
    return std::nullopt;
  }
  auto too_large = [&](uint64_t size, bool exact) {
    why = "it holds " + std::string(exact ? "" : "more than ") + std::to_string(size) + " bytes; at most " +
          byte_size_text(max_bytes) + " are read from it";
  };
  if (static_cast<uint64_t>(info.st_size) > max_bytes) {
    too_large(static_cast<uint64_t>(info.st_size), true);
    return std::nullopt;
  }
  // One byte more than the limit is asked for: a file that grew past it is refused too.
  std::string text(static_cast<size_t>(info.st_size) + 1, '\0');
  size_t used = 0;
  for (;;) {
    if (used == text.size()) {
      if (used > max_bytes) {
        too_large(max_bytes, false);
        return std::nullopt;
      }
      text.resize(std::min<uint64_t>(max_bytes + 1, text.size() * 2 + 4096));
    }
    const ssize_t n = ::read(fd, text.data() + used, text.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = std::strerror(errno);
      return std::nullopt;
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  if (used > max_bytes) {
    too_large(max_bytes, false);
    return std::nullopt;
  }
  text.resize(used);
  return text;
}

// The offset of the first byte of `text` that is not part of well-formed UTF-8 (overlong
// forms, surrogates and code points past U+10FFFF included), or nullopt when all is.
inline std::optional<size_t> invalid_utf8_at(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const auto byte = [&](size_t at) { return at < text.size() ? static_cast<unsigned char>(text[at]) : 0u; };
    const unsigned lead = byte(i);
    size_t length = 0;
    unsigned low = 0x80, high = 0xBF;  // the range of the second byte
    if (lead < 0x80) {
      length = 1;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    }
    if (length == 0) return i;
    for (size_t k = 1; k < length; ++k) {
      const unsigned next = byte(i + k);
      if (k == 1 ? next < low || next > high : next < 0x80 || next > 0xBF) return i;
    }
    i += length;
  }
  return std::nullopt;
}

}  // namespace kforge
