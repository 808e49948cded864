// Items written one after another with a separator between them ("a, b, c"), for the
// plugin's messages. One definition for all its sources: CI's unity build compiles them in
// batches, where two files' own overloads once resolved to each other's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kforge::eval {

inline std::string joined(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

}  // namespace kforge::eval
