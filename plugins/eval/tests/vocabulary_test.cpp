// One definition per shared word: the task formats, languages, device grammar and error
// classes of kforge/eval/vocabulary.hpp are the harness's own (kforge_harness/protocol and
// kforge_harness/devices), as the harness itself says when asked.
#include <kforge/eval/vocabulary.hpp>

#include "test_env.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

namespace kforge::eval {
namespace {

using nlohmann::json;

template <size_t N>
std::vector<std::string> words(const char* const (&list)[N]) {
  return {std::begin(list), std::end(list)};
}

// protocol's module-level text constants are its error classes (its first block, "Error
// classes: stable ids used in reports"); both modules import without torch.
json harness_words() {
  const std::string output = testing::run_python(R"(
import json, sys
sys.path.insert(0, json.load(sys.stdin)["harness"])
from kforge_harness import devices, protocol
print(json.dumps({"task_formats": list(protocol.TASK_FORMATS), "languages": list(protocol.LANGUAGES),
                  "error_classes": sorted(v for k, v in vars(protocol).items() if k.isupper() and isinstance(v, str)),
                  "device_pattern": devices._DEVICE_RE.pattern}))
)",
                                                 {{"harness", testing::harness_dir()}});
  const json words = json::parse(output, nullptr, false);
  if (!words.is_object()) ADD_FAILURE() << "the harness did not say: " << output;
  return words;
}

TEST(Vocabulary, TheSharedWordsAreTheHarnesss) {
  const json harness = harness_words();
  ASSERT_TRUE(harness.is_object());
  EXPECT_EQ(harness["task_formats"].get<std::vector<std::string>>(), words(kTaskFormats));
  EXPECT_EQ(harness["languages"].get<std::vector<std::string>>(), words(kLanguages));
  std::vector<std::string> classes = words(kHarnessErrorClasses);
  std::sort(classes.begin(), classes.end());
  EXPECT_EQ(harness["error_classes"].get<std::vector<std::string>>(), classes);
  EXPECT_EQ(harness["device_pattern"].get<std::string>(), device_pattern());
}

TEST(Vocabulary, TheDeviceGrammarReadsAsItSays) {
  const std::regex pattern(device_pattern());
  for (const char* device : {"cpu", "cuda", "cuda:1", "npu:0", "npu:12"}) {
    EXPECT_TRUE(std::regex_match(device, pattern)) << device;
  }
  for (const char* device : {"gpu:0", "cuda:", "cuda:x", "cpu0", " cuda:0", ""}) {
    EXPECT_FALSE(std::regex_match(device, pattern)) << device;
  }
}

}  // namespace
}  // namespace kforge::eval
