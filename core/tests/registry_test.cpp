#include "engine/registry.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace {

const std::string kDemo = std::string(KFORGE_TEST_PLUGIN_DIR) + "/libkforge_demo.so";
const std::string kBroken = KFORGE_BROKEN_PLUGIN_DIR;

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
