// End-to-end: the real kforge binary under faults of its input and of the machine
// (issue 10): hostile pipeline files, two runs into one output directory, write failures,
// kill -9 and --resume, read-only output directories.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Result {
  int exit_code = -1;  // 128 + signal when killed
  std::string output;  // stdout and stderr together
  double seconds = 0;
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// kforge started in the background, its output in a file (nothing blocks on a pipe), with
// extra environment variables; killed with SIGKILL when it outlives `limit_seconds`.
class Kforge {
 public:
  // `file_size_limit` > 0: no file kforge writes may grow past it (RLIMIT_FSIZE, the
  // kernel's answer EFBIG), as on a disk that fills up.
  Kforge(std::vector<std::string> args, std::map<std::string, std::string> env = {}, rlim_t file_size_limit = 0)
      : log_(fs::temp_directory_path() / ("kforge-faults-" + std::to_string(getpid()) + "-" +
                                          std::to_string(counter_++) + ".log")),
        start_(Clock::now()) {
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
      if (file_size_limit > 0) {
        ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead of killing
        const rlimit limit{file_size_limit, file_size_limit};
        setrlimit(RLIMIT_FSIZE, &limit);
      }
      std::vector<std::string> strings = {KFORGE_BINARY};
      strings.insert(strings.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& s : strings) argv.push_back(s.data());
      argv.push_back(nullptr);
      execv(KFORGE_BINARY, argv.data());
      _exit(127);
    }
  }
  ~Kforge() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    fs::remove(log_);
  }
  pid_t pid() const { return pid_; }
  void signal(int sig) { kill(pid_, sig); }
  std::string output() const { return slurp(log_); }

  Result wait(double limit_seconds = 60) {
    Result r;
    int status = 0;
    const auto limit = start_ + std::chrono::duration<double>(limit_seconds);
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() > limit) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    reaped_ = true;
    r.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.output = slurp(log_);
    return r;
  }

 private:
  static inline int counter_ = 0;
  fs::path log_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  Clock::time_point start_;
};

Result kforge(std::vector<std::string> args, double limit_seconds = 60, std::map<std::string, std::string> env = {}) {
  return Kforge(std::move(args), std::move(env)).wait(limit_seconds);
}

std::string data(const std::string& name) { return std::string(KFORGE_TEST_DATA_DIR) + "/faults/" + name; }

// A fresh scratch directory per test, removed at the end.
class Scratch {
 public:
  explicit Scratch(const std::string& name)
      : path_(fs::temp_directory_path() / ("kforge-faults-" + name + "-" + std::to_string(getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~Scratch() {
    std::error_code ignored;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ignored);
    fs::remove_all(path_, ignored);
  }
  fs::path operator/(const std::string& name) const { return path_ / name; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A hostile input must end in a configuration error (exit 2) at once, located and said.
// "At once" is a second on an idle machine; the bound allows for a loaded 2-core CI box.
constexpr double kPromptSeconds = 3.0;

void expect_refused(const std::string& pipeline, const std::string& located, const std::string& words,
                    const fs::path& out) {
  for (const std::string command : {"validate", "run"}) {
    std::vector<std::string> args = {command, pipeline};
    if (command == "run") args.insert(args.end(), {"--out", out.string()});
    const Result r = kforge(args, 20);
    EXPECT_EQ(r.exit_code, 2) << command << " " << pipeline << ": " << r.output;
    EXPECT_LT(r.seconds, kPromptSeconds) << command << " " << pipeline;
    EXPECT_NE(r.output.find(located), std::string::npos) << command << ": " << r.output;
    EXPECT_NE(r.output.find(words), std::string::npos) << command << ": " << r.output;
    std::printf("%s %s: exit %d in %.3f s\n", command.c_str(), fs::path(pipeline).filename().c_str(), r.exit_code,
                r.seconds);
  }
}

// ---- 1. bounded input --------------------------------------------------------------------

TEST(BoundedInput, AliasBombInAMappingParameterIsRefusedAtItsPlace) {
  Scratch dir("bomb");
  expect_refused(data("bomb_table.yaml"), "bomb_table.yaml:10:9: error:", "expands to more than",
                 dir / "out");
  expect_refused(data("bomb_extra_body.yaml"), "bomb_extra_body.yaml:11:9: error:", "expands to more than",
                 dir / "out");
}

TEST(BoundedInput, DevicesAsPipelineOrIncludeAreRefused) {
  Scratch dir("devices");
  for (const std::string device : {"/dev/zero", "/dev/urandom"}) {
    expect_refused(device, device + ":", "a character device", dir / "out");
  }
  expect_refused(data("includes_device.yaml"), "includes_device.yaml:2:11: error:", "a character device",
                 dir / "out");
  expect_refused(data("includes_urandom.yaml"), "includes_urandom.yaml:2:11: error:", "a character device",
                 dir / "out");
}

TEST(BoundedInput, FifoAndDirectoryAreRefusedWithoutWaiting) {
  Scratch dir("fifo");
  const fs::path fifo = dir / "pipe.yaml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(fifo.string(), "pipe.yaml", "a FIFO", dir / "out");
  const fs::path including = dir / "includes_fifo.yaml";
  write_file(including,
             "pipeline: p\ninclude: [pipe.yaml, sub]\ntasks: {uses: demo.range, with: {count: 1}}\n"
             "stages:\n  - {id: a, uses: demo.noop}\n");
  fs::create_directories(dir / "sub");
  expect_refused(including.string(), "includes_fifo.yaml:2:11: error:", "a FIFO", dir / "out");
  expect_refused(including.string(), "includes_fifo.yaml:2:22: error:", "a directory", dir / "out");
}

TEST(BoundedInput, AFileOverTheSizeLimitIsRefused) {
  Scratch dir("large");
  const fs::path large = dir / "large.yaml";
  write_file(large, "pipeline: p\n# " + std::string(2 << 20, 'x') + "\n");
  expect_refused(large.string(), "large.yaml", "at most 1048576 bytes", dir / "out");
}

TEST(BoundedInput, DeepFlowNestingGetsALocatedError) {
  Scratch dir("deep");
  const fs::path deep = dir / "deep.yaml";
  write_file(deep, "pipeline: deep\ntasks: {uses: demo.range, with: {count: 1}}\nstages:\n  - id: a\n"
                   "    uses: demo.noop\n    with: {x: " +
                       std::string(100000, '[') + std::string(100000, ']') + "}\n");
  expect_refused(deep.string(), "deep.yaml:6:", "nests too deeply", dir / "out");
}

TEST(BoundedInput, ANullStageItemIsReportedOnItsOwnLine) {
  Scratch dir("null-stage");
  expect_refused(data("null_stage.yaml"), "null_stage.yaml:6:3: error:", "each stage must be a mapping", dir / "out");
}

TEST(BoundedInput, SetWithoutEqualsUsesTheCommonErrorFormat) {
  const Result r = kforge({"validate", std::string(KFORGE_SOURCE_DIR) + "/pipelines/demo.yaml", "--set", "noequals"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--set noequals: error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NAME=value"), std::string::npos) << r.output;
}


// ---- helpers for runs ------------------------------------------------------------------

struct Line {
  std::string task;
  int sample = 0;
  std::string status;
  bool operator<(const Line& o) const { return std::tie(task, sample, status) < std::tie(o.task, o.sample, o.status); }
  bool operator==(const Line& o) const { return task == o.task && sample == o.sample && status == o.status; }
};

// results.jsonl, every line parsed (a torn or invalid line fails the test).
std::vector<Line> read_results(const fs::path& out) {
  std::vector<Line> lines;
  std::ifstream in(out / "results.jsonl");
  std::string text;
  while (std::getline(in, text)) {
    auto json = nlohmann::json::parse(text, nullptr, false);
    EXPECT_FALSE(json.is_discarded()) << "invalid line in results.jsonl: " << text;
    if (json.is_discarded()) continue;
    lines.push_back({json["task"], json["sample"], json["status"]});
  }
  return lines;
}

// One value from the store, read with SQLite directly.
int64_t store_number(const fs::path& out, const std::string& sql) {
  sqlite3* db = nullptr;
  int64_t value = -1;
  if (sqlite3_open_v2((out / "kforge.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
      value = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return value;
}

void store_exec(const fs::path& out, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((out / "kforge.db").c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

// Every job of the quick pipeline exactly once, passed: the uninterrupted result.
void expect_complete(const fs::path& out, size_t jobs = 60) {
  auto lines = read_results(out);
  std::set<std::pair<std::string, int>> unique;
  for (const Line& l : lines) {
    unique.emplace(l.task, l.sample);
    EXPECT_EQ(l.status, "pass") << l.task;
  }
  EXPECT_EQ(lines.size(), jobs) << "results.jsonl holds a job twice or misses one";
  EXPECT_EQ(unique.size(), jobs);
  const int64_t series = store_number(out, "SELECT series FROM runs ORDER BY id DESC LIMIT 1");
  EXPECT_EQ(store_number(out, "SELECT COUNT(*) FROM jobs JOIN runs ON runs.id = jobs.run_id WHERE runs.series = " +
                                  std::to_string(series)),
            static_cast<int64_t>(jobs))
      << "the store's finished jobs differ from results.jsonl";
}

// Waits until the run holding `out` has written its pid into the lock file and finished
// `jobs` jobs.
bool wait_for_jobs(const fs::path& out, size_t jobs, double limit_seconds = 20) {
  const auto until = Clock::now() + std::chrono::duration<double>(limit_seconds);
  while (Clock::now() < until) {
    if (fs::exists(out / "kforge.lock") && !slurp(out / "kforge.lock").empty() && read_results(out).size() >= jobs) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::string steady() { return data("steady.yaml"); }

// ---- 2. one run per output directory -----------------------------------------------------

TEST(OneRunPerOut, ASecondRunOrResumeOnALiveDirectoryExitsTwoNamingTheHolder) {
  Scratch dir("lock");
  const fs::path out = dir / "out";
  Kforge first({"run", steady(), "--out", out.string(), "--progress", "off"});
  ASSERT_TRUE(wait_for_jobs(out, 4)) << first.output();
  for (const bool resume : {false, true}) {
    std::vector<std::string> args = {"run", steady(), "--out", out.string()};
    if (resume) args.push_back("--resume");
    const Result second = kforge(args, 20);
    EXPECT_EQ(second.exit_code, 2) << second.output;
    EXPECT_LT(second.seconds, kPromptSeconds);
    EXPECT_NE(second.output.find("in use by another kforge run (pid " + std::to_string(first.pid()) + ")"),
              std::string::npos)
        << second.output;
  }
  // The first run is untouched by the attempts: it is killed, and its run is found
  // `running` with nobody holding the lock, so it is marked interrupted and resumed.
  first.signal(SIGKILL);
  first.wait();
  EXPECT_EQ(store_number(out, "SELECT COUNT(*) FROM runs WHERE status = 'running'"), 1);
  const Result resumed = kforge({"run", steady(), "--out", out.string(), "--resume", "--progress", "off"}, 60);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("left running by a kforge that was killed; marked interrupted"), std::string::npos)
      << resumed.output;
  EXPECT_EQ(store_number(out, "SELECT COUNT(*) FROM runs WHERE status = 'running'"), 0);
  EXPECT_EQ(store_number(out, "SELECT COUNT(*) FROM runs WHERE status = 'interrupted'"), 1);
  expect_complete(out, 200);
}

TEST(OneRunPerOut, TwoRunsStartedAtOnceOneRunsTheOtherIsRefused) {
  Scratch dir("race");
  const fs::path out = dir / "out";
  Kforge a({"run", data("quick.yaml"), "--out", out.string(), "--progress", "off"});
  Kforge b({"run", data("quick.yaml"), "--out", out.string(), "--progress", "off"});
  const Result ra = a.wait(), rb = b.wait();
  std::multiset<int> codes = {ra.exit_code, rb.exit_code};
  EXPECT_EQ(codes, (std::multiset<int>{0, 2})) << ra.output << "\n----\n" << rb.output;
  EXPECT_NE((ra.exit_code == 2 ? ra : rb).output.find("in use by another kforge run"), std::string::npos);
  expect_complete(out);
}

// ---- 3. nothing torn, nothing twice -------------------------------------------------------

TEST(NothingTorn, KillNineAtRandomPointsThenResumeGivesTheUninterruptedResult) {
  Scratch dir("kill9");
  std::mt19937 random(std::random_device{}());
  for (int trial = 0; trial < 4; ++trial) {
    const fs::path out = dir / ("out" + std::to_string(trial));
    const int delay_ms = std::uniform_int_distribution<int>(30, 600)(random);
    Kforge run({"run", data("quick.yaml"), "--out", out.string(), "--progress", "off"});
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    run.signal(SIGKILL);
    run.wait();
    for (int attempt = 0; attempt < 2 && fs::exists(out / "kforge.db"); ++attempt) {
      const Result resumed = kforge({"run", data("quick.yaml"), "--out", out.string(), "--resume", "--progress", "off"});
      ASSERT_EQ(resumed.exit_code, 0) << "killed after " << delay_ms << " ms: " << resumed.output;
    }
    if (!fs::exists(out / "kforge.db")) continue;  // killed before it created anything
    std::printf("kill -9 after %d ms, then --resume\n", delay_ms);
    expect_complete(out);
  }
}

TEST(NothingTorn, AResultsWriteFailureStopsTheRunWithTrueNumbersAndResumeCompletesIt) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full to fail writes with";
  Scratch dir("full");
  const fs::path out = dir / "out";
  fs::create_directories(out);
  fs::create_symlink("/dev/full", out / "results.jsonl");  // every write: ENOSPC
  const Result failed = kforge({"run", data("quick.yaml"), "--out", out.string(), "--progress", "off"});
  EXPECT_EQ(failed.exit_code, 3) << failed.output;
  EXPECT_NE(failed.output.find("cannot write a result line"), std::string::npos) << failed.output;
  EXPECT_NE(failed.output.find("No space left on device"), std::string::npos) << failed.output;
  EXPECT_NE(failed.output.find("saved: 1 job in kforge.db, 0 lines in results.jsonl"), std::string::npos)
      << failed.output;
  EXPECT_EQ(store_number(out, "SELECT COUNT(*) FROM jobs"), 1) << "the job stored before the failure, no more";
  fs::remove(out / "results.jsonl");  // space freed
  const Result resumed = kforge({"run", data("quick.yaml"), "--out", out.string(), "--resume", "--progress", "off"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("had no line in results.jsonl that agrees with it; running it again"),
            std::string::npos)
      << resumed.output;
  expect_complete(out);
}

TEST(NothingTorn, AStoreWriteFailureStopsTheRunAndResumeCompletesIt) {
  Scratch dir("efbig");
  const fs::path out = dir / "out";
  // Enough for the store's schema and a few jobs, not for 60.
  const Result failed = Kforge({"run", data("quick.yaml"), "--out", out.string(), "--progress", "off"}, {},
                               256 * 1024)
                            .wait();
  EXPECT_EQ(failed.exit_code, 3) << failed.output;
  EXPECT_NE(failed.output.find("stopped by a write failure"), std::string::npos) << failed.output;
  const auto lines = read_results(out);
  EXPECT_LT(lines.size(), 60u);
  EXPECT_EQ(store_number(out, "SELECT COUNT(*) FROM jobs"), static_cast<int64_t>(lines.size()))
      << "results.jsonl holds exactly the jobs the store holds";
  const std::string saved = std::to_string(lines.size()) + (lines.size() == 1 ? " job" : " jobs") + " in kforge.db, " +
                            std::to_string(lines.size()) + (lines.size() == 1 ? " line" : " lines") + " in results.jsonl";
  EXPECT_NE(failed.output.find("saved: " + saved),
            std::string::npos)
      << failed.output;
  const Result resumed = kforge({"run", data("quick.yaml"), "--out", out.string(), "--resume", "--progress", "off"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  expect_complete(out);
}

TEST(NothingTorn, AStoreDeletedUnderTheRunStopsItAtOnce) {
  Scratch dir("deleted");
  const fs::path out = dir / "out";
  Kforge run({"run", steady(), "--out", out.string(), "--progress", "off"});
  ASSERT_TRUE(wait_for_jobs(out, 4)) << run.output();
  const auto deleted_at = Clock::now();
  fs::remove(out / "kforge.db");
  const Result r = run.wait(30);
  const double after = std::chrono::duration<double>(Clock::now() - deleted_at).count();
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("kforge.db' was deleted while the run was writing it"), std::string::npos) << r.output;
  EXPECT_LT(after, 2.0) << "the run went on into the deleted store";
  std::printf("deleted store: the run stopped %.3f s later\n", after);
}

TEST(NothingTorn, TheRunEndCheckCatchesAStoreThatDisagrees) {
  Scratch dir("disagree");
  const fs::path out = dir / "out";
  Kforge run({"run", steady(), "--out", out.string(), "--progress", "off"});
  ASSERT_TRUE(wait_for_jobs(out, 4)) << run.output();
  store_exec(out, "DELETE FROM jobs WHERE rowid = (SELECT MIN(rowid) FROM jobs)");  // tampered with
  const Result r = run.wait(60);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("this run's jobs disagree: 199 in the store (kforge.db: 199 passed, 0 failed, 0 errors), "
                          "200 saved as the run went, 200 finished (200 passed, 0 failed, 0 errors)"),
            std::string::npos)
      << r.output;
  // The line of the job taken out of the store is named too.
  EXPECT_NE(r.output.find("/results.jsonl:1: job (task 'task-0000', sample 0) is not a job the store finished"),
            std::string::npos)
      << r.output;
}

// results.jsonl is read back at the run's end and held to the store line by line: lines
// changed under a live run (in place, so the run's own writes go on undisturbed) are named
// with what the store says, the run exits 3, and --resume makes the file agree again.
TEST(NothingTorn, TheRunEndCheckCatchesResultLinesChangedUnderTheRunAndResumeRepairsThem) {
  Scratch dir("forged");
  const fs::path out = dir / "out";
  Kforge run({"run", steady(), "--out", out.string(), "--progress", "off"});
  ASSERT_TRUE(wait_for_jobs(out, 4)) << run.output();
  {
    std::fstream results(out / "results.jsonl", std::ios::in | std::ios::out | std::ios::binary);
    std::string first, second;
    std::getline(results, first);
    std::getline(results, second);
    const size_t status = first.find("\"status\":\"pass\"");
    ASSERT_NE(status, std::string::npos) << first;
    results.seekp(static_cast<std::streamoff>(status));
    results << "\"status\":\"fail\"";                      // a pass turned into a fail
    results.seekp(static_cast<std::streamoff>(first.size() + 1));
    results << std::string(second.size(), ' ');             // a line wiped out
  }
  const Result r = run.wait(60);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  for (const std::string words :
       {"results.jsonl disagrees with the store (kforge.db): 2 of its 200 lines disagree, 2 jobs the store finished "
        "have no line that agrees",
        "/results.jsonl:1: job (task 'task-0000', sample 0), which the store has as pass: status: the line says "
        "\"fail\", the store says \"pass\"",
        "/results.jsonl:2: not a JSON object:",
        "no line for job (task 'task-0001', sample 0), which the store finished as pass",
        "`--resume` (same pipeline and --out) rewrites it to agree with the store"}) {
    EXPECT_NE(r.output.find(words), std::string::npos) << words << "\n" << r.output;
  }
  const Result resumed = kforge({"run", steady(), "--out", out.string(), "--resume", "--progress", "off"}, 60);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("2 jobs finished in the store had no line in results.jsonl that agrees with it; "
                                "running them again"),
            std::string::npos)
      << resumed.output;
  expect_complete(out, 200);
}

// ---- 7. read-only consumers ---------------------------------------------------------------

// Runs `command` in a private mount namespace where `dir` is a read-only bind mount (root
// or not: `unshare -rm` maps the caller to root in a new user namespace). nullopt when the
// machine does not allow it.
std::optional<Result> on_read_only_mount(const fs::path& dir, const std::string& command) {
  const std::string d = "\"" + dir.string() + "\"";
  const std::string mount = "mount --bind " + d + " " + d + " && mount -o remount,ro,bind " + d + " " + d;
  if (std::system(("unshare -rm sh -c '" + mount + "' >/dev/null 2>&1").c_str()) != 0) return std::nullopt;
  const fs::path log = dir.parent_path() / "read-only.log";
  // `! touch` proves the directory is read-only for the command, root or not.
  const std::string full = "unshare -rm sh -c '" + mount + " && ! touch " + d + "/probe 2>/dev/null && " + command +
                           "' >\"" + log.string() + "\" 2>&1";
  Result r;
  const int status = std::system(full.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.output = slurp(log);
  return r;
}

TEST(ReadOnly, ReportAndCompareWorkOnAReadOnlyDirectory) {
  Scratch dir("ro");
  const fs::path out = dir / "runs" / "out";
  const Result run = kforge({"run", data("quick.yaml"), "--out", out.string(), "--progress", "off"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* name : {"report.md", "report.json", "report.html", "junit.xml"}) fs::remove(out / name);
  const std::string kforge_binary = KFORGE_BINARY;
  auto report = on_read_only_mount(out, kforge_binary + " report \"" + out.string() + "\"");
  if (!report) GTEST_SKIP() << "this machine allows no read-only bind mount (unshare -rm + mount -o remount,ro)";
  EXPECT_EQ(report->exit_code, 0) << report->output;
  EXPECT_NE(report->output.find("is not writable"), std::string::npos) << report->output;
  EXPECT_NE(report->output.find("60"), std::string::npos) << report->output;  // the tables
  auto compare = on_read_only_mount(out, kforge_binary + " compare \"" + out.string() + "\" \"" + out.string() + "\"");
  ASSERT_TRUE(compare);
  EXPECT_EQ(compare->exit_code, 0) << compare->output;
  EXPECT_FALSE(fs::exists(out / "report.md")) << "nothing was written";
}

// ---- 6. preflight: misconfigurations refused before any job runs -------------------------

TEST(Preflight, StageMisconfigurationsAreLocatedErrorsFromValidateAndRun) {
  Scratch dir("preflight");
  expect_refused(data("extra_body_model.yaml"), "extra_body_model.yaml:4:", "extra_body may not set 'model'",
                 dir / "out");
  expect_refused(data("missing_models_file.yaml"), "missing_models_file.yaml:4:", "no-such-models.yaml' does not exist",
                 dir / "out");
  expect_refused(data("negative_max_tokens.yaml"), "negative_max_tokens.yaml:9:19: error:", "at least 1",
                 dir / "out");
  expect_refused(data("missing_candidates.yaml"), "missing_candidates.yaml:4:",
                 "no-such-candidates' is not a directory", dir / "out");
  for (const std::string command : {"validate", "run"}) {
    std::vector<std::string> args = {command, data("eval_paths.yaml")};
    if (command == "run") args.insert(args.end(), {"--out", (dir / "out").string()});
    const Result r = kforge(args, 20);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    for (const std::string expected :
         {"eval_paths.yaml:4:5: error: stage 'check' (eval.check) could not be created: python '/nonexistent/python3' is "
          "not an executable file",
          "eval_paths.yaml:7:5: error: stage 'rules' (eval.check) could not be created: rules '",
          "eval_paths.yaml:10:5: error: stage 'compile' (eval.compile.cpp) could not be created: compiler "
          "'/nonexistent/g++' is not an executable file"}) {
      EXPECT_NE(r.output.find(expected), std::string::npos) << command << ": " << r.output;
    }
  }
  fs::create_directories(dir / "empty");
  const std::string empty_dir = "candidates.dir=" + (dir / "empty").string();
  const Result empty = kforge({"validate", data("missing_candidates.yaml"), "--set", empty_dir});
  EXPECT_EQ(empty.exit_code, 2) << empty.output;
  EXPECT_NE(empty.output.find("holds no candidate files"), std::string::npos) << empty.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "results.jsonl")) << "nothing ran";
}

TEST(Preflight, ATaskSourceThatGivesNoTasksExitsTwo) {
  Scratch dir("no-tasks");
  const Result r = kforge({"run", data("no_tasks.yaml"), "--out", (dir / "out").string(), "--progress", "off"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no_tasks.yaml:2:1: error: the task source 'demo.range' gave no tasks"), std::string::npos)
      << r.output;
}

// What a stage needs from the run's environment (kf_stage_kind::preflight) is checked by
// `run` and `--resume` before the first job, never by `validate`; a stage or source that
// cannot run here is a located error, exit 2, with the output directory left untouched,
// as for a stage that cannot be created.
TEST(Preflight, ARunStartCheckThatFailsExitsTwoLocatedBeforeAnyJobAndValidatePasses) {
  Scratch dir("run-environment");
  const fs::path out = dir / "out";
  ASSERT_EQ(std::getenv("KFORGE_TEST_PREFLIGHT_VARIABLE"), nullptr);
  const Result validated = kforge({"validate", data("run_environment.yaml")});
  EXPECT_EQ(validated.exit_code, 0) << validated.output;
  EXPECT_NE(validated.output.find("`kforge run` checks before the first job, for: tasks (demo.range), needs (demo.needs_env)"),
            std::string::npos)
      << "validate says which checks it left to the run: " << validated.output;

  const std::string refused =
      "run_environment.yaml:7:5: error: stage 'needs' (demo.needs_env) cannot run here: environment variable "
      "KFORGE_TEST_PREFLIGHT_VARIABLE is not set";
  const Result run = kforge({"run", data("run_environment.yaml"), "--out", out.string(), "--progress", "off"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find(refused), std::string::npos) << run.output;
  EXPECT_FALSE(fs::exists(out)) << "no job ran and the output directory was not touched";

  // The task source has the same check (demo.range's needs_env), reported at `tasks:`.
  const Result source = kforge({"run", data("run_environment.yaml"), "--out", out.string(), "--progress", "off",
                                "--set", "tasks.needs_env=KFORGE_TEST_PREFLIGHT_SOURCE"});
  EXPECT_EQ(source.exit_code, 2) << source.output;
  EXPECT_NE(source.output.find("run_environment.yaml:5:1: error: task source 'demo.range' cannot run here: "
                               "environment variable KFORGE_TEST_PREFLIGHT_SOURCE is not set"),
            std::string::npos)
      << source.output;
  EXPECT_NE(source.output.find(refused), std::string::npos) << "every stage that cannot run is reported: " << source.output;

  // With the variable set the run goes; a --resume without it is refused as a run is.
  const Result ran = kforge({"run", data("run_environment.yaml"), "--out", out.string(), "--progress", "off"}, 60,
                            {{"KFORGE_TEST_PREFLIGHT_VARIABLE", "set"}});
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(read_results(out).size(), 3u);
  const Result resumed =
      kforge({"run", data("run_environment.yaml"), "--out", out.string(), "--progress", "off", "--resume"});
  EXPECT_EQ(resumed.exit_code, 2) << resumed.output;
  EXPECT_NE(resumed.output.find(refused), std::string::npos) << resumed.output;
  EXPECT_EQ(read_results(out).size(), 3u) << "the refused --resume wrote nothing";
  EXPECT_EQ(store_number(out, "SELECT COUNT(*) FROM runs"), 1) << "the refused --resume began no run";
}

// llm.generate with a fixed model: its API key is the run's environment, not the pipeline's.
TEST(Preflight, AnUnsetApiKeyPassesValidateAndStopsTheRunNamingTheVariable) {
  Scratch dir("llm-key");
  const fs::path out = dir / "out";
  ASSERT_EQ(std::getenv("KFORGE_TEST_UNSET_API_KEY"), nullptr);
  const Result validated = kforge({"validate", data("llm_key.yaml")});
  EXPECT_EQ(validated.exit_code, 0) << "validate needs no secret: " << validated.output;
  const Result run = kforge({"run", data("llm_key.yaml"), "--out", out.string(), "--progress", "off"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("llm_key.yaml:6:5: error: stage 'generate' (llm.generate) cannot run here: model "
                            "'deepseek-chat': environment variable KFORGE_TEST_UNSET_API_KEY (its api_key_env) is not "
                            "set"),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(fs::exists(out));

  // A strict replay answers from the cassette: no key needed, the jobs run (demo.range's
  // tasks have no source: each ends as task_unreadable).
  write_file(dir / "empty.jsonl", "");
  const Result replay = kforge({"run", data("llm_key.yaml"), "--out", out.string(), "--progress", "off", "--set",
                                "generate.backend=replay", "--set", "generate.cassette=" + (dir / "empty.jsonl").string()});
  EXPECT_NE(replay.exit_code, 2) << replay.output;
  EXPECT_EQ(read_results(out).size(), 2u) << replay.output;
  EXPECT_EQ(replay.output.find("KFORGE_TEST_UNSET_API_KEY"), std::string::npos) << replay.output;
}

// Programs named without a path are looked up on PATH when the run starts: a missing one is
// an error naming it and what to install or set, before any job.
TEST(Preflight, ProgramsNotOnPathStopTheRunBeforeAnyJob) {
  Scratch dir("eval-programs");
  const fs::path out = dir / "out";
  const Result validated = kforge({"validate", data("eval_programs.yaml")});
  EXPECT_EQ(validated.exit_code, 0) << validated.output;
  EXPECT_NE(validated.output.find("compile (eval.compile.cpp), run (eval.run), check (eval.check)"), std::string::npos)
      << validated.output;
  const Result run = kforge({"run", data("eval_programs.yaml"), "--out", out.string(), "--progress", "off"}, 120);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  for (const std::string expected :
       {"eval_programs.yaml:6:5: error: stage 'compile' (eval.compile.cpp) cannot run here: C++ compiler "
        "'kforge-no-such-compiler' not found on PATH: install it",
        "eval_programs.yaml:9:5: error: stage 'run' (eval.run) cannot run here: python interpreter "
        "'kforge-no-such-python' not found"}) {
    EXPECT_NE(run.output.find(expected), std::string::npos) << run.output;
  }
  EXPECT_FALSE(fs::exists(out));

  // python: auto follows KFORGE_PYTHON: one that names nothing is the run's environment too.
  const Result env = kforge({"run", data("eval_programs.yaml"), "--out", out.string(), "--progress", "off", "--set",
                             "compile.compiler=/bin/sh"},
                            120, {{"KFORGE_PYTHON", "/nonexistent/kforge-python"}});
  EXPECT_EQ(env.exit_code, 2) << env.output;
  EXPECT_NE(env.output.find("eval_programs.yaml:12:5: error: stage 'check' (eval.check) cannot run here: "
                            "KFORGE_PYTHON names '/nonexistent/kforge-python'"),
            std::string::npos)
      << env.output;
  EXPECT_FALSE(fs::exists(out));
}

// ---- 4. timeouts on time ------------------------------------------------------------------

TEST(Timeouts, AWaitingStageEndsWithinItsTimeoutPlusTwoSeconds) {
  Scratch dir("timeout");
  const fs::path out = dir / "out";
  const Result r = kforge({"run", data("timeout.yaml"), "--out", out.string(), "--progress", "off"}, 60);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LT(r.seconds, 1.0 + 2.0 + 1.5) << "the run (start-up included) outlived the 1 s timeout";
  std::ifstream in(out / "results.jsonl");
  std::string text;
  int jobs = 0;
  while (std::getline(in, text)) {
    const auto line = nlohmann::json::parse(text);
    EXPECT_EQ(line["error_class"], "stage_timeout") << text;
    const double seconds = line["stages"][0]["seconds"];
    EXPECT_LT(seconds, 1.0 + 2.0) << text;
    std::printf("stage timeout 1 s: the job ended after %.3f s\n", seconds);
    ++jobs;
  }
  EXPECT_EQ(jobs, 4);
}

// eval.run waits on the harness server: the stage's deadline goes with the request, so a
// candidate that never ends is stopped by the stage timeout, not by the harness's own
// (much longer) per-child limit.
TEST(Timeouts, EvalRunOnANeverEndingCandidateEndsWithinItsStageTimeoutPlusTwoSeconds) {
  if (std::system("command -v g++ >/dev/null 2>&1") != 0) GTEST_SKIP() << "no g++ for the C++ candidate";
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no /usr/bin/python3 with torch for the evaluation harness";
  }
  Scratch dir("eval-timeout");
  fs::create_directories(dir / "candidates");
  fs::copy_file(std::string(KFORGE_SOURCE_DIR) + "/examples/kernelbench-mini/candidates/broken/timeout__001_relu.py",
                dir / "candidates" / "001_relu.py");
  const fs::path out = dir / "out";
  const Result r = kforge({"run", data("eval_timeout.yaml"), "--out", out.string(), "--progress", "off", "--set",
                           "candidates=" + (dir / "candidates").string()},
                          300, {{"XDG_CACHE_HOME", (dir / "cache").string()}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(out / "results.jsonl");
  std::string text;
  ASSERT_TRUE(std::getline(in, text)) << r.output;
  const auto line = nlohmann::json::parse(text);
  const auto& run = line["stages"].back();
  EXPECT_EQ(run["stage"], "run") << text;
  // The harness gets the stage's time left (less a margin) as the child's limit, so the
  // candidate is the one blamed (fail, timeout); the engine's stage_timeout is the backstop.
  const bool candidate_blamed = run["status"] == "fail" && run["error_class"] == "timeout";
  const bool stage_timed_out = run["status"] == "error" && run["error_class"] == "stage_timeout";
  EXPECT_TRUE(candidate_blamed || stage_timed_out) << text;
  const double seconds = run["seconds"];
  EXPECT_LT(seconds, 8.0 + 2.0) << text;
  std::printf("eval.run, stage timeout 8 s, a candidate that never ends: the job ended after %.3f s (%s)\n", seconds,
              run["error_class"].get<std::string>().c_str());
}

}  // namespace
