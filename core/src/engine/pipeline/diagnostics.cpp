#include "engine/pipeline/diagnostics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

namespace kforge {

std::string Diagnostic::format() const {
  const char* severity = warning ? "warning" : "error";
  if (where.line <= 0) return fmt::format("{}: {}: {}", where.file, severity, message);
  std::string out = fmt::format("{}:{}:{}: {}: {}\n", where.file, where.line, where.column, severity, message);
  const std::string number = std::to_string(where.line);
  const size_t gutter = std::max<size_t>(5, number.size());
  // A long line (minified YAML, 10^5 brackets) is shown as a window around the column.
  constexpr size_t kShown = 120;
  std::string shown = snippet;
  int column = where.column;
  if (snippet.size() > kShown) {
    const size_t at = static_cast<size_t>(std::max(1, where.column)) - 1;
    const size_t start = at > kShown / 2 ? at - kShown / 2 : 0;
    shown = (start > 0 ? "..." : "") + snippet.substr(start, kShown) + (start + kShown < snippet.size() ? "..." : "");
    column = static_cast<int>(at - start) + 1 + (start > 0 ? 3 : 0);
  }
  // The caret copies the snippet's tabs so that it lines up under the same character.
  std::string indent;
  for (int i = 0; i + 1 < column; ++i) {
    indent += (static_cast<size_t>(i) < shown.size() && shown[i] == '\t') ? '\t' : ' ';
  }
  out += fmt::format("{:>{}} | {}\n", number, gutter, shown);
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
