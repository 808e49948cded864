#include "prompt_template.hpp"
#include "prompts.hpp"

#include <gtest/gtest.h>

#include <filesystem>

namespace kforge::llm {
namespace {

std::string render_error(const PromptTemplate& t, const std::map<std::string, std::string>& values) {
  try {
    t.render(values);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(PromptTemplate, FillsPlaceholders) {
  PromptTemplate t("Task {{task_name}}:\n{{ task_source }}\nagain {{task_name}}", "t.md");
  EXPECT_EQ(t.render({{"task_name", "relu"}, {"task_source", "src"}}), "Task relu:\nsrc\nagain relu");
}

TEST(PromptTemplate, AnUnknownPlaceholderIsAnErrorNamingIt) {
  PromptTemplate t("{{task_name}} {{mystery}}", "prompts/x.md");
  std::string message = render_error(t, {{"task_name", "relu"}});
  EXPECT_NE(message.find("{{mystery}}"), std::string::npos) << message;
  EXPECT_NE(message.find("prompts/x.md"), std::string::npos) << message;
  try {
    t.check_placeholders({"task_name"});
    FAIL() << "check_placeholders accepted {{mystery}}";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("{{mystery}}"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("{{task_name}}"), std::string::npos) << "lists the known ones";
  }
}

TEST(PromptTemplate, OtherDoubleBracesAreText) {
  PromptTemplate t("int a[2][2] = {{1, 2}, {3, 4}}; {{ }} {{9x}} {{name", "t.md");
  EXPECT_EQ(t.render({}), "int a[2][2] = {{1, 2}, {3, 4}}; {{ }} {{9x}} {{name");
}

TEST(PromptTemplate, ValuesAreNotScannedAgain) {
  PromptTemplate t("{{code}}", "t.md");
  EXPECT_EQ(t.render({{"code", "x = '{{task_name}}'"}}), "x = '{{task_name}}'");
}

TEST(CutMiddle, KeepsShortTextsWhole) { EXPECT_EQ(cut_middle("short log", 100), "short log"); }

TEST(CutMiddle, KeepsTheHeadThirdAndTheTailTwoThirds) {
  std::string log(3000, 'h');
  log += std::string(4000, 'm');
  log += std::string(3000, 't');
  std::string cut = cut_middle(log, 900);
  EXPECT_EQ(cut.substr(0, 300), std::string(300, 'h'));
  EXPECT_EQ(cut.substr(cut.size() - 600), std::string(600, 't'));
  EXPECT_NE(cut.find("[... 9100 bytes cut ...]"), std::string::npos) << cut.substr(290, 40);
}

TEST(CutMiddle, NeverSplitsAUtf8Character) {
  std::string log;
  for (int i = 0; i < 1000; ++i) log += "\xc3\xa9";  // é, two bytes each
  std::string cut = cut_middle(log, 301);
  std::string head = cut.substr(0, cut.find('\n'));
  std::string tail = cut.substr(cut.rfind('\n') + 1);
  EXPECT_EQ(head.size() % 2, 0u);
  EXPECT_EQ(tail.size() % 2, 0u);
  EXPECT_EQ(static_cast<unsigned char>(tail[0]), 0xc3);
}

TEST(FixValues, CombinesMessageAndLogAndCutsThem) {
  FixInput input;
  input.message = "compile_error: kernel.py:12: undefined name 'tl'";
  input.log_tail = std::string(20000, 'x') + "\nTraceback end";
  input.error_class = "compile_error";
  auto values = fix_values(input, 3000);
  const std::string& log = values.at("error_log");
  EXPECT_EQ(log.rfind("compile_error: kernel.py:12", 0), 0u) << "the message leads";
  EXPECT_NE(log.find("Traceback end"), std::string::npos) << "the end of the log stays";
  EXPECT_LT(log.size(), 3100u);
  EXPECT_EQ(values.at("error_class"), "compile_error");
}

TEST(FixValues, DoesNotRepeatAMessageTheLogAlreadyHolds) {
  FixInput input;
  input.message = "boom";
  input.log_tail = "trace...\nboom";
  EXPECT_EQ(fix_values(input, 5000).at("error_log"), "trace...\nboom");
}

// The shipped templates use only the placeholders their stage fills, and render.
TEST(ShippedPrompts, RenderWithTheirStagesValues) {
  const std::string dir = std::string(KFORGE_PIPELINES_DIR) + "/prompts";
  for (const char* target : {"cpp", "triton", "cuda"}) {
    PromptTemplate t = PromptTemplate::load(dir + "/generate_" + target + ".md");
    t.check_placeholders(generation_variables());
    std::string text = t.render(generation_values({"relu", "class Model: REFERENCE_SOURCE", target}));
    EXPECT_NE(text.find("REFERENCE_SOURCE"), std::string::npos) << target;
    EXPECT_NE(text.find("ModelNew"), std::string::npos) << target;
  }
  PromptTemplate fix = PromptTemplate::load(dir + "/fix.md");
  fix.check_placeholders(fix_variables());
  FixInput input{"relu", "REFERENCE_SOURCE", "triton", "CANDIDATE_CODE", "l2_compile", "compile_error",
                 "ERROR_MESSAGE", "LOG_TAIL", 1};
  std::string text = fix.render(fix_values(input, 5000));
  for (const char* part : {"REFERENCE_SOURCE", "CANDIDATE_CODE", "l2_compile", "compile_error", "ERROR_MESSAGE",
                           "LOG_TAIL", "old_string", "modifications"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part;
  }
}

}  // namespace
}  // namespace kforge::llm
