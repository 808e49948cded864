// Configuration problems with the place they were written: `file:line:col: error: ...`.
#pragma once

#include "api.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace kforge {

// Where something was written: 1-based line and column, as editors count.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
};

// One configuration problem, printed as `file:line:col: error: message` followed by the
// offending line and a caret; a warning (`warning:`) is one that does not stop the pipeline.
struct Diagnostic {
  SourceLocation where;
  std::string message;
  std::string snippet;  // the offending source line, without its newline
  bool warning = false;
  std::string format() const;

  // A diagnostic at `where`, its snippet read from the file: for checks after loading
  // (creating the stages), when the loader's copy of the lines is gone.
  static Diagnostic at(SourceLocation where, std::string message);
};

// Thrown when a pipeline does not validate; carries every problem found, not just the
// first, so that one edit-run cycle fixes them all.
class KFORGE_API ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<Diagnostic> diagnostics);
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

}  // namespace kforge
