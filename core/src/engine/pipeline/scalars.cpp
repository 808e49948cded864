#include "engine/pipeline/scalars.hpp"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace kforge::loader {

// YAML 1.2 core schema decimal integer: [-+]?[0-9]+
bool is_integer_literal(std::string_view s) {
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// YAML 1.2 core schema decimal number: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool is_number_literal(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    size_t n = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++n;
    return n;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t mantissa = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

// Parses an integer literal; nullopt with `out_of_range` set when it does not fit.
std::optional<int64_t> parse_int64(std::string_view s, bool& out_of_range) {
  out_of_range = false;
  if (!is_integer_literal(s)) return std::nullopt;
  if (s[0] == '+') s.remove_prefix(1);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range) out_of_range = true;
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<double> parse_finite_double(const std::string& s) {
  if (!is_number_literal(s)) return std::nullopt;
  errno = 0;
  const double value = std::strtod(s.c_str(), nullptr);
  if (errno == ERANGE || !std::isfinite(value)) return std::nullopt;
  return value;
}

// The JSON value a plain (unquoted) YAML scalar stands for under the YAML 1.2 core schema.
Json plain_scalar_json(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  bool out_of_range = false;
  if (auto i = parse_int64(s, out_of_range)) return *i;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    int64_t value = 0;
    auto [end, ec] =
        std::from_chars(s.data() + 2, s.data() + s.size(), value, s[1] == 'x' ? 16 : 8);
    if (ec == std::errc() && end == s.data() + s.size()) return value;
  }
  if (auto d = parse_finite_double(s)) return *d;
  return s;
}

std::string json_text(const Json& j) {
  // Replace rather than throw on invalid UTF-8 (environment variables can hold any bytes).
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// A scalar written in quotes (or tagged !!str) is a string whatever it looks like.
bool is_quoted(const YAML::Node& scalar) {
  return scalar.Tag() == "!" || scalar.Tag() == "tag:yaml.org,2002:str";
}

const char* shape_of(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "a single value";
    default:
      return "nothing";
  }
}

std::optional<double> parse_duration(const std::string& text) {
  static const std::pair<const char*, double> kUnits[] = {
      {"ms", 0.001}, {"s", 1}, {"m", 60}, {"h", 3600}};
  std::string number = text;
  double scale = 1;
  for (const auto& [unit, factor] : kUnits) {
    if (text.size() > std::strlen(unit) && text.ends_with(unit) &&
        std::isdigit(static_cast<unsigned char>(text[text.size() - std::strlen(unit) - 1]))) {
      number = text.substr(0, text.size() - std::strlen(unit));
      scale = factor;
      break;
    }
  }
  if (number.empty() || number[0] == '+' || number[0] == '-') return std::nullopt;
  auto value = parse_finite_double(number);
  if (!value || *value * scale > kMaxDurationSeconds) return std::nullopt;
  return *value * scale;
}

}  // namespace kforge::loader
