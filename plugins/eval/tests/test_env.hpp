// Where the tests find the repository, the bundled examples and the harness, and the
// interpreter they run it with.
#pragma once

#include "eval_job.hpp"
#include "harness_pool.hpp"
#include "tasks.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace kforge::eval {
// The bundled suite is listed by the plugin that reads it (plugins/kernelbench).
using kernelbench::TaskEntry;
}  // namespace kforge::eval

namespace kforge::eval::testing {

std::string repo_dir();
std::string examples_dir();  // examples/kernelbench-mini
std::string harness_dir();   // plugins/eval/harness
std::string test_data_dir(); // plugins/eval/tests/data

// $KFORGE_TEST_PYTHON, else /usr/bin/python3 (here the interpreter with torch; the
// python3 first on PATH may lack it, which the detection tests rely on).
const std::string& test_python();
bool test_python_has_torch();

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& text);
// A fresh empty directory under the system's temporary directory.
std::string fresh_temp_dir(const std::string& name);

// Harness settings for tests: the test interpreter, the source tree's harness, cpu, fork.
HarnessSettings test_harness_settings(int max_children = 2);

// The bundled task `id` (small profile) as a job carrying `code` (none: reference as
// its own candidate).
EvalJob bundled_task_job(const std::string& id, std::optional<std::string> code = std::nullopt,
                         const std::string& language = "cpp");
const std::vector<TaskEntry>& bundled_tasks();

// Runs `script` under the test interpreter, with `input` as JSON on its stdin; its stdout
// and stderr.
std::string run_python(const std::string& script, const nlohmann::json& input);

}  // namespace kforge::eval::testing

#define KFORGE_REQUIRE_TORCH()                                                                   \
  do {                                                                                           \
    if (!::kforge::eval::testing::test_python_has_torch()) {                                     \
      GTEST_SKIP() << ::kforge::eval::testing::test_python() << " cannot import torch";          \
    }                                                                                            \
  } while (0)
