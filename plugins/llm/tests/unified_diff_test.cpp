#include "unified_diff.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace kforge::llm {
namespace {

TEST(UnifiedDiff, EqualTextsGiveNothing) { EXPECT_EQ(unified_diff("a\nb\n", "a\nb\n", "a", "b"), ""); }

TEST(UnifiedDiff, OneChangedLineWithContext) {
  std::string before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  std::string after = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
  EXPECT_EQ(unified_diff(before, after, "a/x", "b/x"),
            "--- a/x\n+++ b/x\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
}

TEST(UnifiedDiff, InsertionAtTheStartAndEmptyFiles) {
  EXPECT_EQ(unified_diff("b\n", "a\nb\n", "x", "y"), "--- x\n+++ y\n@@ -1 +1,2 @@\n+a\n b\n");
  EXPECT_EQ(unified_diff("", "a\n", "x", "y"), "--- x\n+++ y\n@@ -0,0 +1 @@\n+a\n");
  EXPECT_EQ(unified_diff("a\n", "", "x", "y"), "--- x\n+++ y\n@@ -1 +0,0 @@\n-a\n");
}

TEST(UnifiedDiff, MarksAMissingFinalNewline) {
  EXPECT_EQ(unified_diff("a\nb", "a\nb\n", "x", "y"),
            "--- x\n+++ y\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n");
}

TEST(UnifiedDiff, SeparatesDistantChangesIntoHunks) {
  std::string before, after;
  for (int i = 1; i <= 30; ++i) {
    before += std::to_string(i) + "\n";
    after += (i == 3 || i == 25 ? "changed " : "") + std::to_string(i) + "\n";
  }
  std::string diff = unified_diff(before, after, "x", "y");
  EXPECT_NE(diff.find("@@ -1,6 +1,6 @@"), std::string::npos) << diff;
  EXPECT_NE(diff.find("@@ -22,7 +22,7 @@"), std::string::npos) << diff;
}

// The diffs must be real ones: GNU patch applies them and gets the new text back.
TEST(UnifiedDiff, PatchAppliesItToTheNewText) {
  if (std::system("patch --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "patch is not installed";
  std::mt19937 rng(7);
  struct TempDir {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("kforge-llm-diff-" + std::to_string(::getpid()));
    TempDir() { std::filesystem::create_directories(path); }
    ~TempDir() { std::filesystem::remove_all(path); }
  } temp;
  const std::filesystem::path& dir = temp.path;
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<std::string> lines;
    for (int i = 0; i < 40; ++i) lines.push_back("line " + std::to_string(rng() % 15) + "\n");
    std::string before;
    for (const auto& l : lines) before += l;
    for (int edits = 0; edits < 6; ++edits) {
      size_t at = rng() % (lines.size() + 1);
      switch (rng() % 3) {
        case 0: lines.insert(lines.begin() + at, "new " + std::to_string(rng() % 100) + "\n"); break;
        case 1: if (at < lines.size()) lines.erase(lines.begin() + at); break;
        default: if (at < lines.size()) lines[at] = "changed\n"; break;
      }
    }
    std::string after;
    for (const auto& l : lines) after += l;
    std::string diff = unified_diff(before, after, "a/f.txt", "b/f.txt");
    std::ofstream(dir / "f.txt") << before;
    std::ofstream(dir / "f.diff") << diff;
    std::string command = "cd " + dir.string() + " && patch -s -p1 < f.diff";
    ASSERT_EQ(std::system(command.c_str()), 0) << diff;
    std::stringstream patched;
    patched << std::ifstream(dir / "f.txt").rdbuf();
    ASSERT_EQ(patched.str(), after) << "trial " << trial << "\n" << diff;
  }
}

}  // namespace
}  // namespace kforge::llm
