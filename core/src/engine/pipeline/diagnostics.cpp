#include "engine/pipeline/diagnostics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

namespace kforge {

std::string Diagnostic::format() const {
  if (where.line <= 0) return fmt::format("{}: error: {}", where.file, message);
  std::string out =
      fmt::format("{}:{}:{}: error: {}\n", where.file, where.line, where.column, message);
  const std::string number = std::to_string(where.line);
  const size_t gutter = std::max<size_t>(5, number.size());
  // The caret copies the snippet's tabs so that it lines up under the same character.
  std::string indent;
  for (int i = 0; i + 1 < where.column; ++i) {
    indent += (static_cast<size_t>(i) < snippet.size() && snippet[i] == '\t') ? '\t' : ' ';
  }
  out += fmt::format("{:>{}} | {}\n", number, gutter, snippet);
  out += fmt::format("{:>{}} | {}^", "", gutter, indent);
  return out;
}

Diagnostic Diagnostic::at(SourceLocation where, std::string message) {
  Diagnostic d;
  d.where = std::move(where);
  d.message = std::move(message);
  std::ifstream in(d.where.file);
  std::string line;
  for (int n = 1; n <= d.where.line && std::getline(in, line); ++n) {
    if (n == d.where.line) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      d.snippet = line;
    }
  }
  return d;
}

namespace {

std::string format_all(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) {
    if (!out.empty()) out += '\n';
    out += d.format();
  }
  return out;
}

}  // namespace

ConfigError::ConfigError(std::vector<Diagnostic> diagnostics)
    : std::runtime_error(format_all(diagnostics)), diagnostics_(std::move(diagnostics)) {}

}  // namespace kforge
