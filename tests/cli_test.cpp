// End-to-end: the real kforge binary on real pipeline files.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Starts kforge with `args`; its output goes to a file so nothing blocks on a pipe.
class Kforge {
 public:
  explicit Kforge(std::vector<std::string> args) : log_(fs::temp_directory_path() / ("kforge-cli-" + std::to_string(getpid()) + "-" + std::to_string(counter_++) + ".log")) {
    std::vector<std::string> argv_strings = {KFORGE_BINARY};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    EXPECT_EQ(posix_spawn(&pid_, KFORGE_BINARY, &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Kforge() { fs::remove(log_); }

  void signal(int sig) { kill(pid_, sig); }

  Result wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    Result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ifstream in(log_);
    std::stringstream text;
    text << in.rdbuf();
    r.output = text.str();
    return r;
  }

 private:
  static inline int counter_ = 0;
  fs::path log_;
  pid_t pid_ = -1;
};

Result kforge(std::vector<std::string> args) { return Kforge(std::move(args)).wait(); }

std::string source(const std::string& relative) { return std::string(KFORGE_SOURCE_DIR) + "/" + relative; }
std::string data(const std::string& name) { return std::string(KFORGE_TEST_DATA_DIR) + "/" + name; }

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("kforge-cli-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir;
}

std::vector<nlohmann::json> read_results(const fs::path& dir) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(dir / "results.jsonl");
  std::string line;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

TEST(Cli, VersionAndHelp) {
  auto r = kforge({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("kforge 0."), std::string::npos) << r.output;
  for (std::vector<std::string> args : {std::vector<std::string>{"--help"}, {"run", "--help"}, {"validate", "--help"},
                                        {"plugins", "list", "--help"}, {"plugins", "describe", "--help"}, {"schema", "--help"}}) {
    auto help = kforge(args);
    EXPECT_EQ(help.exit_code, 0) << args.front() << ": " << help.output;
    EXPECT_NE(help.output.find("Usage"), std::string::npos) << help.output;
  }
}

TEST(Cli, ValidateAcceptsTheDemoPipeline) {
  auto r = kforge({"validate", source("pipelines/demo.yaml")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ok"), std::string::npos);
}

TEST(Cli, ValidateReportsFileLineColumnAndExitsTwo) {
  auto r = kforge({"validate", data("bad_key.yaml")});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad_key.yaml:8:5: error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("concurency"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("concurrency"), std::string::npos) << r.output;  // the suggestion
}

// validate creates and destroys every stage and the task source, so what their constructors
// refuse is a located configuration error before anything runs, for validate and run alike.
TEST(Cli, ValidateAndRunReportWhatConstructorsRefuseAtTheirPlace) {
  auto validate = kforge({"validate", data("bad_create.yaml")});
  EXPECT_EQ(validate.exit_code, 2) << validate.output;
  EXPECT_NE(validate.output.find("bad_create.yaml:8:5: error: stage 'only' (kernelbench.candidate_files) could not "
                                 "be created: dir '"),
            std::string::npos)
      << validate.output;
  EXPECT_NE(validate.output.find("no-such-directory' is not a directory"), std::string::npos) << validate.output;
  const fs::path out = fresh_dir("bad-create");
  auto run = kforge({"run", data("bad_create.yaml"), "--out", out.string()});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("bad_create.yaml:8:5: error:"), std::string::npos) << run.output;
  EXPECT_FALSE(fs::exists(out)) << "nothing ran, nothing was written";
}

// A kind's former name (tasks.kernelbench, candidates.files) still works for this release:
// the kind it names now runs, and each former name is warned about once, with the new one.
TEST(Cli, FormerKindNamesWorkWithOneWarningEach) {
  const fs::path out = fresh_dir("former-names");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"validate", data("former_names.yaml")},
        std::vector<std::string>{"run", data("former_names.yaml"), "--out", out.string(), "--progress", "off",
                                 "--report-format", "json"}}) {
    const Result r = kforge(args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    for (const auto& [former, now, where] : {std::tuple{"tasks.kernelbench", "kernelbench.suite", ":6:9: warning: "},
                                            std::tuple{"candidates.files", "kernelbench.candidate_files", ":11:11: warning: "}}) {
      const std::string warning = std::string("'") + former + "' is the former name of '" + now +
                                  "' (plugin kernelbench), accepted for this release only: write uses: " + now;
      const size_t at = r.output.find(warning);
      EXPECT_NE(at, std::string::npos) << r.output;
      EXPECT_EQ(r.output.find(warning, at + 1), std::string::npos) << "warned twice:\n" << r.output;
      EXPECT_NE(r.output.find(std::string("former_names.yaml") + where + "'" + former), std::string::npos) << r.output;
    }
  }
  const auto results = read_results(out);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& line : results) EXPECT_EQ(line["status"], "pass") << line;
  fs::remove_all(out);
}

// A parameter's former name (eval's timeout_s, cpu_s, reference_max_age_s, now durations)
// still works for this release: a warning at each place, naming the new one; describe says
// it too.
TEST(Cli, FormerParameterNamesWorkWithAWarningAtEachPlace) {
  const Result r = kforge({"validate", data("former_params.yaml")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const auto& [former, now, where] : {std::tuple{"timeout_s", "timeout", ":11:25: warning: "},
                                          std::tuple{"cpu_s", "cpu_time", ":11:40: warning: "},
                                          std::tuple{"reference_max_age_s", "reference_max_age", ":11:52: warning: "}}) {
    const std::string warning = std::string("former_params.yaml") + where + "'" + former +
                                "' is the former name of parameter '" + now +
                                "' of stage 'run' (eval.run), accepted for this release only: write " + now;
    EXPECT_NE(r.output.find(warning), std::string::npos) << warning << "\n" << r.output;
  }
  const Result describe = kforge({"plugins", "describe", "eval.run"});
  EXPECT_EQ(describe.exit_code, 0) << describe.output;
  EXPECT_NE(describe.output.find("(formerly timeout_s)"), std::string::npos) << describe.output;
}

TEST(Cli, UnknownStageKindRunsNothing) {
  const fs::path out = fresh_dir("unknown");
  auto r = kforge({"run", data("unknown_kind.yaml"), "--out", out.string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("demo.sleep"), std::string::npos) << r.output;  // did you mean
  EXPECT_FALSE(fs::exists(out / "results.jsonl"));
  // validate says the same, and where plugins come from: the kind may be a plugin's that
  // is not loaded rather than a typo.
  auto validate = kforge({"validate", data("unknown_kind.yaml")});
  EXPECT_EQ(validate.exit_code, 2) << validate.output;
  EXPECT_NE(validate.output.find("unknown_kind.yaml:7:11: error: unknown stage kind 'demo.sleeep'; did you mean "
                                 "'demo.sleep'?"),
            std::string::npos)
      << validate.output;
  EXPECT_NE(validate.output.find("KFORGE_PLUGIN_PATH"), std::string::npos) << validate.output;
  EXPECT_NE(validate.output.find("--plugin-dir DIR"), std::string::npos) << validate.output;
}

TEST(Cli, RunsTheDemoPipelineAndWritesEveryJobOnce) {
  const fs::path out = fresh_dir("demo");
  auto r = kforge({"run", source("pipelines/demo.yaml"), "--out", out.string(), "--log-level", "warn"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto results = read_results(out);
  ASSERT_EQ(results.size(), 40u);  // 20 tasks x k=2
  // Lines come as jobs finish; each job once.
  std::sort(results.begin(), results.end(), [](const auto& a, const auto& b) { return a["job"] < b["job"]; });
  for (size_t i = 0; i < results.size(); ++i) EXPECT_EQ(results[i]["job"], i);
  // task-0003 fails its check every time: two fix rounds, then it ends failed.
  const auto& failing = results[6];
  EXPECT_EQ(failing["task"], "task-0003");
  EXPECT_EQ(failing["status"], "fail");
  EXPECT_EQ(failing["round"], 2);
  std::vector<std::string> stages;
  for (const auto& s : failing["stages"]) stages.push_back(s["stage"]);
  EXPECT_EQ(stages, (std::vector<std::string>{"generate", "check", "fix", "check", "fix", "check"}));
  EXPECT_EQ(results[0]["status"], "pass");
  EXPECT_NE(r.output.find("40 jobs: 36 passed, 4 failed"), std::string::npos) << r.output;
}

TEST(Cli, SetOverridesAVariable) {
  const fs::path out = fresh_dir("set");
  auto r = kforge({"run", source("pipelines/demo.yaml"), "--set", "tasks=3", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_results(out).size(), 6u);
}

// The bundled pipelines name their run with `label: ${strategy:-NAME}`, so --set strategy
// names a strategy in the reports, as it always has.
TEST(Cli, SetStrategyNamesTheRunInItsReports) {
  const fs::path out = fresh_dir("strategy");
  auto r = kforge({"run", source("pipelines/demo.yaml"), "--set", "tasks=2", "--set", "strategy=smart-selection",
                   "--out", out.string(), "--report-format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(out / "report.json");
  EXPECT_EQ(nlohmann::json::parse(in)["strategy"], "smart-selection");
}

TEST(Cli, FixRoundsTakeOnlyTheCandidatesOwnFaults) {
  const fs::path out = fresh_dir("not-judged");
  auto r = kforge({"run", data("not_judged.yaml"), "--out", out.string(), "--progress", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, nlohmann::json> by_task;
  for (const auto& line : read_results(out)) by_task[line["task"]] = line;
  ASSERT_EQ(by_task.size(), 4u) << r.output;
  auto stages_of = [&](const std::string& task) {
    std::string path;
    for (const auto& s : by_task[task]["stages"]) path += (path.empty() ? "" : " ") + s["stage"].get<std::string>();
    return path;
  };
  // The candidate's own failure goes round the fix loop twice.
  EXPECT_EQ(by_task["task-0000"]["status"], "fail");
  EXPECT_EQ(by_task["task-0000"]["round"], 2);
  EXPECT_EQ(stages_of("task-0000"), "judge fix judge fix judge");
  // An error verdict, and a fail whose class blames the harness, end the job at once.
  EXPECT_EQ(by_task["task-0001"]["status"], "error");
  EXPECT_EQ(by_task["task-0001"]["error_class"], "host_error");
  EXPECT_EQ(by_task["task-0001"]["round"], 0);
  EXPECT_EQ(stages_of("task-0001"), "judge");
  EXPECT_EQ(by_task["task-0002"]["status"], "error") << by_task["task-0002"].dump();
  EXPECT_EQ(by_task["task-0002"]["error_class"], "harness_error");
  EXPECT_EQ(stages_of("task-0002"), "judge harness");
  EXPECT_EQ(by_task["task-0003"]["status"], "pass");
  // The reports count them apart from the candidates' failures.
  EXPECT_NE(r.output.find("4 jobs: 1 passed, 1 failed, 2 errors"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("final error class of the 1 failed candidates"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the 2 candidates whose stage could not judge them"), std::string::npos) << r.output;
  std::ifstream report_file(out / "report.json");
  const nlohmann::json report = nlohmann::json::parse(report_file);
  EXPECT_EQ(report["summary"]["failed_candidates"], 1);
  EXPECT_EQ(report["summary"]["not_judged_candidates"], 2);
  EXPECT_EQ(report["errors"].size(), 1u);
  ASSERT_EQ(report["not_judged"].size(), 2u) << report["not_judged"].dump();
  std::set<std::string> classes;
  for (const auto& e : report["not_judged"]) classes.insert(e["error_class"]);
  EXPECT_EQ(classes, (std::set<std::string>{"harness_error", "host_error"}));

  // A pipeline that routes error verdicts into the fix stage is refused where it says so.
  auto refused = kforge({"validate", data("error_into_fix.yaml")});
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("error_into_fix.yaml:13:19: error: route 'error' of stage 'judge' leads into the fix "
                                "stage 'fix'"),
            std::string::npos)
      << refused.output;
}

TEST(Cli, PluginsListAndDescribe) {
  auto list = kforge({"plugins", "list"});
  EXPECT_EQ(list.exit_code, 0) << list.output;
  for (const char* kind : {"demo.range", "demo.noop", "demo.sleep", "demo.flaky", "demo.judge"}) {
    EXPECT_NE(list.output.find(kind), std::string::npos) << kind;
  }
  auto describe = kforge({"plugins", "describe", "demo.sleep"});
  EXPECT_EQ(describe.exit_code, 0) << describe.output;
  EXPECT_NE(describe.output.find("seconds"), std::string::npos);
  EXPECT_NE(describe.output.find("default: 0.1"), std::string::npos) << describe.output;
  EXPECT_NE(describe.output.find("its own threads"), std::string::npos);
  auto unknown = kforge({"plugins", "describe", "demo.sleap"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("did you mean 'demo.sleep'"), std::string::npos) << unknown.output;
}

TEST(Cli, SchemaIsJsonWithEveryKind) {
  auto r = kforge({"schema", "--log-level", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto schema = nlohmann::json::parse(r.output);
  const std::string text = schema.dump();
  for (const char* kind : {"demo.range", "demo.sleep", "demo.judge"}) {
    EXPECT_NE(text.find(kind), std::string::npos) << kind;
  }
}

// Time is spelled one way: every parameter of a bundled kind that holds a length of time
// (named seconds, timeout, backoff, age, or ending in _s) is a duration (90s, 2m, 500ms).
TEST(Cli, EveryTimeParameterOfEveryBundledKindIsADuration) {
  auto r = kforge({"schema", "--log-level", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto schema = nlohmann::json::parse(r.output);
  const std::regex time_name("(^|_)(s|seconds|timeout|backoff|age)(_|$)");
  const auto is_duration = [](const nlohmann::json& property) {
    if (!property.contains("anyOf")) return false;
    for (const auto& alternative : property["anyOf"]) {
      if (alternative.value("pattern", "").find("(ms|s|m|h)") != std::string::npos) return true;
    }
    return false;
  };
  int checked = 0;
  for (const char* part : {"stage", "tasks"}) {
    for (const auto& kind : schema["$defs"][part]["allOf"]) {
      const std::string name = kind["if"]["properties"]["uses"]["const"];
      const nlohmann::json parameters = kind["then"]["properties"]["with"].value("properties", nlohmann::json::object());
      for (const auto& [parameter, property] : parameters.items()) {
        if (!std::regex_search(parameter, time_name)) continue;
        ++checked;
        EXPECT_TRUE(is_duration(property)) << name << "'s " << parameter << " is not a duration: " << property.dump();
      }
    }
  }
  EXPECT_GE(checked, 10);  // demo's, eval's and llm's
}

// A unit belongs in the value (timeout: 30s), not in the name: no bundled parameter's name
// ends in one, but a former name's, which the schema marks deprecated and types as the
// parameter it names.
TEST(Cli, NoBundledParameterNamesItsUnitButAFormerName) {
  auto r = kforge({"schema", "--log-level", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto schema = nlohmann::json::parse(r.output);
  const std::regex unit_name("_(s|ms|seconds|minutes)$");
  int former = 0;
  for (const char* part : {"stage", "tasks"}) {
    for (const auto& kind : schema["$defs"][part]["allOf"]) {
      const std::string name = kind["if"]["properties"]["uses"]["const"];
      const nlohmann::json parameters = kind["then"]["properties"]["with"].value("properties", nlohmann::json::object());
      for (const auto& [parameter, property] : parameters.items()) {
        if (!property.value("deprecated", false)) {
          EXPECT_FALSE(std::regex_search(parameter, unit_name)) << name << "'s " << parameter << " names a unit";
          continue;
        }
        ++former;
        const std::string description = property.value("description", "");
        const std::string prefix = "The former name of ";
        ASSERT_EQ(description.rfind(prefix, 0), 0u) << name << "'s " << parameter << ": " << description;
        const std::string now = description.substr(prefix.size(), description.find(',') - prefix.size());
        ASSERT_TRUE(parameters.contains(now)) << name << "'s " << parameter << " names " << now;
        nlohmann::json current = parameters[now];
        nlohmann::json old = property;
        for (nlohmann::json* p : {&current, &old}) {
          p->erase("description");
          p->erase("deprecated");
        }
        EXPECT_EQ(old, current) << name << "'s " << parameter << " takes what " << now << " takes";
      }
    }
  }
  EXPECT_GE(former, 10);  // eval's timeout_s, cpu_s, start_timeout_s, ... in each stage
}

TEST(Cli, InterruptKeepsWholeResultsExits130AndResumeFinishesTheRest) {
  const fs::path out = fresh_dir("interrupt");
  Kforge run({"run", data("slow.yaml"), "--out", out.string()});
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  run.signal(SIGINT);
  auto r = run.wait();
  EXPECT_EQ(r.exit_code, 130) << r.output;
  auto results = read_results(out);  // every line parses: nothing half-written
  EXPECT_GT(results.size(), 0u);
  EXPECT_LT(results.size(), 400u);
  // Written jobs are whole, each once (in the order they finished). A job that was between
  // its two stages when the signal came is cut short and not written.
  std::set<int> written;
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i]["stages"].size(), 2u) << results[i].dump();
    EXPECT_TRUE(written.insert(results[i]["job"].get<int>()).second) << results[i].dump();
  }
  EXPECT_NE(r.output.find("interrupted"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(", " + std::to_string(results.size()) + " jobs:"), std::string::npos) << r.output;

  // --resume runs what the interrupt left: in the end every job once, whole.
  auto resumed = kforge({"run", data("slow.yaml"), "--out", out.string(), "--resume"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto all = read_results(out);
  std::set<int> jobs;
  for (const auto& line : all) {
    EXPECT_EQ(line["stages"].size(), 2u) << line.dump();
    EXPECT_EQ(line["status"], "pass") << line.dump();
    jobs.insert(line["job"].get<int>());
  }
  EXPECT_EQ(all.size(), 400u);
  EXPECT_EQ(jobs.size(), 400u);
}

}  // namespace
