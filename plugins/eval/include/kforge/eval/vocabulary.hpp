// The words the eval plugin shares with the plugins that feed it (task sources, candidate
// stages, report sections) and with its harness (kforge_harness/protocol): each is defined
// here once on the C++ side, and plugins/eval/tests/vocabulary_test.cpp holds them to the
// harness's definitions.
#pragma once

namespace kforge::eval {

// task.format values (KF_KEY_TASK_FORMAT): how the harness reads a task's file.
inline constexpr const char* kFormatKernelBenchTorch = "kernelbench-torch";
inline constexpr const char* kFormatKernelBenchNumpy = "kernelbench-numpy";
inline constexpr const char* kFormatKernelBenchMindspore = "kernelbench-mindspore";
// KernelBenchX / TritonBench task files: a reference function, a separator line of '#',
// test code filling test_results (kforge_harness/tasks/kbx.py runs them); a directory of
// them holds one folder per category.
inline constexpr const char* kFormatKernelBenchX = "kernelbenchx";
inline constexpr const char* kTaskFormats[] = {kFormatKernelBenchTorch, kFormatKernelBenchNumpy,
                                               kFormatKernelBenchMindspore, kFormatKernelBenchX};

}  // namespace kforge::eval
