// results.jsonl under write failures: a line is written whole or not at all (agreement_test
// holds the file to the store).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "run/results.hpp"

namespace {

namespace fs = std::filesystem;

kforge::JobOutcome outcome(const std::string& task, int sample, const std::string& message = "") {
  kforge::JobOutcome o;
  o.task_id = task;
  o.sample = sample;
  o.message = message;
  return o;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("kforge-results-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// In a child limited to `limit` bytes per file (as a disk that fills up mid-line): writes
// lines until one fails; exits with the number of whole lines written, 100 + that on a
// failure that was not reported.
int write_until_full(const fs::path& path, rlim_t limit) {
  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    const rlimit rl{limit, limit};
    setrlimit(RLIMIT_FSIZE, &rl);
    kforge::ResultsWriter writer(path.string());
    for (int i = 0; i < 50; ++i) {
      if (!writer.append(outcome("task-" + std::to_string(i), 0, std::string(100, 'x')))) {
        const bool said = writer.failure().find("File too large") != std::string::npos;
        const bool stays_failed = !writer.append(outcome("later", 0));
        _exit(said && stays_failed ? static_cast<int>(writer.lines_written()) : 100 + i);
      }
    }
    _exit(99);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ResultsWriter, AWriteCutShortByAFullDiskLeavesOnlyWholeLines) {
  const fs::path dir = scratch("full");
  const fs::path path = dir / "results.jsonl";
  const std::string one_line = kforge::result_line(outcome("task-0", 0, std::string(100, 'x'))) + "\n";
  // The limit falls inside the fourth line: the kernel writes part of it, then refuses.
  const rlim_t limit = 3 * one_line.size() + one_line.size() / 2;
  const int whole = write_until_full(path, limit);
  ASSERT_EQ(whole, 3) << "whole lines written before the failure (>= 100: the failure went unreported)";
  const std::string text = slurp(path);
  EXPECT_EQ(text.size(), 3 * one_line.size()) << "the torn fourth line was cut off";
  EXPECT_EQ(text.back(), '\n');
  fs::remove_all(dir);
}

// results.jsonl as the writer left it, or what another process did to it: appended to,
// truncated, edited in place, replaced or deleted. The writer appends (O_APPEND), so the
// other writer's line is not overwritten, and writes nothing once it has found a change.
TEST(ResultsWriter, AFileChangedByAnotherProcessIsNamedAndNotWrittenOn) {
  const fs::path dir = scratch("changed");
  const fs::path path = dir / "results.jsonl";
  kforge::ResultsWriter writer(path.string());
  ASSERT_TRUE(writer.append(outcome("task-0", 0)));
  EXPECT_EQ(writer.untouched(), "");
  std::ofstream(path, std::ios::app) << "{\"job\": 99}\n";
  EXPECT_NE(writer.untouched().find("grew by 12 bytes this run did not write (another process appended to it)"),
            std::string::npos)
      << writer.untouched();
  EXPECT_FALSE(writer.append(outcome("task-1", 0)));
  EXPECT_NE(writer.failure().find("`--resume` (same pipeline and --out) rewrites it"), std::string::npos)
      << writer.failure();
  EXPECT_NE(slurp(path).find("{\"job\": 99}\n"), std::string::npos) << "the other line was overwritten";

  for (const std::string change : {"truncated", "edited", "replaced", "deleted"}) {
    const fs::path file = dir / (change + ".jsonl");
    kforge::ResultsWriter own(file.string());
    ASSERT_TRUE(own.append(outcome("task-0", 0)));
    if (change == "truncated") {
      fs::resize_file(file, 3);
    } else if (change == "edited") {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a later modification time
      std::fstream text(file, std::ios::in | std::ios::out | std::ios::binary);
      text.seekp(2);
      text << "X";
    } else if (change == "replaced") {
      fs::rename(path, file);
    } else {
      fs::remove(file);
    }
    const std::string expected = change == "truncated" ? "was truncated by another process"
                                 : change == "edited"  ? "was edited in place by another process"
                                 : change == "replaced" ? "was replaced by another file"
                                                        : "was deleted";
    EXPECT_NE(own.untouched().find(expected), std::string::npos) << change << ": " << own.untouched();
  }
  fs::remove_all(dir);
}

}  // namespace
