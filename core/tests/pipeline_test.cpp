// Pipeline loading: the format of docs/pipelines.md, its defaults, and one test per class
// of configuration error with the exact line:col it is reported at.
#include "engine/pipeline/load.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <kforge/sdk.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/registry.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;
namespace sdk = kforge::sdk;

// ---- stage and source kinds the test pipelines use (never run, only described) ----------

class ListSource : public sdk::Source {
 public:
  static constexpr const char* kName = "tasks.list";
  static constexpr const char* kDoc = "Tasks from the files of a directory.";
  static std::vector<std::string> former_names() { return {"tasks.dir"}; }
  static std::vector<sdk::Param> params() {
    return {{"path", KF_PARAM_STRING, nullptr, true, "Directory of task files."},
            {"limit", KF_PARAM_INT, "0", false, "At most this many tasks; 0 for all."},
            {"levels", KF_PARAM_STRING_LIST, "[]", false, "Levels to take."}};
  }
  explicit ListSource(const sdk::Config&) {}
  bool next(sdk::Task&) override { return false; }
};

class Noop : public sdk::Stage {
 public:
  static constexpr const char* kName = "test.noop";
  static constexpr const char* kDoc = "Passes every job.";
  static std::vector<std::string> former_names() { return {"test.nothing"}; }
  explicit Noop(const sdk::Config&) {}
  void process(sdk::Job& job) override { job.pass(); }
};

class Generate : public sdk::Stage {
 public:
  static constexpr const char* kName = "llm.generate";
  static constexpr const char* kDoc = "Asks a model for a candidate.";
  static std::vector<sdk::Param> params() {
    return {{"model", KF_PARAM_STRING, nullptr, true, "Model to call."},
            {"temperature", KF_PARAM_FLOAT, "0.2", false, "Sampling temperature."},
            {"max_tokens", KF_PARAM_INT, "1024", false, "Longest answer."},
            {"stream", KF_PARAM_BOOL, "false", false, "Stream the answer."},
            {"stop", KF_PARAM_STRING_LIST, "[END, STOP]", false, "Stop sequences."},
            {"options", KF_PARAM_OBJECT, "{retries: 3, style: terse}", false, "Client options."},
            {"note", KF_PARAM_STRING, nullptr, false, "Free text."}};
  }
  explicit Generate(const sdk::Config&) {}
  void process(sdk::Job& job) override { job.pass(); }
};

class Check : public sdk::Stage {
 public:
  static constexpr const char* kName = "check.ast";
  static constexpr const char* kDoc = "Static checks.";
  static std::vector<std::string> routes() { return {"cached"}; }
  static std::vector<sdk::Param> params() {
    return {{"strict", KF_PARAM_BOOL, "true", false, "Fail on warnings."}};
  }
  explicit Check(const sdk::Config&) {}
  void process(sdk::Job& job) override { job.pass(); }
};

class Fix : public sdk::Stage {
 public:
  static constexpr const char* kName = "llm.fix";
  static constexpr const char* kDoc = "Asks a model to fix a candidate.";
  explicit Fix(const sdk::Config&) {}
  void process(sdk::Job& job) override { job.pass(); }
};

// A plugin bug: a default that is not of its parameter's type.
class BadDefault : public sdk::Stage {
 public:
  static constexpr const char* kName = "bad.default";
  static constexpr const char* kDoc = "Declares a broken default.";
  static std::vector<sdk::Param> params() {
    return {{"count", KF_PARAM_INT, "many", false, "How many."}};
  }
  explicit BadDefault(const sdk::Config&) {}
  void process(sdk::Job& job) override { job.pass(); }
};

// Parameters with choices, ranges and a duration.
class Limits : public sdk::Stage {
 public:
  static constexpr const char* kName = "test.limits";
  static constexpr const char* kDoc = "Declares what its parameters accept.";
  static std::vector<sdk::Param> params() {
    return {sdk::Param{"level", KF_PARAM_STRING, "low", false, "How much."}.one_of({"low", "high"}),
            sdk::Param{"tags", KF_PARAM_STRING_LIST, "[]", false, "Which."}.one_of({"a", "b"}),
            sdk::Param{"ratio", KF_PARAM_FLOAT, "0.5", false, "A share."}.above(0).at_most(1),
            sdk::Param{"count", KF_PARAM_INT, "1", false, "At least one."}.at_least(1),
            sdk::Param{"wait", KF_PARAM_DURATION, "90s", false, "How long."}.above(0).formerly({"wait_s"})};
  }
  explicit Limits(const sdk::Config&) {}
  void process(sdk::Job& job) override { job.pass(); }
};

// Six named routes: with pass, fail and error, nine ways out.
class Router : public sdk::Stage {
 public:
  static constexpr const char* kName = "test.router";
  static constexpr const char* kDoc = "Routes anywhere.";
  static std::vector<std::string> routes() { return {"r1", "r2", "r3", "r4", "r5", "r6"}; }
  explicit Router(const sdk::Config&) {}
  void process(sdk::Job& job) override { job.pass(); }
};

using TestPlugin = sdk::detail::Plugin<ListSource, Noop, Generate, Check, Fix, Limits, Router>;

std::string data(const std::string& name) {
  return (fs::path(KFORGE_TEST_DATA_DIR) / "pipelines" / name).lexically_normal().string();
}

std::string data_dir(const std::string& sub = "") {
  fs::path dir = fs::path(KFORGE_TEST_DATA_DIR) / "pipelines";
  if (!sub.empty()) dir /= sub;
  return dir.lexically_normal().string();
}

std::string all_of(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) out += d.format() + "\n";
  return out;
}

// Passes when some diagnostic sits at line:col of a file whose path ends with `file` and
// says `text`.
::testing::AssertionResult has_error(const std::vector<Diagnostic>& diagnostics, int line,
                                     int column, const std::string& text,
                                     const std::string& file = "") {
  for (const Diagnostic& d : diagnostics) {
    if (d.where.line == line && d.where.column == column && d.where.file.ends_with(file) &&
        d.message.find(text) != std::string::npos) {
      return ::testing::AssertionSuccess();
    }
  }
  return ::testing::AssertionFailure() << "no error at " << file << ":" << line << ":" << column
                                       << " saying \"" << text << "\"; got:\n"
                                       << all_of(diagnostics);
}

const StagePlan& stage(const Plan& spec, const std::string& id) {
  auto it = std::find_if(spec.stages.begin(), spec.stages.end(),
                         [&](const StagePlan& s) { return s.id == id; });
  if (it == spec.stages.end()) throw std::runtime_error("no stage " + id);
  return *it;
}

// A route with its targets named by stage id, as the file wrote them.
struct NamedRoute {
  std::string target;
  int max_rounds;
  std::string exhausted_target;
  SourceLocation where;
};

NamedRoute route(const Plan& spec, const StagePlan& s, const std::string& on) {
  auto it = std::find_if(s.routes.begin(), s.routes.end(),
                         [&](const RoutePlan& r) { return r.on == on; });
  if (it == s.routes.end()) throw std::runtime_error("no route " + on + " in " + s.id);
  return {spec.target_id(it->target), it->max_rounds, spec.target_id(it->exhausted_target), it->where};
}

std::vector<std::string> route_names(const StagePlan& s) {
  std::vector<std::string> names;
  for (const RoutePlan& r : s.routes) names.push_back(r.on);
  return names;
}

const ParamValue& param(const StageConfig& config, const std::string& name) {
  auto it = config.values.find(name);
  if (it == config.values.end()) throw std::runtime_error("no parameter " + name);
  return it->second;
}

class PipelineTest : public ::testing::Test {
 protected:
  PipelineTest() {
    static const TestPlugin plugin("test", "1.0.0");
    registry.add(&plugin.descriptor, "test");
  }

  Plan load(const std::string& name, const Overrides& overrides = {}) {
    return load_pipeline(data(name), registry, overrides);
  }

  std::vector<Diagnostic> errors(const std::string& name, const Overrides& overrides = {}) {
    try {
      load_pipeline(data(name), registry, overrides);
    } catch (const ConfigError& e) {
      return e.diagnostics();
    }
    ADD_FAILURE() << name << " loaded without errors";
    return {};
  }

  Registry registry;
};

// ---- pipelines that load ------------------------------------------------------------------

TEST_F(PipelineTest, LoadsCompletePipeline) {
  const Plan spec = load("good.yaml");
  EXPECT_EQ(spec.name, "demo-cpu");
  EXPECT_EQ(spec.file, data("good.yaml"));
  EXPECT_TRUE(fs::path(spec.file).is_absolute());
  EXPECT_EQ(spec.k, 3);
  EXPECT_EQ(spec.max_in_flight, 64);
  EXPECT_EQ(spec.source.kind->name, "tasks.list");
  EXPECT_EQ(spec.source.config.base_dir, data_dir());
  EXPECT_EQ(param(spec.source.config, "path").text, "../tasks");
  EXPECT_EQ(param(spec.source.config, "levels").items, (std::vector<std::string>{"1", "2"}));

  ASSERT_EQ(spec.stages.size(), 4u);
  // The included stage comes first, and is the entry.
  EXPECT_EQ(spec.stages[0].id, "prepare");
  EXPECT_EQ(spec.stages[1].id, "generate");
  EXPECT_EQ(spec.stages[2].id, "check");
  EXPECT_EQ(spec.stages[3].id, "fix");

  const StagePlan& generate = stage(spec, "generate");
  EXPECT_EQ(generate.kind->name, "llm.generate");
  EXPECT_EQ(generate.concurrency, 32);
  EXPECT_DOUBLE_EQ(generate.timeout_seconds, 90);
  EXPECT_EQ(generate.where.line, 13);
  EXPECT_EQ(generate.where.column, 5);
  EXPECT_EQ(param(generate.config, "model").text, "deepseek-chat");
  EXPECT_EQ(param(generate.config, "temperature").text, "0.7");
  EXPECT_EQ(generate.config.base_dir, data_dir());

  EXPECT_DOUBLE_EQ(stage(spec, "fix").timeout_seconds, 0.5);
  EXPECT_DOUBLE_EQ(stage(spec, "prepare").timeout_seconds, 300);
  EXPECT_DOUBLE_EQ(stage(spec, "check").timeout_seconds, 3600);
  EXPECT_EQ(stage(spec, "check").concurrency, 0);  // not given: the executor's default
}

// A kind's former name gets the kind, and one warning per name at its first use, saying
// the new name; the plan holds the kinds by their names.
TEST_F(PipelineTest, AFormerKindNameLoadsTheKindWithOneWarning) {
  const Plan spec = load("former_names.yaml");
  EXPECT_EQ(spec.source.kind->name, "tasks.list");
  ASSERT_EQ(spec.stages.size(), 3u);
  for (const StagePlan& s : spec.stages) EXPECT_EQ(s.kind->name, "test.noop") << s.id;
  ASSERT_EQ(spec.warnings.size(), 2u);
  EXPECT_TRUE(spec.warnings[0].warning);
  EXPECT_EQ(spec.warnings[0].where.line, 5);
  EXPECT_EQ(spec.warnings[0].where.column, 9);
  EXPECT_EQ(spec.warnings[0].message,
            "'tasks.dir' is the former name of 'tasks.list' (plugin test), accepted for this release only: write uses: "
            "tasks.list");
  EXPECT_EQ(spec.warnings[1].where.line, 9) << "the first use only";
  EXPECT_NE(spec.warnings[1].format().find("former_names.yaml:9:11: warning: 'test.nothing' is the former name of "
                                           "'test.noop'"),
            std::string::npos)
      << spec.warnings[1].format();
  EXPECT_TRUE(load("good.yaml").warnings.empty());
}

// A parameter's former name gives the parameter its value, with a warning at each place it
// is written (each needs the edit), saying the new name; a bare number is still seconds.
TEST_F(PipelineTest, AFormerParameterNameGivesTheParameterWithAWarningPerUse) {
  const Plan spec = load("former_params.yaml");
  EXPECT_EQ(param(stage(spec, "first").config, "wait").number, 30);
  EXPECT_EQ(param(stage(spec, "second").config, "wait").number, 120);
  EXPECT_EQ(param(stage(spec, "third").config, "wait").number, 5);
  EXPECT_EQ(stage(spec, "first").config.values.count("wait_s"), 0u) << "the plan knows the parameter by its name";
  ASSERT_EQ(spec.warnings.size(), 2u);
  EXPECT_NE(spec.warnings[0].format().find(
                "former_params.yaml:11:12: warning: 'wait_s' is the former name of parameter 'wait' of stage 'first' "
                "(test.limits), accepted for this release only: write wait (a duration: a bare number is seconds, as "
                "before, or give a unit: 30s, 5m)"),
            std::string::npos)
      << spec.warnings[0].format();
  EXPECT_EQ(spec.warnings[1].where.line, 15);
  EXPECT_EQ(spec.warnings[1].where.column, 7);

  // On the command line too, warned at the argument.
  const Plan set = load("former_params.yaml", Overrides{{{"third.wait_s", "7"}}});
  EXPECT_EQ(param(stage(set, "third").config, "wait").number, 7);
  ASSERT_EQ(set.warnings.size(), 3u);
  EXPECT_EQ(set.warnings[2].where.file, "--set third.wait_s=7") << set.warnings[2].format();
  EXPECT_NE(set.warnings[2].message.find("'wait_s' is the former name of parameter 'wait' of stage 'third'"),
            std::string::npos)
      << set.warnings[2].format();

  EXPECT_TRUE(has_error(errors("former_params_twice.yaml"), 10, 22,
                        "parameter 'wait' of stage 'only' is given twice: 'wait_s' is its former name; keep wait only"));
}

TEST_F(PipelineTest, FillsEveryRouteWithItsDefault) {
  const Plan spec = load("good.yaml");

  // pass goes on in file order; fail and error end the job.
  const StagePlan& prepare = stage(spec, "prepare");
  EXPECT_EQ(route_names(prepare), (std::vector<std::string>{"pass", "fail", "error"}));
  EXPECT_EQ(route(spec, prepare, "pass").target, "generate");
  EXPECT_EQ(route(spec, prepare, "fail").target, "end");
  EXPECT_EQ(route(spec, prepare, "error").target, "end");
  EXPECT_EQ(route(spec, stage(spec, "generate"), "pass").target, "check");

  // A bounded fail edge; error ends the job (an error verdict judged no candidate, so it
  // never follows fail into the fix loop); the named route defaults to end.
  const StagePlan& check = stage(spec, "check");
  EXPECT_EQ(route_names(check), (std::vector<std::string>{"pass", "fail", "error", "cached"}));
  EXPECT_EQ(route(spec, check, "pass").target, "end");
  EXPECT_EQ(route(spec, check, "pass").max_rounds, 0);
  const NamedRoute fail = route(spec, check, "fail");
  EXPECT_EQ(fail.target, "fix");
  EXPECT_EQ(fail.max_rounds, 2);
  EXPECT_EQ(fail.exhausted_target, "end");
  EXPECT_EQ(fail.where.line, 25);
  EXPECT_EQ(fail.where.column, 7);
  const NamedRoute error = route(spec, check, "error");
  EXPECT_EQ(error.target, "end");
  EXPECT_EQ(error.max_rounds, 0);
  EXPECT_EQ(route(spec, check, "cached").target, "end");

  // The last stage's pass would end; this one loops back (bounded through check's fail).
  EXPECT_EQ(route(spec, stage(spec, "fix"), "pass").target, "check");
  EXPECT_EQ(route(spec, stage(spec, "fix"), "fail").target, "end");
}

TEST_F(PipelineTest, IncludeMergesStagesAndVars) {
  const Plan spec = load("good.yaml");
  // The including file's vars win; the included file's others are kept.
  EXPECT_EQ(spec.vars.at("flavour"), "cpu");
  EXPECT_EQ(spec.vars.at("prompt_style"), "terse");
  EXPECT_EQ(spec.vars.at("model"), "deepseek-chat");
  // An included stage resolves paths relative to its own file.
  EXPECT_EQ(stage(spec, "prepare").config.base_dir, data_dir("parts"));
  EXPECT_EQ(stage(spec, "prepare").where.file, data("parts/common.yaml"));
}

TEST_F(PipelineTest, AppliesParameterDefaults) {
  const Plan spec = load("good.yaml");
  const StageConfig& config = stage(spec, "generate").config;
  EXPECT_EQ(param(config, "max_tokens").text, "1024");
  EXPECT_EQ(param(config, "max_tokens").json, "1024");
  EXPECT_EQ(param(config, "stream").text, "false");
  EXPECT_EQ(param(config, "stop").items, (std::vector<std::string>{"END", "STOP"}));
  EXPECT_EQ(param(config, "options").json, R"({"retries":3,"style":"terse"})");
  // Optional without a default: absent, so the plugin's has() says false.
  EXPECT_EQ(config.values.count("note"), 0u);
  EXPECT_EQ(param(stage(spec, "check").config, "strict").text, "true");
  EXPECT_EQ(param(spec.source.config, "limit").text, "0");
  EXPECT_TRUE(stage(spec, "fix").config.values.empty());
}

TEST_F(PipelineTest, ConvertsEveryParameterType) {
  ::unsetenv("KFORGE_TEST_CONCURRENCY");
  const Plan spec = load("params.yaml");
  EXPECT_DOUBLE_EQ(stage(spec, "generate").timeout_seconds, 2.5);  // plain seconds
  EXPECT_EQ(stage(spec, "generate").concurrency, 4);
  const StageConfig& config = stage(spec, "generate").config;

  const ParamValue& model = param(config, "model");  // a number where a string is expected
  EXPECT_EQ(model.type, KF_PARAM_STRING);
  EXPECT_EQ(model.text, "42");
  EXPECT_EQ(model.json, R"("42")");

  const ParamValue& temperature = param(config, "temperature");
  EXPECT_EQ(temperature.type, KF_PARAM_FLOAT);
  EXPECT_DOUBLE_EQ(std::stod(temperature.text), 0.001);
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(temperature.json).get<double>(), 0.001);

  const ParamValue& tokens = param(config, "max_tokens");
  EXPECT_EQ(tokens.type, KF_PARAM_INT);
  EXPECT_EQ(tokens.text, "-7");
  EXPECT_EQ(tokens.json, "-7");

  EXPECT_EQ(param(config, "stream").text, "true");
  EXPECT_EQ(param(config, "stream").json, "true");

  const ParamValue& stop = param(config, "stop");
  EXPECT_EQ(stop.items, (std::vector<std::string>{"a", "b", "3"}));
  EXPECT_EQ(stop.json, R"(["a","b","3"])");

  // Inside an object, plain scalars keep their YAML types and quoted ones are strings.
  EXPECT_EQ(param(config, "options").json,
            R"({"retries":2,"ratio":0.5,"on":true,"off":null,"name":"x","quoted":"12",)"
            R"("nested":{"list":[1,"two"]}})");

  EXPECT_EQ(param(config, "note").text, "${literal}");  // $${ escapes ${
}

TEST_F(PipelineTest, SubstitutesVarsEnvironmentAndDefaults) {
  ::setenv("KFORGE_TEST_LIMIT", "5", 1);
  ::unsetenv("KFORGE_TEST_MODEL");
  const Plan spec = load("vars.yaml");
  EXPECT_EQ(spec.name, "vars-one");
  EXPECT_EQ(param(spec.source.config, "path").text, "/data/tasks");  // a var using a var
  EXPECT_EQ(param(spec.source.config, "limit").text, "5");           // the environment
  EXPECT_EQ(spec.k, 2);  // ${k:-2}: substituted before the type check
  const StageConfig& config = stage(spec, "generate").config;
  EXPECT_EQ(param(config, "model").text, "fallback-model");
  EXPECT_EQ(param(config, "max_tokens").text, "256");
  EXPECT_EQ(spec.vars.at("escaped"), "cost: ${price}");
  EXPECT_EQ(spec.vars.at("tasks_dir"), "/data/tasks");

  ::setenv("KFORGE_TEST_MODEL", "from-env", 1);
  ::setenv("root", "/from-env", 1);  // vars win over the environment
  const Plan again = load("vars.yaml");
  EXPECT_EQ(param(stage(again, "generate").config, "model").text, "from-env");
  EXPECT_EQ(param(again.source.config, "path").text, "/data/tasks");
  ::unsetenv("KFORGE_TEST_MODEL");
  ::unsetenv("root");
  ::unsetenv("KFORGE_TEST_LIMIT");
}

TEST_F(PipelineTest, OverridesSetVarsAndParameters) {
  ::unsetenv("KFORGE_TEST_LIMIT");  // the override replaces the value that needs it
  Overrides overrides;
  overrides.values = {{"suffix", "two"},           {"k", "4"},
                      {"generate.model", "gpt"},   {"generate.max_tokens", "512"},
                      {"generate.stop", "[x, y]"}, {"generate.options", "{a: 1}"},
                      {"tasks.limit", "9"}};
  const Plan spec = load("vars.yaml", overrides);
  EXPECT_EQ(spec.name, "vars-two");
  EXPECT_EQ(spec.k, 4);
  EXPECT_EQ(spec.vars.at("suffix"), "two");
  EXPECT_EQ(param(spec.source.config, "limit").text, "9");
  const StageConfig& config = stage(spec, "generate").config;
  EXPECT_EQ(param(config, "model").text, "gpt");
  EXPECT_EQ(param(config, "max_tokens").text, "512");
  EXPECT_EQ(param(config, "stop").items, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(param(config, "options").json, R"({"a":1})");
}

// ---- one test per class of error -----------------------------------------------------------

TEST_F(PipelineTest, ReportsBadOverrides) {
  Overrides overrides;
  overrides.values = {{"generate.tempature", "0.1"},
                      {"nostage.model", "x"},
                      {"generate.max_tokens", "lots"},
                      {"bad-name", "x"},
                      {"tasks.nope", "1"}};
  const auto e = errors("good.yaml", overrides);
  EXPECT_EQ(e.size(), 5u) << all_of(e);
  EXPECT_TRUE(has_error(e, 0, 0, "has no parameter 'tempature'; did you mean 'temperature'?",
                        "--set generate.tempature=0.1"));
  EXPECT_TRUE(has_error(e, 0, 0, "there is no stage 'nostage'", "--set nostage.model=x"));
  EXPECT_TRUE(has_error(e, 0, 0,
                        "parameter 'max_tokens' of stage 'generate' must be an integer, got 'lots'",
                        "--set generate.max_tokens=lots"));
  EXPECT_TRUE(has_error(e, 0, 0, "'bad-name' is not a variable name", "--set bad-name=x"));
  EXPECT_TRUE(has_error(e, 0, 0, "has no parameter 'nope'", "--set tasks.nope=1"));
}

TEST_F(PipelineTest, ReportsUnknownKeysWithSuggestions) {
  const auto e = errors("unknown_key.yaml");
  EXPECT_EQ(e.size(), 6u) << all_of(e);
  EXPECT_TRUE(has_error(e, 5, 3, "unknown key 'kk' in tasks; did you mean 'k'?"));
  EXPECT_TRUE(has_error(
      e, 10, 5, "unknown key 'concurency' in stage 'generate'; did you mean 'concurrency'?"));
  EXPECT_TRUE(has_error(e, 15, 7,
                        "unknown route 'cachd' in stage 'check' (kind check.ast); did you mean "
                        "'cached'? (allowed: pass, fail, error, cached)"));
  EXPECT_TRUE(has_error(
      e, 16, 28,
      "unknown key 'max_round' in route 'fail' of stage 'check'; did you mean 'max_rounds'?"));
  EXPECT_TRUE(has_error(e, 16, 13, "needs to: and max_rounds:"));
  EXPECT_TRUE(has_error(e, 17, 1, "unknown key 'stagez' at the top level; did you mean 'stages'?"));
}

TEST_F(PipelineTest, ReportsParameterTypeErrors) {
  const auto e = errors("param_errors.yaml");
  EXPECT_EQ(e.size(), 9u) << all_of(e);
  EXPECT_TRUE(
      has_error(e, 9, 14, "parameter 'model' of stage 'generate' must be a string, got a list"));
  EXPECT_TRUE(has_error(e, 10, 20,
                        "parameter 'temperature' of stage 'generate' must be a number, got 'hot'"));
  EXPECT_TRUE(has_error(
      e, 11, 19, "parameter 'max_tokens' of stage 'generate' must be an integer, got '1.5'"));
  EXPECT_TRUE(has_error(e, 12, 15,
                        "parameter 'stream' of stage 'generate' must be true or false, got 'yes'"));
  EXPECT_TRUE(has_error(
      e, 13, 13,
      "parameter 'stop' of stage 'generate' must be a list of strings, got a single value"));
  EXPECT_TRUE(has_error(e, 14, 16, "parameter 'options' of stage 'generate' must be a mapping"));
  EXPECT_TRUE(has_error(e, 15, 7,
                        "unknown parameter 'tempature' for stage 'generate' (llm.generate); did "
                        "you mean 'temperature'?"));
  // An empty value is reported at its key.
  EXPECT_TRUE(has_error(e, 19, 7, "parameter 'model' of stage 'big' has no value"));
  EXPECT_TRUE(has_error(e, 20, 19, "parameter 'max_tokens' of stage 'big' is out of range"));
}

TEST_F(PipelineTest, ChoicesRangesAndDurationsAreCheckedWhereTheValueIsWritten) {
  const auto e = errors("constraints.yaml");
  EXPECT_EQ(e.size(), 5u) << all_of(e);
  EXPECT_TRUE(has_error(e, 12, 14, "parameter 'level' of stage 'bad' must be 'low' or 'high', got 'hihg'; did you "
                                   "mean 'high'?"));
  EXPECT_TRUE(has_error(e, 13, 13, "parameter 'tags' of stage 'bad' must be 'a' or 'b', got 'c'"));
  EXPECT_TRUE(has_error(e, 14, 14, "parameter 'ratio' of stage 'bad' must be greater than 0, got 0"));
  EXPECT_TRUE(has_error(e, 15, 14, "parameter 'count' of stage 'bad' must be at least 1, got 0"));
  EXPECT_TRUE(has_error(e, 16, 13, "parameter 'wait' of stage 'bad' must be a duration (90s, 2m, 500ms, 1h, or a "
                                   "number of seconds; at most 1e9 s), got 'soon'"));
}

TEST_F(PipelineTest, DurationsAreSecondsWhateverTheUnit) {
  Overrides fixed;
  fixed.values["bad.level"] = "high";
  fixed.values["bad.tags"] = "[b]";
  fixed.values["bad.ratio"] = "1";
  fixed.values["bad.count"] = "2";
  fixed.values["bad.wait"] = "500ms";
  const Plan spec = load("constraints.yaml", fixed);
  const ParamValue& written = param(stage(spec, "ok").config, "wait");
  EXPECT_EQ(written.text, "2m");
  EXPECT_DOUBLE_EQ(written.number, 120);
  EXPECT_EQ(written.json, "120.0");  // 2m and 120s are one configuration
  EXPECT_DOUBLE_EQ(param(stage(spec, "bad").config, "wait").number, 0.5);
  EXPECT_DOUBLE_EQ(param(stage(spec, "plain").config, "wait").number, 90);  // the default, 90s
  EXPECT_DOUBLE_EQ(param(stage(spec, "plain").config, "count").integer, 1);

  Overrides wrong;
  wrong.values["ok.count"] = "0";
  const auto e = errors("constraints.yaml", wrong);
  EXPECT_TRUE(has_error(e, 0, 0, "parameter 'count' of stage 'ok' must be at least 1, got 0", "--set ok.count=0"))
      << all_of(e);
}

TEST_F(PipelineTest, AStageRoutingToMoreTargetsThanTheRouterHasIsAnError) {
  const auto e = errors("router.yaml");
  ASSERT_EQ(e.size(), 1u) << all_of(e);
  EXPECT_TRUE(has_error(e, 6, 9, "stage 'fan' routes to 9 different targets (end, s1, s2, s3, s4, s5, s6, s7, s8), "
                                 "but a stage can route to at most 8"));
}

TEST_F(PipelineTest, TheLabelNamesTheRun) {
  EXPECT_EQ(load("good.yaml").label, "demo-cpu");  // none given: the pipeline's name
  EXPECT_EQ(load("label.yaml").label, "plain");
  Overrides strategy;
  strategy.values["strategy"] = "smart";
  EXPECT_EQ(load("label.yaml", strategy).label, "smart");
}

TEST_F(PipelineTest, ReportsBadNumbersAndDurations) {
  const auto e = errors("numbers.yaml");
  EXPECT_EQ(e.size(), 6u) << all_of(e);
  EXPECT_TRUE(has_error(e, 5, 6, "k (candidates per task) must be at least 1, got 0"));
  EXPECT_TRUE(has_error(e, 6, 16, "max_in_flight must be an integer, got 'many'"));
  EXPECT_TRUE(has_error(e, 11, 18, "concurrency of stage 'generate' must be at least 1, got 0"));
  EXPECT_TRUE(has_error(e, 12, 14, "invalid duration '90 s' for timeout of stage 'generate'"));
  EXPECT_TRUE(has_error(e, 15, 14, "invalid duration '-1' for timeout of stage 'check'"));
  EXPECT_TRUE(has_error(e, 17, 40,
                        "max_rounds of route 'fail' of stage 'check' must be at least 1, got 0"));
}

TEST_F(PipelineTest, ReportsMissingRequiredFieldsAndParameters) {
  const auto e = errors("missing.yaml");
  EXPECT_EQ(e.size(), 3u) << all_of(e);
  EXPECT_TRUE(has_error(
      e, 2, 1,
      "missing required parameter 'path' of tasks (tasks.list): Directory of task files."));
  EXPECT_TRUE(has_error(
      e, 7, 5,
      "missing required parameter 'model' of stage 'generate' (llm.generate): Model to call."));
  EXPECT_TRUE(has_error(e, 9, 5, "stage #2 has no id"));

  const auto top = errors("empty_top.yaml");
  EXPECT_EQ(top.size(), 3u) << all_of(top);
  EXPECT_TRUE(has_error(top, 2, 1, "missing required key 'pipeline'"));
  EXPECT_TRUE(has_error(top, 2, 1, "missing required key 'tasks'"));
  EXPECT_TRUE(has_error(top, 2, 1, "stages is empty"));
}

TEST_F(PipelineTest, ReportsUnknownKindsWithCloseNames) {
  const auto e = errors("unknown_kind.yaml");
  EXPECT_EQ(e.size(), 3u) << all_of(e);
  EXPECT_TRUE(
      has_error(e, 3, 9, "unknown task source kind 'task.list'; did you mean 'tasks.list'?"));
  EXPECT_TRUE(
      has_error(e, 7, 11, "unknown stage kind 'llm.generat'; did you mean 'llm.generate'?"));
  EXPECT_TRUE(has_error(e, 10, 11,
                        "unknown stage kind 'totally.unknown' (known: test.noop, llm.generate, "
                        "check.ast, llm.fix, test.limits, test.router)"));
}

TEST_F(PipelineTest, ReportsDuplicateReservedAndInvalidStageIds) {
  const auto e = errors("duplicate_id.yaml");
  EXPECT_EQ(e.size(), 3u) << all_of(e);
  EXPECT_TRUE(has_error(
      e, 9, 9,
      "duplicate stage id 'generate' (first declared at " + data("duplicate_id.yaml") + ":6:9)"));
  EXPECT_TRUE(has_error(e, 11, 9, "stage id 'end' is reserved"));
  EXPECT_TRUE(has_error(e, 13, 9, "invalid stage id 'Bad_Id'"));
}

TEST_F(PipelineTest, ReportsRoutesToUnknownStages) {
  const auto e = errors("unknown_target.yaml");
  EXPECT_EQ(e.size(), 2u) << all_of(e);
  EXPECT_TRUE(has_error(
      e, 12, 18, "route 'fail' of stage 'check' goes to unknown stage 'fx'; did you mean 'fix'?"));
  EXPECT_TRUE(has_error(e, 12, 43,
                        "goes to unknown stage 'nowhere' (stages: generate, check, fix, or end)"));
}

TEST_F(PipelineTest, ReportsUnreachableStages) {
  const auto e = errors("unreachable.yaml");
  EXPECT_EQ(e.size(), 1u) << all_of(e);
  EXPECT_TRUE(has_error(e, 11, 9, "stage 'orphan' is unreachable"));
}

TEST_F(PipelineTest, ReportsUnboundedCycles) {
  const auto e = errors("cycles.yaml");
  EXPECT_EQ(e.size(), 2u) << all_of(e);
  EXPECT_TRUE(has_error(e, 17, 13, "unbounded cycle check -> fix -> check"));
  EXPECT_TRUE(has_error(e, 18, 14, "unbounded cycle fix -> fix"));  // a self-loop
}

TEST_F(PipelineTest, ReportsUnknownVariablesAndCycles) {
  ::unsetenv("KFORGE_TEST_UNSET");
  const auto e = errors("unknown_var.yaml");
  EXPECT_EQ(e.size(), 3u) << all_of(e);
  EXPECT_TRUE(has_error(e, 7, 16,
                        "unknown variable 'KFORGE_TEST_UNSET': define it under vars:, in the "
                        "environment, or give a default with ${KFORGE_TEST_UNSET:-value}"));
  EXPECT_TRUE(has_error(e, 4, 6, "variables refer to each other in a cycle: a -> b -> a"));
  EXPECT_TRUE(has_error(e, 11, 19, "unterminated '${' in '${model'"));
}

TEST_F(PipelineTest, ReportsIncludeCycle) {
  const auto e = errors("include_cycle_a.yaml");
  EXPECT_EQ(e.size(), 1u) << all_of(e);
  const std::string a = data("include_cycle_a.yaml");
  const std::string b = data("include_cycle_b.yaml");
  EXPECT_TRUE(
      has_error(e, 1, 11, "include cycle: " + a + " -> " + b + " -> " + a, "include_cycle_b.yaml"));
}

TEST_F(PipelineTest, ReportsMissingIncludesAndTopLevelKeysInIncludes) {
  const auto e = errors("include_errors.yaml");
  EXPECT_EQ(e.size(), 2u) << all_of(e);
  EXPECT_TRUE(has_error(e, 2, 11, "cannot read included file '" + data("parts/missing.yaml") + "'",
                        "include_errors.yaml"));
  EXPECT_TRUE(has_error(e, 1, 1, "'pipeline' is only allowed in the top-level pipeline file",
                        "parts/top_only.yaml"));
}

TEST_F(PipelineTest, ReportsYamlSyntaxErrors) {
  const auto e = errors("bad_yaml.yaml");
  ASSERT_EQ(e.size(), 1u) << all_of(e);
  EXPECT_EQ(e[0].where.file, data("bad_yaml.yaml"));
  EXPECT_EQ(e[0].where.line, 5);
  EXPECT_EQ(e[0].where.column, 9);
  EXPECT_NE(e[0].message.find("invalid YAML: "), std::string::npos);
  EXPECT_EQ(e[0].snippet, "    with: {model: m}");

  const auto list = errors("not_a_mapping.yaml");
  ASSERT_EQ(list.size(), 1u) << all_of(list);
  EXPECT_TRUE(has_error(list, 1, 1, "a pipeline file must be a mapping of keys"));
}

TEST_F(PipelineTest, ReportsUnreadableFile) {
  const auto e = errors("does-not-exist.yaml");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].where.line, 0);
  EXPECT_EQ(e[0].format(), data("does-not-exist.yaml") +
                               ": error: cannot read pipeline file: No such file or directory");
}

TEST_F(PipelineTest, ReportsInvalidPluginDefaults) {
  static const sdk::detail::Plugin<BadDefault> bad("bad", "1.0.0");
  registry.add(&bad.descriptor, "bad");
  const fs::path file = fs::path(testing::TempDir()) / "kforge_bad_default.yaml";
  {
    std::ofstream out(file);
    out << "pipeline: p\ntasks:\n  uses: tasks.list\n  with: {path: x}\nstages:\n"
           "  - id: s\n    uses: bad.default\n";
  }
  try {
    load_pipeline(file.string(), registry);
    FAIL() << "loaded a stage whose default is not an integer";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u) << e.what();
    EXPECT_TRUE(has_error(e.diagnostics(), 6, 5,
                          "the default of parameter 'count' of kind 'bad.default' (a plugin bug) "
                          "must be an integer, got 'many'"));
  }
  fs::remove(file);
}

// ---- output -------------------------------------------------------------------------------

TEST_F(PipelineTest, FormatsDiagnosticsWithSnippetAndCaret) {
  const auto e = errors("unknown_key.yaml");
  auto it =
      std::find_if(e.begin(), e.end(), [](const Diagnostic& d) { return d.where.line == 10; });
  ASSERT_NE(it, e.end()) << all_of(e);
  EXPECT_EQ(it->format(), data("unknown_key.yaml") +
                              ":10:5: error: unknown key 'concurency' in stage 'generate'; did you "
                              "mean 'concurrency'?\n"
                              "   10 |     concurency: 4\n"
                              "      |     ^");

  try {
    load("unknown_key.yaml");
    FAIL();
  } catch (const ConfigError& error) {
    std::string joined;
    for (const Diagnostic& d : error.diagnostics())
      joined += (joined.empty() ? "" : "\n") + d.format();
    EXPECT_EQ(std::string(error.what()), joined);
  }
}

TEST_F(PipelineTest, SchemaDescribesEveryKindAndParameter) {
  const nlohmann::json schema = nlohmann::json::parse(pipeline_json_schema(registry));
  EXPECT_EQ(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
  EXPECT_EQ(schema["additionalProperties"], false);

  // Finds the `then` branch of the allOf entry whose `if` names `kind`.
  auto branch = [](const nlohmann::json& object, const std::string& kind) -> nlohmann::json {
    for (const auto& entry : object["allOf"]) {
      if (entry["if"]["properties"]["uses"]["const"] == kind) return entry["then"];
    }
    ADD_FAILURE() << "no schema branch for " << kind;
    return {};
  };
  const nlohmann::json& stage_def = schema["$defs"]["stage"];
  for (const StageKind& kind : registry.stages()) {
    const nlohmann::json with = branch(stage_def, kind.name)["properties"]["with"];
    EXPECT_EQ(with["additionalProperties"], false) << kind.name;
    for (const ParamSpec& p : kind.params) EXPECT_TRUE(with["properties"].contains(p.name)) << kind.name;
  }
  for (const SourceKind& kind : registry.sources()) {
    const nlohmann::json with = branch(schema["$defs"]["tasks"], kind.name)["properties"]["with"];
    for (const ParamSpec& p : kind.params) EXPECT_TRUE(with["properties"].contains(p.name)) << kind.name;
  }

  const nlohmann::json generate = branch(stage_def, "llm.generate");
  const nlohmann::json& params = generate["properties"]["with"]["properties"];
  EXPECT_EQ(generate["properties"]["with"]["required"], nlohmann::json::array({"model"}));
  EXPECT_EQ(generate["required"], nlohmann::json::array({"with"}));
  EXPECT_EQ(params["model"]["type"], "string");
  EXPECT_EQ(params["model"]["description"], "Model to call.");
  EXPECT_EQ(params["temperature"]["anyOf"][0]["type"], "number");
  EXPECT_DOUBLE_EQ(params["temperature"]["default"].get<double>(), 0.2);
  EXPECT_EQ(params["max_tokens"]["anyOf"][0]["type"], "integer");
  EXPECT_EQ(params["max_tokens"]["default"], 1024);
  EXPECT_EQ(params["stream"]["anyOf"][0]["type"], "boolean");
  EXPECT_EQ(params["stream"]["default"], false);
  EXPECT_EQ(params["stop"]["type"], "array");
  EXPECT_EQ(params["stop"]["items"]["type"], "string");
  EXPECT_EQ(params["stop"]["default"], nlohmann::json::array({"END", "STOP"}));
  EXPECT_EQ(params["options"]["type"], "object");
  EXPECT_EQ(params["options"]["default"],
            nlohmann::json::parse(R"({"retries":3,"style":"terse"})"));
  EXPECT_FALSE(params["note"].contains("default"));

  // Choices, ranges and durations, as the loader checks them.
  const nlohmann::json limits = branch(stage_def, "test.limits")["properties"]["with"]["properties"];
  EXPECT_EQ(limits["level"]["enum"], nlohmann::json::array({"low", "high"}));
  EXPECT_EQ(limits["tags"]["items"]["enum"], nlohmann::json::array({"a", "b"}));
  EXPECT_EQ(limits["ratio"]["anyOf"][0]["exclusiveMinimum"], 0.0);
  EXPECT_EQ(limits["ratio"]["anyOf"][0]["maximum"], 1.0);
  EXPECT_EQ(limits["count"]["anyOf"][0]["minimum"], 1.0);
  EXPECT_EQ(limits["wait"]["default"], 90.0);
  EXPECT_EQ(limits["wait"]["anyOf"][1]["pattern"], "^([0-9]+\\.?[0-9]*|\\.[0-9]+)(ms|s|m|h)?$");
  EXPECT_TRUE(schema["properties"].contains("label"));

  // Named routes are allowed only where the kind declares them.
  const nlohmann::json check_on = branch(stage_def, "check.ast")["properties"]["on"];
  EXPECT_TRUE(check_on["properties"].contains("cached"));
  EXPECT_EQ(check_on["additionalProperties"], false);
  EXPECT_FALSE(generate["properties"]["on"]["properties"].contains("cached"));
}

}  // namespace
}  // namespace kforge
