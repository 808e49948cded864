// The stage on the real kforge host and parameter loader, from the installed kforge's test
// kit (kforge/testing.hpp): what a pipeline would do with it, without a pipeline.
#include <gtest/gtest.h>
#include <kforge/testing.hpp>

namespace {

using kforge::testing::StageHarness;
using kforge::testing::TestJob;

class Greet : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { kforge::testing::load_plugin(HELLO_PLUGIN_FILE); }
};

TEST_F(Greet, GreetsTheTaskAndCountsTheLetters) {
  StageHarness greet("hello.greet", "{greeting: bonjour}");
  ASSERT_TRUE(greet.created()) << greet.create_error();
  TestJob job;
  job.strings[KF_KEY_TASK_ID] = "relu";
  EXPECT_EQ(greet.process(job), "");
  EXPECT_TRUE(job.verdict.given);
  EXPECT_EQ(job.verdict.status, KF_VERDICT_PASS);
  EXPECT_EQ(job.strings["hello.text"], "bonjour, relu");
  EXPECT_EQ(job.metric("letters"), 7);
}

TEST_F(Greet, TheDefaultGreetsNobodyWithoutATask) {
  StageHarness greet("hello.greet");
  TestJob job;
  EXPECT_EQ(greet.process(job), "");
  EXPECT_EQ(job.strings["hello.text"], "hello, nobody");
}

TEST_F(Greet, AMisspelledParameterIsRefusedAsInAPipeline) {
  StageHarness greet("hello.greet", "{greting: hi}");
  EXPECT_FALSE(greet.created());
  EXPECT_NE(greet.create_error().find("unknown parameter 'greting'"), std::string::npos) << greet.create_error();
  EXPECT_NE(greet.create_error().find("did you mean 'greeting'?"), std::string::npos) << greet.create_error();
}

}  // namespace
