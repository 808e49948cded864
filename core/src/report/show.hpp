// `kforge show OUT TASK [SAMPLE]`: what the HTML report's candidate page shows, as text
// for a terminal: every candidate of a task (or one sample) with its code per round, the
// diff of each fix round, each stage's verdict, message, metrics and log tail, the
// correctness statistics and timings, the model and the cost. docs/reports.md shows it.
#pragma once

#include "api.hpp"

#include <optional>
#include <stdexcept>
#include <string>

namespace kforge {

// The task or sample asked for is not in the directory's latest series of runs; the
// message names what is there. A usage error (exit 2), unlike a store that cannot be read.
class KFORGE_API ShowError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads `directory`'s kforge.db read-only. Throws ShowError for an unknown task or sample,
// StoreError when the store cannot be read.
KFORGE_API std::string render_show(const std::string& directory, const std::string& task_id,
                                   std::optional<int> sample);

// Text safe to print on a terminal: control characters other than newline and tab are
// shown in caret notation (ESC as ^[), so code and logs cannot move the cursor, recolour
// or retitle the terminal.
std::string terminal_safe(const std::string& text);

}  // namespace kforge
