#include "candidates.hpp"
#include "test_files.hpp"

#include <gtest/gtest.h>

namespace kforge::kernelbench {
namespace {

using testing::fresh_temp_dir;
using testing::write_file;

TEST(CandidateFiles, OrderIsPrimaryThenNumberedThenTagged) {
  const std::string dir = fresh_temp_dir("candidates");
  for (const char* name : {"001_relu.py", "001_relu.1.py", "001_relu.2.py", "001_relu.4.py", "b__001_relu.py",
                           "a__001_relu.py", "002_gelu.py"}) {
    write_file(dir + "/" + name, name);
  }
  const auto files = candidate_files(dir, "/tasks/001_relu.py", "001_relu");
  ASSERT_EQ(files.size(), 5u);  // 001_relu.4.py follows a gap: not a sample
  EXPECT_EQ(files[0].path, dir + "/001_relu.py");
  EXPECT_EQ(files[1].path, dir + "/001_relu.1.py");
  EXPECT_EQ(files[2].path, dir + "/001_relu.2.py");
  EXPECT_EQ(files[3].tag, "a");
  EXPECT_EQ(files[4].tag, "b");
}

TEST(CandidateFiles, FallsBackToTheTaskId) {
  const std::string dir = fresh_temp_dir("by-id");
  write_file(dir + "/relu.py", "x");
  const auto files = candidate_files(dir, "/tasks/19_ReLU.py", "relu");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].path, dir + "/relu.py");
}

TEST(CandidateForSample, MissingSampleExplainsWhatWasLookedFor) {
  const std::string dir = fresh_temp_dir("missing");
  write_file(dir + "/001_relu.py", "x");
  std::string why;
  EXPECT_TRUE(candidate_for_sample(dir, "/t/001_relu.py", "001_relu", 0, why).has_value());
  EXPECT_FALSE(candidate_for_sample(dir, "/t/001_relu.py", "001_relu", 1, why).has_value());
  EXPECT_NE(why.find("sample 1"), std::string::npos) << why;
  EXPECT_NE(why.find("001_relu.N.py"), std::string::npos) << why;
  EXPECT_FALSE(candidate_for_sample(dir + "/nope", "/t/001_relu.py", "001_relu", 0, why).has_value());
  EXPECT_NE(why.find("does not exist"), std::string::npos) << why;
}

}  // namespace
}  // namespace kforge::kernelbench
