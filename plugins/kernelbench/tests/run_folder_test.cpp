// KernelBench's file layout: problems of a checkout, kernel files of a run folder.
#include "run_folder.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace kb = kforge::kernelbench;
namespace fs = std::filesystem;

namespace {

const std::string kData = KERNELBENCH_TEST_DATA;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("kb_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string touch(const std::string& relative) const {
    const fs::path file = path_ / relative;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << "# test\n";
    return file.string();
  }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
  static inline int counter_ = 0;
};

std::vector<int> ids_of(const std::vector<kb::Problem>& problems) {
  std::vector<int> ids;
  for (const auto& p : problems) ids.push_back(p.id);
  return ids;
}

}  // namespace

TEST(ProblemIds, SinglesRangesAndCommaListsInOrderOnce) {
  EXPECT_EQ(kb::parse_problem_ids({"19"}), (std::vector<int>{19}));
  EXPECT_EQ(kb::parse_problem_ids({"3-5", "1"}), (std::vector<int>{1, 3, 4, 5}));
  EXPECT_EQ(kb::parse_problem_ids({"1-3, 7", "2"}), (std::vector<int>{1, 2, 3, 7}));
  EXPECT_TRUE(kb::parse_problem_ids({""}).empty());  // an empty pipeline variable
  EXPECT_TRUE(kb::parse_problem_ids({}).empty());
}

TEST(ProblemIds, AnythingElseIsRefusedNamingTheItem) {
  for (const std::string bad : {"x", "-3", "5-2", "1.5", "3-", "1-2-3", "99999999999"}) {
    try {
      kb::parse_problem_ids({bad});
      ADD_FAILURE() << bad << " was accepted";
    } catch (const kb::KernelBenchError& e) {
      EXPECT_NE(std::string(e.what()).find(bad.substr(0, 3)), std::string::npos) << e.what();
    }
  }
}

TEST(ListProblems, TheLevelsFilesInIdOrderWithUniqueTaskIds) {
  TempDir kb;
  kb.touch("level1/10_Ten.py");
  kb.touch("level1/2_Two.py");
  kb.touch("level1/README.md");
  kb.touch("level1/notes_1.py");  // not <P>_<Name>.py
  kb.touch("level2/2_Fused.py");
  const auto problems = kb::list_problems(kb.str(), {1, 2}, {});
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].task_id, "level1/2_Two");
  EXPECT_EQ(problems[1].task_id, "level1/10_Ten");
  EXPECT_EQ(problems[1].name, "10_Ten");
  EXPECT_EQ(problems[2].task_id, "level2/2_Fused");
  EXPECT_EQ(problems[2].level, 2);
  EXPECT_TRUE(fs::path(problems[0].path).is_absolute());
}

TEST(ListProblems, SelectedIdsOnlyAndAMissingOneIsAnError) {
  TempDir kb;
  kb.touch("level1/1_A.py");
  kb.touch("level1/2_B.py");
  kb.touch("level1/3_C.py");
  EXPECT_EQ(ids_of(kb::list_problems(kb.str(), {1}, {1, 3})), (std::vector<int>{1, 3}));
  EXPECT_THROW(kb::list_problems(kb.str(), {1}, {4}), kb::KernelBenchError);
}

TEST(ListProblems, MissingCheckoutOrLevelAndDuplicateIdsAreErrors) {
  TempDir kb;
  kb.touch("level1/1_A.py");
  EXPECT_THROW(kb::list_problems(kb.str() + "/nope", {1}, {}), kb::KernelBenchError);
  EXPECT_THROW(kb::list_problems(kb.str(), {3}, {}), kb::KernelBenchError);
  kb.touch("level1/01_A_again.py");
  try {
    kb::list_problems(kb.str(), {1}, {});
    ADD_FAILURE() << "two files for problem 1 were accepted";
  } catch (const kb::KernelBenchError& e) {
    EXPECT_NE(std::string(e.what()).find("two files for problem 1"), std::string::npos) << e.what();
  }
}

TEST(KernelFiles, NamedAsKernelBenchWritesThemAndParsedBack) {
  EXPECT_EQ(fs::path(kb::kernel_file("/runs/r", 2, 17, 3)).filename(), "level_2_problem_17_sample_3_kernel.py");
  const auto parsed = kb::parse_kernel_file_name("level_2_problem_17_sample_3_kernel.py");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->level, 2);
  EXPECT_EQ(parsed->problem, 17);
  EXPECT_EQ(parsed->sample, 3);
  for (const char* other : {"level_2_problem_17_sample_3_kernel.py.bak", "level_2_problem_x_sample_3_kernel.py",
                            "level_2_problem_17_kernel.py", "eval_results.json"}) {
    EXPECT_FALSE(kb::parse_kernel_file_name(other)) << other;
  }
}

TEST(KernelFiles, FilesOfProblemsOutsideTheRunAreReported) {
  const auto problems = kb::list_problems(kData + "/KernelBench", {1}, {});
  EXPECT_EQ(ids_of(problems), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(kb::unmatched_kernel_files(kData + "/runs/mini", problems),
            (std::vector<std::string>{"level_1_problem_9_sample_0_kernel.py"}));
  const auto only_first = kb::list_problems(kData + "/KernelBench", {1}, {1});
  EXPECT_EQ(kb::unmatched_kernel_files(kData + "/runs/mini", only_first).size(), 5u);
}
