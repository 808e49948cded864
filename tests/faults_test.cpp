// End-to-end: the real kforge binary under faults of its input and of the machine
// (issues 10 and 23): hostile pipeline files and parameter files, settings every job would
// fail on, two runs into one output directory, full disks, kill -9 and --resume, stores and
// results changed under a live run, signals, timeouts, LLM API faults, bad tasks and
// candidates, read-only output directories.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
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
  // `memory_limit` > 0: its address space is capped (RLIMIT_AS), so an input that would
  // fill memory ends the process instead of the machine.
  Kforge(std::vector<std::string> args, std::map<std::string, std::string> env = {}, rlim_t file_size_limit = 0,
         rlim_t memory_limit = 0)
      : log_(fs::temp_directory_path() / ("kforge-faults-" + std::to_string(getpid()) + "-" +
                                          std::to_string(counter_++) + ".log")),
        start_(Clock::now()) {
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
      if (memory_limit > 0) {
        const rlimit limit{memory_limit, memory_limit};
        setrlimit(RLIMIT_AS, &limit);
      }
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

// A generous cap on what a refused input may make kforge take (its threads and libraries
// reserve far more address space than they use).
constexpr rlim_t kRefusalMemory = rlim_t{4} << 30;

void expect_refused(const std::string& pipeline, const std::string& located, const std::string& words,
                    const fs::path& out, const std::vector<std::string>& extra = {},
                    double within_seconds = kPromptSeconds) {
  for (const std::string command : {"validate", "run"}) {
    std::vector<std::string> args = {command, pipeline};
    if (command == "run") args.insert(args.end(), {"--out", out.string()});
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = Kforge(args, {}, 0, kRefusalMemory).wait(20);
    EXPECT_EQ(r.exit_code, 2) << command << " " << pipeline << ": " << r.output;
    EXPECT_LT(r.seconds, within_seconds) << command << " " << pipeline;
    EXPECT_NE(r.output.find(located), std::string::npos) << command << ": " << r.output;
    EXPECT_NE(r.output.find(words), std::string::npos) << command << ": " << r.output;
    std::printf("%s %s: exit %d in %.3f s\n", command.c_str(), fs::path(pipeline).filename().c_str(), r.exit_code,
                r.seconds);
  }
  EXPECT_FALSE(fs::exists(out)) << "a refused run touches no output directory";
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
  expect_refused(large.string(), "large.yaml", "at most 1 MiB", dir / "out");
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

// A YAML alias inside the mapping it names nests without end; a chain of anchors, each
// holding the one before, nests as deep as it is long. Either overflowed the stack.
TEST(BoundedInput, RecursiveAliasesAndAnchorChainsAreRefusedAtTheValue) {
  Scratch dir("aliases");
  const std::string head = "pipeline: p\ntasks: {uses: demo.range, with: {count: 1}}\nstages:\n  - id: select\n"
                           "    uses: llm.select\n    with:\n      default: m\n";
  write_file(dir / "recursive.yaml", head + "      table: &t {C1: *t}\n");
  expect_refused((dir / "recursive.yaml").string(), "recursive.yaml:8:14: error:", "nests more than 64 levels deep",
                 dir / "out");
  std::string chain = head + "      table:\n        a0: &a0 [v]\n";
  for (int i = 1; i < 30000; ++i) chain += "        a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" +
                                          std::to_string(i - 1) + "]\n";
  write_file(dir / "anchors.yaml", chain);
  // Reading 30,000 lines of YAML takes a second or more on a loaded 2-core machine.
  expect_refused((dir / "anchors.yaml").string(), "anchors.yaml:9:9: error:", "nests more than 64 levels deep",
                 dir / "out", {}, 3 * kPromptSeconds);
}

// Nine lines that each repeat the one before ten times name 10 GB; 20,000 variables each
// defined by the next recursed as deep. Both are refused where they go wrong, in bounded
// time and memory.
TEST(BoundedInput, VariableExpansionIsBoundedInSizeAndDepth) {
  Scratch dir("variables");
  std::string tenfold = "pipeline: p\nvars:\n  v0: xxxxxxxxxx\n";
  for (int i = 1; i < 10; ++i) {
    tenfold += "  v" + std::to_string(i) + ": ";
    for (int k = 0; k < 10; ++k) tenfold += "${v" + std::to_string(i - 1) + "}";
    tenfold += "\n";
  }
  tenfold += "label: ${v9}\ntasks: {uses: demo.range, with: {count: 1}}\nstages:\n  - {id: a, uses: demo.noop}\n";
  write_file(dir / "tenfold.yaml", tenfold);
  expect_refused((dir / "tenfold.yaml").string(), "tenfold.yaml:9:7: error:", "expands to more than 1 MiB of text",
                 dir / "out");
  std::string chain = "pipeline: p\nvars:\n  v0: x\n";
  for (int i = 1; i < 20000; ++i) chain += "  v" + std::to_string(i) + ": ${v" + std::to_string(i - 1) + "}\n";
  chain += "label: ${v19999}\ntasks: {uses: demo.range, with: {count: 1}}\nstages:\n  - {id: a, uses: demo.noop}\n";
  write_file(dir / "chain.yaml", chain);
  expect_refused((dir / "chain.yaml").string(), "chain.yaml:", "is reached through more than 64 variables", dir / "out",
                 {}, 3 * kPromptSeconds);
}

// yaml-cpp takes any bytes; a pipeline is UTF-8 text, and a byte that is not is an error
// where it is, in a value, a comment or an included file alike.
TEST(BoundedInput, BytesThatAreNotUtf8AreRefusedWhereTheyAre) {
  Scratch dir("utf8");
  write_file(dir / "value.yaml", "pipeline: p\xff\ntasks: {uses: demo.range, with: {count: 1}}\nstages:\n"
                                 "  - {id: a, uses: demo.noop}\n");
  expect_refused((dir / "value.yaml").string(), "value.yaml:1:12: error:", "invalid UTF-8 (byte 0xFF)", dir / "out");
  write_file(dir / "comment.yaml", "pipeline: p\n# caf\xe9\ntasks: {uses: demo.range, with: {count: 1}}\n"
                                   "stages:\n  - {id: a, uses: demo.noop}\n");
  expect_refused((dir / "comment.yaml").string(), "comment.yaml:2:6: error:", "invalid UTF-8 (byte 0xE9)",
                 dir / "out");
  write_file(dir / "vars.yaml", "vars:\n  x: \"\xc3\x28\"\n");
  write_file(dir / "including.yaml", "pipeline: p\ninclude: [vars.yaml]\ntasks: {uses: demo.range, with: {count: 1}}\n"
                                     "stages:\n  - {id: a, uses: demo.noop}\n");
  expect_refused((dir / "including.yaml").string(), "vars.yaml:2:7: error:", "invalid UTF-8 (byte 0xC3)", dir / "out");
}

// The pipeline path itself: missing, a directory, a symlink loop are errors in the common
// format, at the path, not CLI11's words.
TEST(BoundedInput, APipelinePathThatCannotBeReadIsALocatedError) {
  Scratch dir("paths");
  fs::create_symlink(dir / "loop-b", dir / "loop-a");
  fs::create_symlink(dir / "loop-a", dir / "loop-b");
  for (const auto& [path, words] : std::vector<std::pair<std::string, std::string>>{
           {(dir / "missing.yaml").string(), "No such file or directory"},
           {dir.path().string(), "it is a directory, not a regular file"},
           {(dir / "loop-a").string(), "Too many levels of symbolic links"}}) {
    expect_refused(path, path + ": error: cannot read pipeline file: ", words, dir / "out");
  }
}

// Every file a parameter names is read as pipeline files are: a device, a FIFO or a
// directory is refused at once, located at its stage, by validate and run alike.
TEST(BoundedInput, FilesThatParametersNameAreReadWithLimits) {
  Scratch dir("parameter-files");
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directories(dir / "a-directory");
  const std::string generate = "llm_settings.yaml:10:5: error: stage 'generate' (llm.generate) could not be created: ";
  for (const std::string path : {std::string("/dev/zero"), fifo.string(), (dir / "a-directory").string()}) {
    const std::string kind = path == "/dev/zero" ? "a character device" : path == fifo ? "a FIFO" : "a directory";
    expect_refused(data("llm_settings.yaml"), generate + "prompt template " + path + " cannot be read: it is " + kind,
                   "not a regular file", dir / "out", {"--set", "generate.prompt=" + path});
    expect_refused(data("llm_settings.yaml"), generate + "cassette " + path + " cannot be read: it is " + kind,
                   "not a regular file", dir / "out", {"--set", "generate.cassette=" + path});
    expect_refused(data("llm_settings.yaml"), generate + "models file " + path + " cannot be read: it is " + kind,
                   "not a regular file", dir / "out", {"--set", "generate.models_file=" + path, "--set",
                                                       "select.default=x", "--set", "generate.base_url=http://x"});
  }
  expect_refused(data("eval_settings.yaml"), "eval_settings.yaml:8:5: error: stage 'check' (eval.check)",
                 "is not a file", dir / "out", {"--set", "rules=" + fifo.string()});
}

// A 10 GB task file (sparse: it takes no disk) was read whole into memory; it is refused
// when the task source is created, without reading it.
TEST(BoundedInput, AHugeTaskFileIsRefusedWithoutBeingRead) {
  Scratch dir("huge-task");
  fs::create_directories(dir / "tasks");
  fs::copy_file(std::string(KFORGE_SOURCE_DIR) + "/examples/kernelbench-mini/tasks/001_relu.py",
                dir / "tasks" / "001_relu.py");
  {
    const int fd = ::open((dir / "tasks" / "002_huge.py").c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, off_t{10} << 30), 0);
    ::close(fd);
  }
  write_file(dir / "huge.yaml", "pipeline: huge\ntasks:\n  uses: kernelbench.suite\n  with: {path: tasks}\nstages:\n"
                                "  - {id: a, uses: demo.noop}\n");
  expect_refused((dir / "huge.yaml").string(), "huge.yaml:2:1: error: task source 'kernelbench.suite' could not be "
                                               "created: cannot read task file",
                 "002_huge.py: it holds 10737418240 bytes; at most 16 MiB are read from it", dir / "out");
}

TEST(BoundedInput, SetWithoutEqualsUsesTheCommonErrorFormat) {
  const Result r = kforge({"validate", std::string(KFORGE_SOURCE_DIR) + "/pipelines/demo.yaml", "--set", "noequals"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--set noequals: error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NAME=value"), std::string::npos) << r.output;
}


// ---- validate refuses what run would refuse ----------------------------------------------

// A setting every job would fail on is the pipeline's mistake: refused when the stages are
// created (by validate and by run, before any job), never a verdict blamed on the
// candidates or a harness_error per job.
TEST(ValidateRefuses, RulesFilesTheHarnessWouldRefuse) {
  Scratch dir("rules");
  const std::string corpus = std::string(KFORGE_SOURCE_DIR) + "/plugins/eval/tests/data/rules/";
  const std::string check = "eval_settings.yaml:8:5: error: stage 'check' (eval.check) could not be created: ";
  expect_refused(data("eval_settings.yaml"), check + corpus + "bad_yaml.yaml:4:", "the rules file is not valid YAML",
                 dir / "out", {"--set", "rules=" + corpus + "bad_yaml.yaml"});
  expect_refused(data("eval_settings.yaml"), check + corpus + "bad_regex.yaml:2:5: rule #1 (bad-regex): ",
                 "bad regular expression '(unclosed': missing ), unterminated subpattern", dir / "out",
                 {"--set", "rules=" + corpus + "bad_regex.yaml"});
  expect_refused(data("eval_settings.yaml"), check + corpus + "unknown_kind.yaml:2:5: rule #1 (typo): ",
                 "unknown kind 'strng_pattern'", dir / "out", {"--set", "rules=" + corpus + "unknown_kind.yaml"});
  const Result good = kforge({"validate", data("eval_settings.yaml"), "--set", "rules=" + corpus + "good.yaml"});
  EXPECT_EQ(good.exit_code, 0) << good.output;
}

TEST(ValidateRefuses, ComparisonRulesNoOutputCouldPass) {
  Scratch dir("rule-signs");
  const std::string run = "eval_settings.yaml:11:5: error: stage 'run' (eval.run) could not be created: ";
  expect_refused(data("eval_settings.yaml"), run + "rule field 'atol' must be >= 0, got -0.0001",
                 "no output could pass", dir / "out",
                 {"--set", "run.rule={kind: allclose, atol: -1e-4, rtol: 1e-4}"});
  expect_refused(data("eval_settings.yaml"), run + "rule field 'rtol.float16' must be >= 0", "no output could pass",
                 dir / "out", {"--set", "run.rule={kind: allclose, atol: 0, rtol: {float16: -1}}"});
  expect_refused(data("eval_settings.yaml"), run + "rule field 'limit' must be > 0, got 0", "no output could pass",
                 dir / "out", {"--set", "run.rule={kind: max_abs_diff, limit: 0}"});
  expect_refused(data("eval_settings.yaml"), run + "rule field 'max_rel_l2' must be >= 0", "no output could pass",
                 dir / "out", {"--set", "run.rule={kind: share_over_limit, max_rel_l2: -0.5}"});
  const Result exact = kforge({"validate", data("eval_settings.yaml"), "--set", "run.rule={kind: allclose, atol: 0, rtol: 0}"});
  EXPECT_EQ(exact.exit_code, 0) << "exact equality is a rule: " << exact.output;
}

TEST(ValidateRefuses, LlmSettingsEveryRequestWouldFailOn) {
  Scratch dir("llm-settings");
  const std::string generate = "llm_settings.yaml:10:5: error: stage 'generate' (llm.generate) could not be created: ";
  expect_refused(data("llm_settings.yaml"), "--set generate.backoff_max=0: error:", "must be greater than 0",
                 dir / "out", {"--set", "generate.backoff_max=0"});
  // Below the presets' backoff_initial (1 s): every model llm.select may choose is resolved.
  expect_refused(data("llm_settings.yaml"), generate + "model '",
                 "backoff_initial must be >= 0 and backoff_max >= backoff_initial", dir / "out",
                 {"--set", "generate.backoff_max=500ms"});
  expect_refused(data("llm_settings.yaml"), "llm_settings.yaml:7:5: error: stage 'select' (llm.select) could not be "
                                            "created: strategy fixed takes no table",
                 "--set select.table='{}'", dir / "out", {"--set", "select.strategy=fixed"});
  const Result fixed = kforge({"validate", data("llm_settings.yaml"), "--set", "select.strategy=fixed", "--set",
                               "select.table={}"});
  EXPECT_EQ(fixed.exit_code, 0) << "an empty table is no table: " << fixed.output;
  write_file(dir / "models.yaml", "models:\n  m:\n    base_url: http://127.0.0.1:1/v1\n  m:\n"
                                  "    base_url: http://127.0.0.1:2/v1\n");
  expect_refused(data("llm_settings.yaml"), generate + (dir / "models.yaml").string() + ":4:3: ",
                 "model 'm' is defined twice (first at line 2): keep one of them", dir / "out",
                 {"--set", "generate.models_file=" + (dir / "models.yaml").string()});
  expect_refused(data("llm_settings.yaml"), generate + "model 'deepseek-chat': base_url 'ftp://x/v1'",
                 "is not an http:// or https:// URL", dir / "out", {"--set", "generate.base_url=ftp://x/v1"});
}

// The longest duration a pipeline may give is 1e9 s; more overflowed the clock (every LLM
// request failed at once). Refused where it is written.
TEST(ValidateRefuses, DurationsBeyondABillionSeconds) {
  Scratch dir("durations");
  expect_refused(data("busy.yaml"), "busy.yaml:", "invalid duration '1e20s' for timeout of stage 'busy'", dir / "out",
                 {"--set", "busy_timeout=1e20s"});
  expect_refused(data("busy.yaml"), "busy.yaml:", "at most 1e9 s", dir / "out",
                 {"--set", "busy_timeout=1.7976931348623157e308"});
  expect_refused(data("llm_settings.yaml"), "--set generate.timeout=1e20s: error:", "at most 1e9 s", dir / "out",
                 {"--set", "generate.timeout=1e20s"});
  const Result longest = kforge({"validate", data("busy.yaml"), "--set", "busy_timeout=1e9s"});
  EXPECT_EQ(longest.exit_code, 0) << longest.output;
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
  EXPECT_NE(failed.output.find("stopped by a failed write"), std::string::npos) << failed.output;
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

// The integrity of a store: SQLite's own check, on a fresh read-only connection.
std::string integrity_of(const fs::path& database) {
  sqlite3* db = nullptr;
  std::string verdict = "cannot open";
  if (sqlite3_open_v2(database.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      verdict = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    } else {
      verdict = sqlite3_errmsg(db);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return verdict;
}

// A run of `pipeline` into `out`, tampered with by `tamper` once it has saved four jobs:
// it must stop within seconds (exit 3) saying `words`; returns its output.
std::string tampered_run(const fs::path& out, const std::function<void()>& tamper, const std::string& words,
                         const std::string& pipeline = data("steady.yaml")) {
  Kforge run({"run", pipeline, "--out", out.string(), "--progress", "off"});
  EXPECT_TRUE(wait_for_jobs(out, 4)) << run.output();
  const auto at = Clock::now();
  tamper();
  const Result r = run.wait(30);
  const double after = std::chrono::duration<double>(Clock::now() - at).count();
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find(words), std::string::npos) << words << "\n" << r.output;
  EXPECT_LT(after, 3.0) << "noticed only " << after << " s later";
  std::printf("%s: the run stopped %.3f s later\n", words.c_str(), after);
  return r.output;
}

// Another process writing the store (here through SQLite: its commits go into the run's
// log) stops the run within seconds; what it wrote stays consistent.
TEST(Tampering, AStoreWrittenByAnotherProcessStopsTheRunWithinSeconds) {
  Scratch dir("sql-writer");
  const fs::path out = dir / "out";
  tampered_run(out, [&] { store_exec(out, "DELETE FROM jobs WHERE rowid = (SELECT MIN(rowid) FROM jobs)"); },
               "its write-ahead log '" + (out / "kforge.db-wal").string() + "' was ");
  EXPECT_EQ(integrity_of(out / "kforge.db"), "ok");
}

TEST(Tampering, AStoreTruncatedInPlaceStopsTheRunAndIsLeftAsTheOtherProcessLeftIt) {
  Scratch dir("truncated");
  const fs::path out = dir / "out";
  tampered_run(out, [&] { fs::resize_file(out / "kforge.db", 0); },
               "the run store '" + (out / "kforge.db").string() + "' was truncated by another process");
  // The run's log is not applied to the emptied file: it stays an empty database, which a
  // fresh run uses and --resume refuses plainly.
  EXPECT_EQ(fs::file_size(out / "kforge.db"), 0u);
  EXPECT_FALSE(fs::exists(out / "kforge.db-wal"));
  const Result resumed = kforge({"run", steady(), "--out", out.string(), "--resume", "--progress", "off"});
  EXPECT_EQ(resumed.exit_code, 2) << resumed.output;
  EXPECT_NE(resumed.output.find("holds no run to continue (kforge.db is empty, yet results.jsonl holds results)"),
            std::string::npos)
      << resumed.output;
  fs::remove(out / "results.jsonl");
  const Result fresh = kforge({"run", data("quick.yaml"), "--out", out.string(), "--progress", "off"});
  ASSERT_EQ(fresh.exit_code, 0) << fresh.output;
  expect_complete(out);
}

TEST(Tampering, AStoreOverwrittenInPlaceStopsTheRunAndKeepsWhatWasWritten) {
  Scratch dir("overwritten");
  const fs::path other = dir / "other";
  ASSERT_EQ(kforge({"run", data("quick.yaml"), "--out", other.string(), "--progress", "off"}).exit_code, 0);
  const fs::path out = dir / "out";
  tampered_run(out,
               [&] {
                 // cp over it: the same file (inode), another database's bytes.
                 fs::copy_file(other / "kforge.db", out / "kforge.db", fs::copy_options::overwrite_existing);
               },
               "the run store '" + (out / "kforge.db").string() + "' was ");
  EXPECT_EQ(integrity_of(out / "kforge.db"), "ok") << "the run's log was applied to the copied database";
  EXPECT_EQ(store_number(out, "SELECT COUNT(*) FROM jobs"), 60) << "the copy is as it was";
}

TEST(Tampering, AStoreWhoseHeaderIsOverwrittenStopsTheRun) {
  Scratch dir("header");
  const fs::path out = dir / "out";
  tampered_run(out,
               [&] {
                 std::fstream db(out / "kforge.db", std::ios::in | std::ios::out | std::ios::binary);
                 db << "not a database!!";  // SQLite's magic string, overwritten
               },
               "the run store '" + (out / "kforge.db").string() + "' was written by another process");
}

// mv of another database over the store: the run stops at once, and its log (which
// belongs to the file moved away) is not applied to the replacement.
TEST(Tampering, AStoreReplacedByMvStopsTheRunAndTheReplacementStaysIntact) {
  Scratch dir("replaced");
  const fs::path other = dir / "other";
  ASSERT_EQ(kforge({"run", data("quick.yaml"), "--out", other.string(), "--progress", "off"}).exit_code, 0);
  const fs::path out = dir / "out";
  tampered_run(out, [&] { fs::rename(other / "kforge.db", out / "kforge.db"); },
               "the run store '" + (out / "kforge.db").string() + "' was replaced by another file");
  EXPECT_EQ(integrity_of(out / "kforge.db"), "ok");
  EXPECT_EQ(store_number(out, "SELECT COUNT(*) FROM jobs"), 60) << "the replacement is as it was";
  EXPECT_EQ(store_number(out, "SELECT COUNT(*) FROM runs"), 1);
}

// The log deleted: the run stops saying so, and what it committed (in the log it still
// holds open) goes into the database, which stays whole and says the run failed.
TEST(Tampering, AStoreLogDeletedStopsTheRunAndWhatWasSavedIsKept) {
  Scratch dir("log-deleted");
  const fs::path out = dir / "out";
  const std::string output = tampered_run(out, [&] { fs::remove(out / "kforge.db-wal"); },
                                          "its write-ahead log '" + (out / "kforge.db-wal").string() + "' was deleted");
  EXPECT_EQ(output.find("disk I/O error"), std::string::npos) << output;
  EXPECT_EQ(integrity_of(out / "kforge.db"), "ok");
  EXPECT_GE(store_number(out, "SELECT COUNT(*) FROM jobs"), 4);
  EXPECT_EQ(store_number(out, "SELECT COUNT(*) FROM runs WHERE status = 'running'"), 0);
  const Result resumed = kforge({"run", steady(), "--out", out.string(), "--resume", "--progress", "off"}, 60);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  expect_complete(out, 200);
}

// results.jsonl changed by another process in any way (a line appended, the file
// truncated, deleted, edited in place) stops the run within seconds; --resume makes it
// agree with the store again.
TEST(Tampering, AResultsFileChangedByAnotherProcessStopsTheRunAndResumeRepairsIt) {
  Scratch dir("results");
  const std::vector<std::tuple<std::string, std::function<void(const fs::path&)>, std::string>> cases = {
      {"appended",
       [](const fs::path& file) {
         std::ofstream(file, std::ios::app) << R"({"job":0,"task":"task-0000","status":"pass"})" << "\n";
       },
       "grew by 45 bytes this run did not write (another process appended to it)"},
      {"truncated", [](const fs::path& file) { fs::resize_file(file, fs::file_size(file) / 2); },
       "was truncated by another process"},
      {"deleted", [](const fs::path& file) { fs::remove(file); }, "was deleted"},
      {"edited",
       [](const fs::path& file) {
         std::fstream results(file, std::ios::in | std::ios::out | std::ios::binary);
         results.seekp(2);
         results << "x";
       },
       "was edited in place by another process"}};
  for (const auto& [name, tamper, words] : cases) {
    const fs::path out = dir / name;
    // In the run's quiet 3 s: an edit in place shows in the modification time only, which
    // the clock's coarse tick (4 ms) does not tell from the run's own write of that tick
    // (that one the run-end check finds).
    tampered_run(out, [&, &tamper = tamper] { tamper(out / "results.jsonl"); }, "results.jsonl' " + words,
                 data("pause.yaml"));
    const Result resumed = kforge({"run", data("pause.yaml"), "--out", out.string(), "--resume", "--progress", "off"}, 60);
    ASSERT_EQ(resumed.exit_code, 0) << name << ": " << resumed.output;
    expect_complete(out, 8);
  }
}

// What the watch must not take for a change: readers. `kforge report`, `show` and
// `export` read the store while the run writes it (docs/cli.md).
TEST(Tampering, ReadersAreNoChange) {
  Scratch dir("readers");
  const fs::path out = dir / "out";
  Kforge run({"run", steady(), "--out", out.string(), "--progress", "off"});
  ASSERT_TRUE(wait_for_jobs(out, 4)) << run.output();
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(kforge({"report", out.string(), "--format", "text"}).exit_code, 0);
    EXPECT_EQ(kforge({"show", out.string(), "task-0000"}).exit_code, 0);
    EXPECT_EQ(kforge({"export", out.string(), "--format", "records", "--to", (dir / "export").string()}).exit_code, 0);
  }
  const Result r = run.wait(60);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_complete(out, 200);
}

// The whole output directory removed under the run: exit 3 within seconds, saying so.
TEST(Tampering, AnOutputDirectoryRemovedStopsTheRun) {
  Scratch dir("removed");
  const fs::path out = dir / "out";
  tampered_run(out, [&] { fs::remove_all(out); },
               "the run store '" + (out / "kforge.db").string() + "' was deleted while the run was writing it");
}

// The run-end check is the backstop for what the watch cannot see: lines changed in place
// by someone who also put the file's modification time back. Each is named with what the
// store says, the run exits 3, and --resume makes the file agree again.
TEST(NothingTorn, TheRunEndCheckCatchesResultLinesChangedUnderTheRunAndResumeRepairsThem) {
  Scratch dir("forged");
  const fs::path out = dir / "out";
  Kforge run({"run", data("pause.yaml"), "--out", out.string(), "--progress", "off"});
  ASSERT_TRUE(wait_for_jobs(out, 4)) << run.output();  // then nothing is written for 3 s
  std::string first_task, second_task;  // jobs are written as they finish: whichever came first
  {
    struct stat before {};
    ASSERT_EQ(::stat((out / "results.jsonl").c_str(), &before), 0);
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
    results.close();
    const timespec times[2] = {before.st_atim, before.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, (out / "results.jsonl").c_str(), times, 0), 0);  // the trace covered
    first_task = nlohmann::json::parse(first)["task"];
    second_task = nlohmann::json::parse(second)["task"];
  }
  const Result r = run.wait(60);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  for (const std::string& words : std::vector<std::string>{
           "results.jsonl disagrees with the store (kforge.db): 2 of its 8 lines disagree, 2 jobs the store finished "
        "have no line that agrees",
        "/results.jsonl:1: job (task '" + first_task + "', sample 0), which the store has as pass: status: the line says "
        "\"fail\", the store says \"pass\"",
        "/results.jsonl:2: not a JSON object:",
        "no line for job (task '" + second_task + "', sample 0), which the store finished as pass",
        "`--resume` (same pipeline and --out) rewrites it to agree with the store"}) {
    EXPECT_NE(r.output.find(words), std::string::npos) << words << "\n" << r.output;
  }
  const Result resumed = kforge({"run", data("pause.yaml"), "--out", out.string(), "--resume", "--progress", "off"}, 60);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("2 jobs finished in the store had no line in results.jsonl that agrees with it; "
                                "running them again"),
            std::string::npos)
      << resumed.output;
  expect_complete(out, 8);
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

// The output directory turned read-only under a running run (a read-only bind mount over
// it, in a private mount namespace): exit 3 saying so, never a death by SIGBUS, and the run
// is not left `running`.
TEST(ReadOnly, AnOutputDirectoryTurnedReadOnlyUnderARunIsAnErrorNotASignal) {
  Scratch dir("ro-mid-run");
  const fs::path out = dir / "out";
  if (std::system("unshare -rm true >/dev/null 2>&1") != 0) GTEST_SKIP() << "no private mount namespaces here";
  const std::string d = "\"" + out.string() + "\"";
  const fs::path log = dir / "run.log";
  const std::string script =
      std::string(KFORGE_BINARY) + " run " + data("steady.yaml") + " --out " + d + " --progress off >\"" + log.string() +
      "\" 2>&1 & pid=$!; while [ \"$(wc -l < " + d + "/results.jsonl 2>/dev/null || echo 0)\" -lt 4 ]; do sleep 0.02; "
      "done; mount --bind " + d + " " + d + " && mount -o remount,ro,bind " + d + " " + d + " || echo NO-MOUNT; wait "
      "$pid; echo \"exit $?\"";
  const fs::path script_file = dir / "script.sh";
  write_file(script_file, script);
  const int status = std::system(("unshare -rm sh " + script_file.string() + " > \"" + (dir / "outer.log").string() +
                                  "\" 2>&1").c_str());
  const std::string outer = slurp(dir / "outer.log"), output = slurp(log);
  ASSERT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0) << outer;
  if (outer.find("NO-MOUNT") != std::string::npos) GTEST_SKIP() << "no read-only bind mount here: " << outer;
  EXPECT_NE(outer.find("exit 3"), std::string::npos) << outer << output;
  EXPECT_NE(output.find("is not writable any more"), std::string::npos) << output;
  EXPECT_EQ(output.find("Bus error"), std::string::npos) << output;
  EXPECT_EQ(store_number(out, "SELECT COUNT(*) FROM runs WHERE status = 'running'"), 0);
  expect_complete(out, 200);
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
  EXPECT_NE(r.output.find("no_tasks.yaml:2:1: error: the task source 'demo.range' gave no tasks, so nothing ran and "
                          "nothing was written"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "out")) << "--out is left untouched";
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

// A device this host's harness cannot use (no CUDA build of torch, no torch_npu, no such
// GPU) is the run's environment too: the run stops before its first job, naming why, as
// for a missing compiler. npu:0 is such a device on every machine these tests run on.
TEST(Preflight, ADeviceTheHarnessCannotUseStopsTheRunBeforeAnyJob) {
  Scratch dir("eval-device");
  const fs::path out = dir / "out";
  const Result run = kforge({"run", data("eval_programs.yaml"), "--out", out.string(), "--progress", "off", "--set",
                             "compile.compiler=/bin/sh", "--set", "run.python=auto", "--set", "run.device=npu:0"},
                            120);
  if (run.output.find("no Python interpreter that can import torch") != std::string::npos) {
    GTEST_SKIP() << "no Python with torch on this machine to ask about the device";
  }
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("eval_programs.yaml:9:5: error: stage 'run' (eval.run) cannot run here: torch_npu is not "
                            "importable by "),
            std::string::npos)
      << run.output;
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

// ---- bad candidates ------------------------------------------------------------------------

// A candidate file that cannot be a program (a FIFO nobody writes, a 10 GB sparse file)
// fails its own job at once as no_candidate; the other jobs run.
TEST(BadCandidates, AFifoOrAHugeCandidateFileFailsItsJobAtOnce) {
  Scratch dir("bad-candidates");
  fs::create_directories(dir / "candidates");
  write_file(dir / "candidates" / "002_gelu.py", "class ModelNew: pass\n");
  ASSERT_EQ(mkfifo((dir / "candidates" / "001_relu.py").c_str(), 0600), 0);
  write_file(dir / "candidates" / "001_relu.1.py", "");
  fs::resize_file(dir / "candidates" / "001_relu.1.py", uintmax_t{10} << 30);
  const fs::path out = dir / "out";
  const Result r = Kforge({"run", data("candidate_files.yaml"), "--out", out.string(), "--progress", "off", "--set",
                           "candidates=" + (dir / "candidates").string()},
                          {}, 0, kRefusalMemory)
                       .wait(30);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LT(r.seconds, 10.0);
  std::map<std::pair<std::string, int>, std::string> outcome;
  for (const Line& line : read_results(out)) outcome[{line.task, line.sample}] = line.status;
  EXPECT_EQ(outcome.size(), 4u) << slurp(out / "results.jsonl");
  EXPECT_EQ(outcome[std::make_pair(std::string("001_relu"), 0)], "fail");
  EXPECT_EQ(outcome[std::make_pair(std::string("001_relu"), 1)], "fail");
  EXPECT_EQ(outcome[std::make_pair(std::string("002_gelu"), 0)], "pass");
  EXPECT_NE(slurp(out / "results.jsonl").find("it holds 10737418240 bytes; at most 16 MiB"), std::string::npos)
      << slurp(out / "results.jsonl");
}

// ---- saved when finished -----------------------------------------------------------------

// The first job waits 10 s; the 199 after it finish at once. Killed with -9 before the
// slow one ends, the run has saved every one of those, not only the jobs ahead of the slow
// one; --resume then completes it exactly.
TEST(NothingTorn, FinishedJobsAreSavedWhateverTheJobsTakenInBeforeThemAreDoing) {
  Scratch dir("saved-when-finished");
  const fs::path out = dir / "out";
  Kforge run({"run", data("one_slow_job.yaml"), "--out", out.string(), "--progress", "off"});
  ASSERT_TRUE(wait_for_jobs(out, 199, 6)) << "finished jobs wait for the slow one ahead of them: " << run.output();
  run.signal(SIGKILL);
  run.wait();
  const auto lines = read_results(out);
  EXPECT_EQ(lines.size(), 199u);
  for (const Line& line : lines) EXPECT_NE(line.task, "task-0000");
  EXPECT_EQ(store_number(out, "SELECT COUNT(*) FROM jobs"), 199);
  const Result same = Kforge({"run", data("one_slow_job.yaml"), "--out", out.string(), "--resume", "--progress", "off"})
                          .wait(120);
  ASSERT_EQ(same.exit_code, 0) << same.output;
  EXPECT_NE(same.output.find("199 jobs already finished"), std::string::npos) << same.output;
  expect_complete(out, 200);
}

// ---- signals -------------------------------------------------------------------------------

// The pid of a child of `parent` whose command line holds `words`, or -1.
pid_t child_running(pid_t parent, const std::string& words) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const std::string stat = slurp(entry.path() / "stat");
    const size_t end = stat.rfind(')');
    if (end == std::string::npos) continue;
    std::istringstream fields(stat.substr(end + 2));
    char state = 0;
    pid_t ppid = 0;
    fields >> state >> ppid;
    if (ppid != parent) continue;
    std::string command = slurp(entry.path() / "cmdline");
    std::replace(command.begin(), command.end(), '\0', ' ');
    if (command.find(words) != std::string::npos) return std::stoi(name);
  }
  return -1;
}

bool process_alive(pid_t pid) {
  // A zombie (dead, not yet reaped) counts as gone.
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const size_t end = stat.rfind(')');
  return end != std::string::npos && end + 2 < stat.size() && stat[end + 2] != 'Z';
}

// SIGTERM, SIGINT or SIGHUP while the run-start checks run (the probe of which python
// imports torch, seconds long): exit 130 at once, the probe killed with kforge, nothing
// written.
TEST(Signals, DuringTheRunStartChecksExit130AndTheProbeDiesWithKforge) {
  // The probe must take its seconds: importing torch does.
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no /usr/bin/python3 with torch: the start-up probe would end too soon to be interrupted";
  }
  Scratch dir("signal-preflight");
  for (const int signal_number : {SIGTERM, SIGINT, SIGHUP}) {
    const fs::path out = dir / "out";
    Kforge run({"run", data("slow_start.yaml"), "--out", out.string()}, {{"KFORGE_PYTHON", ""}});
    pid_t probe = -1;
    const auto until = Clock::now() + std::chrono::seconds(20);
    while ((probe = child_running(run.pid(), "import torch")) < 0 && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_GT(probe, 0) << "no probe seen: " << run.output();
    const auto sent = Clock::now();
    run.signal(signal_number);
    const Result r = run.wait(20);
    const double after = std::chrono::duration<double>(Clock::now() - sent).count();
    EXPECT_EQ(r.exit_code, 130) << strsignal(signal_number) << ": " << r.output;
    EXPECT_LT(after, 2.0);
    EXPECT_NE(r.output.find(std::string("SIG") + sigabbrev_np(signal_number) + ": stopping now"), std::string::npos)
        << r.output;
    const auto gone_by = Clock::now() + std::chrono::seconds(2);
    while (process_alive(probe) && Clock::now() < gone_by) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_FALSE(process_alive(probe)) << "the probe (pid " << probe << ") outlived kforge";
    EXPECT_FALSE(fs::exists(out)) << "nothing was written";
    std::printf("SIG%s during the run-start checks: exit %d after %.3f s\n", sigabbrev_np(signal_number), r.exit_code,
                after);
  }
}

// Whether `pid` has a handler of its own for `signal_number` (SigCgt in /proc/PID/status).
bool catches(pid_t pid, int signal_number) {
  std::istringstream status(slurp("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("SigCgt:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (signal_number - 1)) & 1;
  }
  return false;
}

// From main's first line on: a signal as early as kforge can catch one (before its
// plugins are loaded) is exit 130, not a death by it.
TEST(Signals, FromMainsFirstLineExit130) {
  for (const int signal_number : {SIGTERM, SIGINT, SIGHUP}) {
    Kforge run({"validate", data("quick.yaml")});
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (!catches(run.pid(), signal_number) && Clock::now() < until) std::this_thread::yield();
    ASSERT_TRUE(catches(run.pid(), signal_number)) << "kforge never set a handler for " << strsignal(signal_number);
    run.signal(signal_number);
    const Result r = run.wait(20);
    EXPECT_EQ(r.exit_code, 130) << strsignal(signal_number) << "\n" << r.output;
  }
}

// A closed terminal or a dropped ssh (SIGHUP) ends a run as SIGTERM does: interrupted,
// what finished saved, resumable.
TEST(Signals, SighupInterruptsTheRunWhichResumes) {
  Scratch dir("sighup");
  const fs::path out = dir / "out";
  Kforge run({"run", steady(), "--out", out.string(), "--progress", "off"});
  ASSERT_TRUE(wait_for_jobs(out, 4)) << run.output();
  run.signal(SIGHUP);
  const Result r = run.wait(30);
  EXPECT_EQ(r.exit_code, 130) << r.output;
  EXPECT_NE(r.output.find("SIGHUP: stopping the run"), std::string::npos) << r.output;
  EXPECT_EQ(store_number(out, "SELECT COUNT(*) FROM runs WHERE status = 'interrupted'"), 1);
  const Result resumed = kforge({"run", steady(), "--out", out.string(), "--resume", "--progress", "off"}, 60);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  expect_complete(out, 200);
}

// `kforge run ... | head`: the reader goes away; the run finishes, saves everything and
// exits with its own code, not 141 (SIGPIPE) at the last flush of the report.
TEST(Signals, AClosedStdoutIsNoDeath) {
  Scratch dir("sigpipe");
  const fs::path out = dir / "out";
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    dup2(pipe_fds[1], 1);
    const int null = ::open("/dev/null", O_WRONLY);
    dup2(null, 2);
    std::vector<std::string> strings = {KFORGE_BINARY, "run", data("quick.yaml"), "--out", out.string(), "--progress",
                                        "off"};
    std::vector<char*> argv;
    for (auto& text : strings) argv.push_back(text.data());
    argv.push_back(nullptr);
    execv(KFORGE_BINARY, argv.data());
    _exit(127);
  }
  ::close(pipe_fds[1]);
  char first[16];
  EXPECT_GT(::read(pipe_fds[0], first, sizeof first), 0);  // `head -c 16`
  ::close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
  expect_complete(out);
  EXPECT_TRUE(fs::exists(out / "report.json")) << "the report files are written after the tables' failed print";
}

// How `args` ends with a stdout whose reader is gone before the first byte (`| head -1`
// having read its line; deterministic: the pipe's read end is closed before kforge starts,
// so every write to stdout fails with EPIPE): its exit code, or 128 + the killing signal.
int status_with_stdout_closed(const std::vector<std::string>& args) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return -1;
  ::close(pipe_fds[0]);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    const int null = ::open("/dev/null", O_WRONLY);
    dup2(null, 2);
    std::vector<std::string> strings = {KFORGE_BINARY};
    strings.insert(strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& text : strings) argv.push_back(text.data());
    argv.push_back(nullptr);
    execv(KFORGE_BINARY, argv.data());
    _exit(127);
  }
  ::close(pipe_fds[1]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Every command, piped into a reader that has gone, finishes with its own exit code
// (docs/cli.md): the run saves everything, the reports are written, none dies of SIGPIPE.
TEST(Signals, EveryCommandOutlivesAClosedStdout) {
  Scratch dir("sigpipe-all");
  const fs::path out = dir / "out";
  EXPECT_EQ(status_with_stdout_closed({"run", data("quick.yaml"), "--out", out.string(), "--progress", "off"}), 0);
  expect_complete(out);
  fs::remove(out / "report.json");
  EXPECT_EQ(status_with_stdout_closed({"report", out.string()}), 0);
  EXPECT_TRUE(fs::exists(out / "report.json")) << "report writes its files after the tables' failed print";
  EXPECT_EQ(status_with_stdout_closed({"show", out.string(), "task-0000"}), 0);
  EXPECT_EQ(status_with_stdout_closed({"compare", out.string(), out.string()}), 0);
  EXPECT_EQ(status_with_stdout_closed({"validate", data("quick.yaml")}), 0);
  EXPECT_EQ(status_with_stdout_closed({"plugins", "list"}), 0);
  EXPECT_EQ(status_with_stdout_closed({"plugins", "describe", "demo.sleep"}), 0);
  EXPECT_EQ(status_with_stdout_closed({"--help"}), 0);
  // An error keeps its own code too: a task that is not there.
  EXPECT_EQ(status_with_stdout_closed({"show", out.string(), "no-such-task"}), 2);
}

// ---- the command line ----------------------------------------------------------------------

TEST(CommandLine, OptionsThatCannotBeMetAreUsageErrors) {
  Scratch dir("options");
  write_file(dir / "a-file", "x");
  const Result file = kforge({"run", data("quick.yaml"), "--out", (dir / "a-file").string()});
  EXPECT_EQ(file.exit_code, 2) << file.output;
  EXPECT_NE(file.output.find("--out '" + (dir / "a-file").string() + "' is not a directory"), std::string::npos)
      << file.output;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--progress-interval", "nan"}, {"--progress-interval", "inf"},
        {"--progress-interval", "1e-300"}, {"--min-pass-rate", "nan"}, {"--min-pass-rate", "-inf"}}) {
    std::vector<std::string> full = {"run", data("quick.yaml"), "--out", (dir / "out").string()};
    full.insert(full.end(), args.begin(), args.end());
    const Result r = kforge(full);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args[1] << ": " << r.output;
    EXPECT_LT(r.output.size(), 2000u) << r.output;
    EXPECT_FALSE(fs::exists(dir / "out"));
  }
}

// --resume where there is no run to continue: no store is an error (a mistyped --out); a
// store without a run beside results is one emptied or replaced by another process, an
// error too. A store without a run and no results is what a kforge killed in its first
// milliseconds leaves (nothing was saved): the run starts from the start, saying so.
TEST(CommandLine, ResumeWithNoRunToContinue) {
  Scratch dir("resume-nothing");
  const Result none = kforge({"run", data("quick.yaml"), "--out", (dir / "none").string(), "--resume"});
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("holds no run to continue (kforge.db does not exist)"), std::string::npos) << none.output;
  EXPECT_FALSE(fs::exists(dir / "none"));

  fs::create_directories(dir / "emptied");
  write_file(dir / "emptied" / "kforge.db", "");
  write_file(dir / "emptied" / "results.jsonl", R"({"job":0,"task":"task-0000","status":"pass"})" "\n");
  const Result emptied = kforge({"run", data("quick.yaml"), "--out", (dir / "emptied").string(), "--resume"});
  EXPECT_EQ(emptied.exit_code, 2) << emptied.output;
  EXPECT_NE(emptied.output.find("holds no run to continue (kforge.db is empty, yet results.jsonl holds results)"),
            std::string::npos)
      << emptied.output;
  EXPECT_EQ(fs::file_size(dir / "emptied" / "kforge.db"), 0u) << "left as it was";

  for (const std::string store : {"zero-bytes", "schema-only"}) {
    const fs::path out = dir / store;
    fs::create_directories(out);
    if (store == "zero-bytes") {
      write_file(out / "kforge.db", "");
    } else {
      // A store as a run leaves it before its run row: the schema, no run.
      ASSERT_EQ(kforge({"run", data("quick.yaml"), "--out", out.string(), "--progress", "off"}).exit_code, 0);
      store_exec(out, "DELETE FROM attempts; DELETE FROM jobs; DELETE FROM tasks; DELETE FROM verdict_cache; "
                      "DELETE FROM artifacts; DELETE FROM runs");
      fs::remove(out / "results.jsonl");
    }
    const Result fresh = kforge({"run", data("quick.yaml"), "--out", out.string(), "--resume", "--progress", "off"});
    EXPECT_EQ(fresh.exit_code, 0) << store << ": " << fresh.output;
    EXPECT_NE(fresh.output.find("holds no run to continue (kforge.db holds none and results.jsonl no results"),
              std::string::npos)
        << fresh.output;
    expect_complete(out);
  }
}

// ---- timeouts on time, whatever the stage does ---------------------------------------------

// demo.busy spins for 60 s and never looks at its deadline: the job leaves with
// stage_timeout within max(2 s, 5%) of the timeout, idle or with the other job spinning.
TEST(Timeouts, AStageThatNeverPollsItsDeadlineEndsOnTime) {
  Scratch dir("busy");
  for (const double timeout : {1.0, 2.0, 5.0}) {
    const fs::path out = dir / ("out-" + std::to_string(static_cast<int>(timeout)));
    const Result r = kforge({"run", data("busy.yaml"), "--out", out.string(), "--progress", "off", "--set",
                             "busy_timeout=" + std::to_string(timeout)},
                            60);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const double allowed = timeout + std::max(2.0, 0.05 * timeout);
    EXPECT_LT(r.seconds, allowed + 1.5) << "the process (start-up included) outlived its jobs";
    std::ifstream in(out / "results.jsonl");
    std::string text;
    int jobs = 0;
    while (std::getline(in, text)) {
      const auto line = nlohmann::json::parse(text);
      EXPECT_EQ(line["error_class"], "stage_timeout") << text;
      const double seconds = line["stages"][0]["seconds"];
      EXPECT_GE(seconds, timeout);
      EXPECT_LT(seconds, allowed) << text;
      std::printf("demo.busy, timeout %.0f s: the job left after %.3f s\n", timeout, seconds);
      ++jobs;
    }
    EXPECT_EQ(jobs, 2);
  }
}

// eval stages keep a share of a short stage timeout for the harness's answer instead of a
// fixed 2 s: a 2 s stage still runs its candidate (once the harness server is up: the first
// job may spend its time starting it).
TEST(Timeouts, EvalStagesWithATimeoutOfTwoSecondsStillRun) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no /usr/bin/python3 with torch for the evaluation harness";
  }
  Scratch dir("eval-short");
  const fs::path out = dir / "out";
  const Result r = kforge({"run", data("eval_short_timeout.yaml"), "--out", out.string(), "--progress", "off"}, 300,
                          {{"XDG_CACHE_HOME", (dir / "cache").string()}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int ran = 0;
  std::ifstream in(out / "results.jsonl");
  for (std::string text; std::getline(in, text);) {
    const auto line = nlohmann::json::parse(text);
    const std::string message = line["stages"][0].value("message", "");
    EXPECT_EQ(message.find("left no time to run the request"), std::string::npos) << text;
    if (line["status"] == "pass") ++ran;
  }
  EXPECT_GE(ran, 1) << "no job ran its candidate within a 2 s stage timeout: " << r.output;
}

// ---- LLM API faults ------------------------------------------------------------------------

// A server on 127.0.0.1 that answers its first `garbled` connections with bytes and no
// status line (a crashed proxy), then as an OpenAI-compatible API with a fenced kernel.
class GarblingServer {
 public:
  explicit GarblingServer(int garbled) : garbled_(garbled) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    socklen_t length = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    ::listen(fd_, 16);
    thread_ = std::thread([this] { serve(); });
  }
  ~GarblingServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  int connections() const { return connections_; }

 private:
  void serve() {
    for (;;) {
      const int client = ::accept(fd_, nullptr, nullptr);
      if (client < 0) return;
      char buffer[65536];
      std::string request;
      // Headers, then the body its Content-Length announces.
      for (ssize_t n; (n = ::recv(client, buffer, sizeof buffer, 0)) > 0;) {
        request.append(buffer, static_cast<size_t>(n));
        const size_t end = request.find("\r\n\r\n");
        if (end == std::string::npos) continue;
        const size_t length_at = request.find("Content-Length: ");
        const size_t length = length_at == std::string::npos ? 0 : std::stoul(request.substr(length_at + 16));
        if (request.size() >= end + 4 + length) break;
      }
      std::string answer;
      if (connections_++ < garbled_) {
        answer = "garbage without a status line\r\n";
      } else {
        const nlohmann::json body = {
            {"choices", {{{"message", {{"role", "assistant"}, {"content", "```cpp\nint x;\n```"}}}, {"finish_reason", "stop"}}}},
            {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}};
        const std::string text = body.dump();
        answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(text.size()) +
                 "\r\nConnection: close\r\n\r\n" + text;
      }
      ::send(client, answer.data(), answer.size(), MSG_NOSIGNAL);
      ::close(client);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  int garbled_;
  std::atomic<int> connections_{0};
  std::thread thread_;
};

TEST(LlmFaults, AnAnswerWithoutAStatusLineIsRetried) {
  Scratch dir("no-status-line");
  GarblingServer server(2);
  const fs::path out = dir / "out";
  const Result r = kforge({"run", data("llm_live.yaml"), "--out", out.string(), "--progress", "off", "--set",
                           "url=" + server.url()},
                          60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto lines = read_results(out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].status, "pass") << slurp(out / "results.jsonl");
  EXPECT_EQ(server.connections(), 3) << "two garbled answers, then the one that was read";
  EXPECT_NE(r.output.find("retry 1/3"), std::string::npos) << r.output;
}

// The longest stage timeout (1e9 s) is no deadline to an LLM request, not an overflowed
// clock that fails it at once.
TEST(LlmFaults, TheLongestStageTimeoutIsNoDeadline) {
  Scratch dir("longest-timeout");
  GarblingServer server(0);
  const fs::path out = dir / "out";
  const Result r = kforge({"run", data("llm_live.yaml"), "--out", out.string(), "--progress", "off", "--set",
                           "url=" + server.url(), "--set", "stage_timeout=1e9s"},
                          60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto lines = read_results(out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].status, "pass") << slurp(out / "results.jsonl");
}

}  // namespace
