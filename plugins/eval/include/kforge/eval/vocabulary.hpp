// The words the eval plugin shares with the plugins that feed it (task sources, candidate
// stages, LLM stages, report sections) and with its harness (kforge_harness/protocol,
// kforge_harness/devices): each is defined here once on the C++ side, and
// plugins/eval/tests/vocabulary_test.cpp holds them to the harness's own definitions.
#pragma once

#include <kforge/abi.h>

#include <string>

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

// candidate.language values (KF_KEY_CANDIDATE_LANGUAGE): what the harness checks, builds
// and runs.
inline constexpr const char* kLanguageTriton = "triton";
inline constexpr const char* kLanguageCpp = "cpp";
inline constexpr const char* kLanguageCuda = "cuda";
inline constexpr const char* kLanguagePython = "python";
inline constexpr const char* kLanguages[] = {kLanguageTriton, kLanguageCpp, kLanguageCuda, kLanguagePython};

// Devices are TYPE or TYPE:N (cpu, cuda:1, npu:0; a bare type is index 0).
inline constexpr const char* kDeviceCpu = "cpu";
inline constexpr const char* kDeviceCuda = "cuda";
inline constexpr const char* kDeviceNpu = "npu";
inline constexpr const char* kDeviceTypes[] = {kDeviceCpu, kDeviceCuda, kDeviceNpu};
// The grammar as a regular expression (ECMAScript and Python alike): the type, then the index.
inline std::string device_pattern() {
  std::string types;
  for (const char* type : kDeviceTypes) types += (types.empty() ? "" : "|") + std::string(type);
  return "^(" + types + R"()(?::(\d+))?$)";
}

// The error classes the harness gives (PROTOCOL.md): every one a well-known class of the ABI.
inline constexpr const char* kHarnessErrorClasses[] = {
    KF_ERROR_CHECKER_REJECTED, KF_ERROR_SYNTAX,           KF_ERROR_COMPILE,        KF_ERROR_INIT,
    KF_ERROR_RUNTIME,          KF_ERROR_DEVICE,           KF_ERROR_CRASH,          KF_ERROR_TIMEOUT,
    KF_ERROR_OUT_OF_MEMORY,    KF_ERROR_SHAPE_MISMATCH,   KF_ERROR_DTYPE_MISMATCH, KF_ERROR_NUMERICAL_MISMATCH,
    KF_ERROR_CHEAT_DETECTED,   KF_ERROR_HARNESS,          KF_ERROR_TASK,           KF_ERROR_HOST};

// Job keys a task source or a candidate stage sets for eval's stages, beyond the ABI's.
inline constexpr const char* kTaskSizes = "task.sizes";  // JSON object: the size constants to run at
inline constexpr const char* kTaskSizeScale = "task.size_scale";  // number: factor for sizes not given
inline constexpr const char* kTaskComplexityScore = "task.complexity_score";  // number behind task.complexity
// Number: the memory budget (MB) the harness fits the task's sizes into; 0 or absent: no fitting.
inline constexpr const char* kTaskFitMemoryMb = "task.fit_memory_mb";
inline constexpr const char* kCandidateFile = "candidate.file";  // the file the candidate's code came from
inline constexpr const char* kCandidateTag = "candidate.tag";    // what the file name says of it

}  // namespace kforge::eval
