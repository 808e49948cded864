// Items written one after another with a separator between them ("a, b, c"), for messages.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kforge {

inline std::string joined(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

}  // namespace kforge
