// Which compile failures are the machine's: a header of the toolchain it lacks.
#include "toolchain.hpp"
#include "test_env.hpp"

#include <gtest/gtest.h>

namespace kforge::eval {
namespace {

using testing::fresh_temp_dir;

TEST(Toolchain, AMissingToolchainHeaderIsTheMachinesAndNamesThePackage) {
  const std::string empty_dir = fresh_temp_dir("no-headers");
  const std::string have_dir = fresh_temp_dir("headers");
  testing::write_file(have_dir + "/pybind11/pybind11.h", "// here\n");
  const std::string output =
      "In file included from /usr/include/torch/csrc/Exceptions.h:12,\n"
      "/usr/include/torch/csrc/Exceptions.h:12:10: fatal error: pybind11/pybind11.h: No such file or directory\n";
  const auto missing = missing_toolchain_header(output, {empty_dir});
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->header, "pybind11/pybind11.h");
  EXPECT_EQ(missing->package, "pybind11-dev");
  // Present here after all: the failure was the candidate's (its text cannot blame the machine).
  EXPECT_FALSE(missing_toolchain_header(output, {have_dir}));
  // A header no toolchain package provides is the candidate's.
  EXPECT_FALSE(missing_toolchain_header("candidate.cu(1): fatal error: my_helpers.h: No such file or directory", {empty_dir}));

  StageResult result = StageResult::fail("compile_error", "nvcc could not compile candidate.cu:\n" + output);
  const std::string no_python = "kforge-no-such-python";
  blame_missing_toolchain(result, no_python, "");  // no torch to ask: its headers count as missing
  if (missing_toolchain_header(output, toolchain_include_dirs(no_python, ""))) {
    EXPECT_EQ(result.status, KF_VERDICT_ERROR);
    EXPECT_EQ(result.error_class, "host_error");
    EXPECT_NE(result.message.find("install pybind11-dev"), std::string::npos) << result.message;
  } else {
    EXPECT_EQ(result.error_class, "compile_error");  // this machine has pybind11 where the system looks
  }
}

}  // namespace
}  // namespace kforge::eval
