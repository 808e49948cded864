// Listing KernelBench-format tasks: a directory of task files as they are (a KernelBench
// level1/ checkout), with an optional manifest next to them that adds metadata
// (examples/kernelbench-mini/manifest.yaml shows the format).
#pragma once

#include <kforge/abi.h>
#include <kforge/eval/vocabulary.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kforge::kernelbench {

// A task file, a manifest or a candidate file holds at most this much: a task is a
// program of a few KB, and a 10 GB (sparse) file must not be read into memory.
inline constexpr uint64_t kMaxTaskFileBytes = 16u << 20;

struct TaskListOptions {
  std::string dir;                            // absolute, or relative to the working directory
  std::string manifest = "manifest.yaml";     // relative to dir; the default may be absent
  std::string profile = "small";              // small | full: which manifest sizes apply
  double size_scale = 1.0;                    // for tasks without sizes in that profile
  double fit_memory_mb = 0;                   // for tasks without sizes in that profile; 0: off
  std::vector<std::string> include;           // ids or glob patterns; empty: all
  std::string with_candidates_in;             // keep tasks with a candidate file there (candidates.hpp); empty: all
  int64_t limit = 0;                          // 0: all
  std::string format = eval::kFormatKernelBenchTorch;  // for tasks the manifest gives no format; kernelbenchx also
                                              // lists the category folders' files
};

struct TaskEntry {
  std::string id;
  std::string name;
  std::string path;  // absolute
  int level = 1;
  std::string category;
  std::string complexity;  // C1..C4
  double complexity_score = 0;
  std::string format;
  nlohmann::json sizes = nlohmann::json::object();  // the chosen profile's overrides
  double size_scale = 1.0;
  double fit_memory_mb = 0;  // 0 where the profile gives sizes: they are final
};

// Problems with the directory or the manifest; messages carry file:line where there is one.
class TaskListError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The tasks in order: the manifest's order when there is a manifest (it then lists the
// tasks), else the *.py files of dir by natural order of their names (2_x before 10_x).
std::vector<TaskEntry> list_tasks(const TaskListOptions& options);

// Natural order: digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b);

}  // namespace kforge::kernelbench
