// Parameters declared once (kforge/sdk.hpp Param::bind): the SDK fills a stage's Options from
// the values the host validated, every field type the SDK knows, through the real host API;
// a binding that cannot work is refused when the stage is created, saying which parameter.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <kforge/sdk.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/host.hpp"
#include "engine/pipeline/load.hpp"
#include "engine/registry.hpp"

namespace kforge {
namespace {

namespace sdk = kforge::sdk;
using namespace std::chrono_literals;

// What the bound stage saw, for the test to read.
struct Seen;
Seen* g_seen = nullptr;

struct Shared {  // a group of parameters several stages share, as eval's are
  sdk::Seconds timeout{};
};

struct AllOptions : Shared {
  std::string name;
  std::string rule;  // an OBJECT's JSON text
  bool strict = false;
  int count = 0;
  int64_t big = 0;
  double ratio = 0;
  std::chrono::milliseconds wait{};
  std::chrono::seconds cpu{};
  std::vector<std::string> tags;
  std::filesystem::path file;
  std::optional<int64_t> seed;
  std::optional<std::string> note;
  std::string untouched = "initial";  // optional without a default, not given: kept
};

struct Seen {
  AllOptions options;
  std::filesystem::path dir;
};

class All : public sdk::Stage {
 public:
  using Options = AllOptions;
  static constexpr const char* kName = "bind.all";
  static constexpr const char* kDoc = "Binds one parameter of every kind.";
  static std::vector<sdk::Param> params() {
    using sdk::Param;
    return {Param{"timeout", KF_PARAM_DURATION, "30s", false, "Shared."}.above(0).formerly({"timeout_s"}).bind<Options>(
                &Options::timeout),
            Param{"name", KF_PARAM_STRING, "x", false, "A string."}.bind(&Options::name),
            Param{"rule", KF_PARAM_OBJECT, "{}", false, "A mapping."}.bind(&Options::rule),
            Param{"strict", KF_PARAM_BOOL, "false", false, "A bool."}.bind(&Options::strict),
            Param{"count", KF_PARAM_INT, "1", false, "An int field."}.bind(&Options::count),
            Param{"big", KF_PARAM_INT, "0", false, "An int64 field."}.bind(&Options::big),
            Param{"ratio", KF_PARAM_FLOAT, "0.5", false, "A float."}.bind(&Options::ratio),
            Param{"wait", KF_PARAM_DURATION, "90s", false, "Milliseconds."}.bind(&Options::wait),
            Param{"cpu", KF_PARAM_DURATION, "1s", false, "Whole seconds."}.formerly({"cpu_s"}).bind(&Options::cpu),
            Param{"tags", KF_PARAM_STRING_LIST, "[a]", false, "A list."}.bind(&Options::tags),
            Param{"file", KF_PARAM_STRING, "", false, "A path."}.bind(&Options::file),
            Param{"seed", KF_PARAM_INT, nullptr, false, "Optional."}.bind(&Options::seed),
            Param{"note", KF_PARAM_STRING, nullptr, false, "Optional."}.bind(&Options::note),
            Param{"untouched", KF_PARAM_STRING, nullptr, false, "Optional."}.bind(&Options::untouched)};
  }
  All(const Options& options, const sdk::PipelineDir& dir) { *g_seen = {options, dir.path()}; }
  void process(sdk::Job& job) override { job.pass(); }
};

// A declared type its field cannot hold.
class Mismatch : public sdk::Stage {
 public:
  struct Options {
    std::string limit;
  };
  static constexpr const char* kName = "bind.mismatch";
  static constexpr const char* kDoc = "Binds an INT to a string.";
  static std::vector<sdk::Param> params() {
    return {sdk::Param{"limit", KF_PARAM_INT, "1", false, "An int."}.bind(&Options::limit)};
  }
  explicit Mismatch(const Options&) {}
  void process(sdk::Job& job) override { job.pass(); }
};

// A parameter bound to nothing.
class Unbound : public sdk::Stage {
 public:
  struct Options {
    int64_t a = 0;
  };
  static constexpr const char* kName = "bind.unbound";
  static constexpr const char* kDoc = "Forgets to bind b.";
  static std::vector<sdk::Param> params() {
    return {sdk::Param{"a", KF_PARAM_INT, "1", false, "Bound."}.bind(&Options::a),
            sdk::Param{"b", KF_PARAM_INT, "1", false, "Not bound."}};
  }
  explicit Unbound(const Options&) {}
  void process(sdk::Job& job) override { job.pass(); }
};

using BindPlugin = sdk::detail::Plugin<All, Mismatch, Unbound>;

class Binding : public ::testing::Test {
 protected:
  Binding() {
    static const BindPlugin plugin("bind", "1.0.0");
    registry.add(&plugin.descriptor, "bind");
    g_seen = &seen;
  }
  ~Binding() override { g_seen = nullptr; }

  // Creates `kind` from `yaml` as the host would: "" when created, else the stage's message.
  std::string create(const std::string& kind, const std::string& yaml, const std::string& dir = "/pipelines") {
    const StageKind* stage = registry.stage(kind);
    config = load_params(*stage, yaml, dir);
    void* instance = nullptr;
    char err[1024] = {0};
    if (stage->create(host_api(), reinterpret_cast<const kf_config*>(&config), &instance, err, sizeof err) != KF_OK) {
      return err;
    }
    stage->destroy(instance);
    return "";
  }

  Registry registry;
  StageConfig config;
  Seen seen;
};

TEST_F(Binding, DefaultsFillEveryFieldType) {
  ASSERT_EQ(create("bind.all", "{}"), "");
  const AllOptions& o = seen.options;
  EXPECT_EQ(o.timeout, 30s);
  EXPECT_EQ(o.name, "x");
  EXPECT_EQ(o.rule, "{}");
  EXPECT_FALSE(o.strict);
  EXPECT_EQ(o.count, 1);
  EXPECT_EQ(o.ratio, 0.5);
  EXPECT_EQ(o.wait, 90s);
  EXPECT_EQ(o.cpu, 1s);
  EXPECT_EQ(o.tags, std::vector<std::string>{"a"});
  EXPECT_TRUE(o.file.empty()) << "an empty path stays empty, not the pipeline's directory";
  EXPECT_FALSE(o.seed.has_value());
  EXPECT_FALSE(o.note.has_value());
  EXPECT_EQ(o.untouched, "initial");
  EXPECT_EQ(seen.dir, "/pipelines");
}

TEST_F(Binding, GivenValuesAreConvertedToTheFieldsTypes) {
  ASSERT_EQ(create("bind.all",
                   "{timeout: 2m, name: y, rule: {kind: allclose, atol: 0.1}, strict: true, count: 7, "
                   "big: 9000000000, ratio: 0.25, wait: 1.5s, cpu: 2.2, tags: [b, c], file: data/x.txt, seed: -3, "
                   "note: hi, untouched: set}"),
            "");
  const AllOptions& o = seen.options;
  EXPECT_EQ(o.timeout, 120s);
  EXPECT_EQ(o.name, "y");
  EXPECT_EQ(o.rule, R"({"kind":"allclose","atol":0.1})");
  EXPECT_TRUE(o.strict);
  EXPECT_EQ(o.count, 7);
  EXPECT_EQ(o.big, 9000000000);
  EXPECT_EQ(o.ratio, 0.25);
  EXPECT_EQ(o.wait, 1500ms);
  EXPECT_EQ(o.cpu, 3s) << "whole seconds round up: a positive limit stays positive";
  EXPECT_EQ(o.tags, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(o.file, std::filesystem::path("/pipelines/data/x.txt")) << "relative to the pipeline file";
  EXPECT_EQ(o.seed, -3);
  EXPECT_EQ(o.note, "hi");
  EXPECT_EQ(o.untouched, "set");
}

TEST_F(Binding, FormerNamesFillTheRenamedField) {
  ASSERT_EQ(create("bind.all", "{timeout_s: 45, cpu_s: 4}"), "");
  EXPECT_EQ(seen.options.timeout, 45s) << "a bare number is seconds, as the _s name meant";
  EXPECT_EQ(seen.options.cpu, 4s);
}

TEST_F(Binding, AValueTheFieldCannotHoldIsRefusedNamingTheParameter) {
  const std::string problem = create("bind.all", "{count: 3000000000}");
  EXPECT_NE(problem.find("parameter 'count' is 3000000000"), std::string::npos) << problem;
  EXPECT_NE(problem.find("2147483647"), std::string::npos) << problem;
}

TEST_F(Binding, ABindingThatCannotWorkIsRefusedAtCreate) {
  const std::string mismatch = create("bind.mismatch", "{}");
  EXPECT_NE(mismatch.find("bind.mismatch: parameter 'limit' is declared with a type its options field cannot hold"),
            std::string::npos)
      << mismatch;
  const std::string unbound = create("bind.unbound", "{}");
  EXPECT_NE(unbound.find("bind.unbound: parameter 'b' is bound to no field"), std::string::npos) << unbound;
}

TEST_F(Binding, FormerNamesCrossTheAbi) {
  const StageKind* all = registry.stage("bind.all");
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(all->params[0].name, "timeout");
  EXPECT_EQ(all->params[0].former_names, std::vector<std::string>{"timeout_s"});
  EXPECT_TRUE(all->params[1].former_names.empty());
}

}  // namespace
}  // namespace kforge
