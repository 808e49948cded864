#include "engine/registry.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace {

const std::string kDemo = std::string(KFORGE_TEST_PLUGIN_DIR) + "/libkforge_demo.so";
const std::string kBroken = KFORGE_BROKEN_PLUGIN_DIR;
const std::string kExtra = KFORGE_TEST_EXTRA_PLUGIN_DIR;

template <typename E>
std::string error_of(kforge::Registry& registry, const std::string& path) {
  try {
    registry.load(path);
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "loading " << path << " did not throw the expected error";
  return {};
}

TEST(Registry, LoadsTheDemoPluginAndItsKinds) {
  kforge::Registry registry;
  registry.load(kDemo);
  ASSERT_NE(registry.stage("demo.noop"), nullptr);
  ASSERT_NE(registry.stage("demo.sleep"), nullptr);
  ASSERT_NE(registry.source("demo.range"), nullptr);
  EXPECT_EQ(registry.stage("demo.noop")->plugin, "demo");
  EXPECT_TRUE(registry.stage("demo.sleep")->waits());
  EXPECT_EQ(registry.stage("demo.judge")->routes, std::vector<std::string>{"special"});
  registry.load(kDemo);  // the same file again is a no-op, not a duplicate
  EXPECT_EQ(registry.stages().size(), 7u);
}

TEST(Registry, FileThatIsNotLoadableReportsDlerror) {
  const auto path = std::filesystem::temp_directory_path() / "libkforge_not_elf.so";
  std::ofstream(path) << std::string(4096, 'x');  // long enough for dlopen to read a header
  kforge::Registry registry;
  const std::string message = error_of<kforge::PluginNotLoadable>(registry, path.string());
  EXPECT_NE(message.find("cannot load plugin"), std::string::npos) << message;
  EXPECT_NE(message.find("invalid ELF header"), std::string::npos) << message;  // dlerror's text
  std::filesystem::remove(path);
}

TEST(Registry, MissingFileIsNotLoadable) {
  kforge::Registry registry;
  const std::string message = error_of<kforge::PluginNotLoadable>(registry, "/nonexistent/libx.so");
  EXPECT_NE(message.find("No such file"), std::string::npos) << message;
}

TEST(Registry, MissingEntrySymbol) {
  kforge::Registry registry;
  const std::string message =
      error_of<kforge::PluginEntryMissing>(registry, kBroken + "/libbroken_missing_entry.so");
  EXPECT_NE(message.find("does not export 'kforge_plugin_entry'"), std::string::npos) << message;
}

TEST(Registry, AbiMismatchSaysBothVersions) {
  kforge::Registry registry;
  const std::string message = error_of<kforge::PluginAbiMismatch>(registry, kBroken + "/libbroken_wrong_abi.so");
  EXPECT_NE(message.find("ABI version 42"), std::string::npos) << message;
  EXPECT_NE(message.find("supports versions 1 to 1"), std::string::npos) << message;
}

TEST(Registry, DuplicateKindNamesBothFiles) {
  kforge::Registry registry;
  registry.load(kDemo);
  const std::string message = error_of<kforge::DuplicateKind>(registry, kBroken + "/libbroken_duplicate_kind.so");
  EXPECT_NE(message.find("'demo.noop' is registered twice"), std::string::npos) << message;
  EXPECT_NE(message.find("libkforge_demo.so"), std::string::npos) << message;
  EXPECT_NE(message.find("libbroken_duplicate_kind.so"), std::string::npos) << message;
  EXPECT_EQ(registry.stages().size(), 7u);  // nothing of the rejected plugin registered
}

TEST(Registry, DiscoverCollectsProblemsAndLoadsTheRest) {
  kforge::Registry registry;
  const auto problems = registry.discover({KFORGE_TEST_PLUGIN_DIR, kBroken});
  EXPECT_NE(registry.stage("demo.noop"), nullptr);
  ASSERT_EQ(problems.size(), 3u);  // the three broken plugins, each with its own message
}

// A kind renamed keeps its former names for a release: the registry finds it by them, and
// no other kind may take one.
TEST(Registry, AKindIsFoundByItsFormerNameAndNoOtherMayTakeIt) {
  kforge::Registry registry;
  registry.load(kDemo);
  const kf_plugin_descriptor* npu = registry.load(kExtra + "/libtest_npu.so");
  const kforge::StageKind* fix = registry.stage("npu.fix");
  ASSERT_NE(fix, nullptr);
  EXPECT_EQ(fix->former_names, std::vector<std::string>{"npu.repair"});
  EXPECT_EQ(registry.renamed_stage("npu.repair"), fix);
  EXPECT_EQ(registry.stage("npu.repair"), nullptr) << "a former name is no kind's name";
  EXPECT_EQ(registry.renamed_source("npu.graph_tasks"), registry.source("npu.tasks"));
  EXPECT_EQ(registry.renamed_stage("npu.fix"), nullptr);

  // Another plugin whose kind's former name is a kind's name, or another's former name.
  for (const char* former : {"demo.noop", "npu.repair"}) {
    kf_stage_kind renamed = *npu->stages[0];
    renamed.name = "other.kind";
    const char* const names[] = {former};
    renamed.former_names = names;
    renamed.former_name_count = 1;
    const kf_stage_kind* stages[] = {&renamed};
    kf_plugin_descriptor other = *npu;
    other.name = "other";
    other.stages = stages;
    other.stage_count = 1;
    other.source_count = 0;
    try {
      registry.add(&other, "/elsewhere/libother.so");
      ADD_FAILURE() << former << " was taken twice";
    } catch (const kforge::DuplicateKind& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + former + "' is registered twice"), std::string::npos)
          << e.what();
    }
  }
}

// A kind's parameter names, former ones included, each name one parameter, and each type is
// one this host knows: a plugin that breaks either is refused, saying which parameter.
TEST(Registry, EachParameterNameNamesOneParameterOfAKnownType) {
  kforge::Registry registry;
  const kf_plugin_descriptor* npu = registry.load(kExtra + "/libtest_npu.so");
  auto refusal = [&](const kf_param_spec* specs, uint32_t count, const kf_param_constraints* const* constraints) {
    kf_stage_kind kind = *npu->stages[0];
    kind.name = "other.kind";
    kind.former_names = nullptr;
    kind.former_name_count = 0;
    kind.params = specs;
    kind.param_count = count;
    kind.param_constraints = constraints;
    const kf_stage_kind* stages[] = {&kind};
    kf_plugin_descriptor other = *npu;
    other.name = "other";
    other.stages = stages;
    other.stage_count = 1;
    other.source_count = 0;
    other.exporter_count = 0;
    other.report_section_count = 0;
    try {
      registry.add(&other, "/elsewhere/libother.so");
    } catch (const kforge::PluginError& e) {
      return std::string(e.what());
    }
    return std::string("(loaded)");
  };
  const kf_param_spec two[] = {{"timeout", KF_PARAM_DURATION, "1s", 0, "New."},
                               {"timeout_s", KF_PARAM_DURATION, "1", 0, "Old, declared again."}};
  const char* const former[] = {"timeout_s"};
  kf_param_constraints renamed{};
  renamed.struct_size = sizeof renamed;
  renamed.former_names = former;
  renamed.former_name_count = 1;
  const kf_param_constraints* constraints[] = {&renamed, nullptr};
  const std::string clash = refusal(two, 2, constraints);
  EXPECT_NE(clash.find("parameters 'timeout' and 'timeout_s' both take the name 'timeout_s'"), std::string::npos)
      << clash;

  const kf_param_spec strange[] = {{"x", static_cast<kf_param_type>(42), nullptr, 0, "From a newer header."}};
  const std::string unknown = refusal(strange, 1, nullptr);
  EXPECT_NE(unknown.find("parameter 'x' has type 42, which this kforge does not know"), std::string::npos) << unknown;
}

// kforge's own plugins are plugins/<folder>/, built as libkforge_<folder>.so: the registry
// holds a bundled plugin's name to its file's, and its kinds' names to that prefix.
TEST(Registry, ABundledPluginsKindsAreNamedAfterItsFolder) {
  kforge::Registry registry;
  const kf_plugin_descriptor* npu = registry.load(kExtra + "/libtest_npu.so");  // not bundled: any names
  kforge::Registry bundled;
  try {
    bundled.add(npu, "/opt/kforge/lib/kforge/plugins/libkforge_npu.so", true);
    ADD_FAILURE() << "vllm.generate in plugin npu";
  } catch (const kforge::MisnamedKind& e) {
    EXPECT_NE(std::string(e.what()).find("registers stage kind 'vllm.generate': the kinds of plugins/npu/ are named "
                                         "npu.<name>"),
              std::string::npos)
        << e.what();
  }
  try {
    bundled.add(npu, "/opt/kforge/lib/kforge/plugins/libkforge_gpu.so", true);
    ADD_FAILURE() << "plugin npu in libkforge_gpu.so";
  } catch (const kforge::MisnamedKind& e) {
    EXPECT_NE(std::string(e.what()).find("is named 'npu'"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(bundled.stages().empty());
  // Every bundled plugin of this build loads from the bundled directory, where the rule holds.
  EXPECT_TRUE(bundled.discover({KFORGE_TEST_PLUGIN_DIR}).empty());
  EXPECT_NE(bundled.stage("demo.noop"), nullptr);
}

TEST(Registry, ClosestSuggestsTypos) {
  kforge::Registry registry;
  registry.load(kDemo);
  auto close = registry.closest("demo.sleeep", false);
  ASSERT_FALSE(close.empty());
  EXPECT_EQ(close.front(), "demo.sleep");
  EXPECT_EQ(registry.closest("flaky", false).front(), "demo.flaky");
  EXPECT_TRUE(registry.closest("something.else.entirely", false).empty());
}

}  // namespace
