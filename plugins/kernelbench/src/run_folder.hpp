// KernelBench's files as they are: the problems of a checkout (KernelBench/level<L>/<P>_<Name>.py)
// and the kernels of a run folder (runs/<run>/level_<L>_problem_<P>_sample_<S>_kernel.py).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kforge::kernelbench {

// One problem of a KernelBench checkout.
struct Problem {
  int level = 0;
  int id = 0;           // the number the file name starts with
  std::string name;     // the file name without .py, e.g. 19_ReLU
  std::string path;     // absolute
  std::string task_id;  // level<L>/<name>: unique across levels
};

// Bad parameters or a checkout that is not one; the message says which file or value.
class KernelBenchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Problem ids as the user writes them: "19", "1-10", "1-3, 7" (sorted, once each; empty items
// are nothing, so an empty pipeline variable selects nothing); throws KernelBenchError on
// anything else.
std::vector<int> parse_problem_ids(const std::vector<std::string>& items);

// The problems of `levels` in the checkout at `kernelbench_dir` (the folder holding level1/,
// level2/, ...), in level then id order; only `ids` when it is not empty. An id asked for that
// has no file, a level folder that is missing, two files with one id: KernelBenchError.
std::vector<Problem> list_problems(const std::string& kernelbench_dir, const std::vector<int>& levels,
                                   const std::vector<int>& ids);

// The file KernelBench's generate_samples.py writes for (level, problem, sample) in `run_dir`.
std::string kernel_file(const std::string& run_dir, int level, int problem, int sample);

// A kernel file name parsed back; nullopt for any other name.
struct KernelFileName {
  int level = 0;
  int problem = 0;
  int sample = 0;
};
std::optional<KernelFileName> parse_kernel_file_name(const std::string& file_name);

// Kernel files in `run_dir` that belong to no listed problem (a problem id the checkout does
// not have, another level): what the run folder holds that this run will not evaluate.
std::vector<std::string> unmatched_kernel_files(const std::string& run_dir, const std::vector<Problem>& problems);

}  // namespace kforge::kernelbench
