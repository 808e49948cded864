#include "engine/pipeline/loader.hpp"

#include <algorithm>
#include <cctype>

#include "util/edit_distance.hpp"

namespace kforge::loader {

std::optional<std::string> closest(const std::string& name,
                                   const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = std::max<size_t>(2, name.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    const size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

std::string comma_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string alternatives(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += "'" + names[i] + "'";
  }
  return out;
}

std::string unknown_kind(const std::string& what, const std::string& name, const std::vector<std::string>& near,
                         const std::vector<std::string>& known) {
  std::string text = "unknown " + what + " '" + name + "'";
  if (!near.empty()) {
    text += "; did you mean " + alternatives(near) + "?";
  } else if (known.empty()) {
    text += "; none is registered";
  } else {
    text += " (known: " + comma_list(known) + ")";
  }
  // The kind may be right and its plugin not loaded: say where plugins are looked for.
  return text + ". A kind of a plugin that is not loaded: put the plugin's directory on KFORGE_PLUGIN_PATH or pass "
                "--plugin-dir DIR (`kforge plugins list` shows the kinds loaded and their files)";
}

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_variable_name(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool is_stage_id(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

}  // namespace kforge::loader
