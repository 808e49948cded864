#include "models.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace kforge::llm {
namespace {

const std::string kShipped = std::string(KFORGE_PIPELINES_DIR) + "/models.yaml";

std::string write_temp(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << text;
  return path.string();
}

std::string load_error(const std::string& text) {
  std::string path = write_temp("models", text);
  try {
    ModelCatalog::load(path);
  } catch (const std::runtime_error& e) {
    std::filesystem::remove(path);
    return e.what();
  }
  std::filesystem::remove(path);
  return "(no error)";
}

TEST(ShippedModels, HaveTheSeedsModelsAndLocalServers) {
  ModelCatalog catalog = ModelCatalog::load(kShipped);
  for (const char* name : {"deepseek-chat", "deepseek-reasoner", "glm-5.1", "qwen2.5-coder-7b",
                           "qwen2.5-coder-14b", "qwen2.5-coder-32b"}) {
    const ModelPreset* preset = catalog.find(name);
    ASSERT_NE(preset, nullptr) << name;
    EXPECT_GT(preset->settings.price_input_per_million.value_or(0), 0) << name;
    EXPECT_GT(preset->settings.price_output_per_million.value_or(0), 0) << name;
    EXPECT_FALSE(preset->settings.api_key_env.value_or("").empty()) << name;
    EXPECT_EQ(preset->settings.base_url->rfind("https://", 0), 0u) << name;
  }
  for (const char* name : {"vllm", "llama-cpp", "ollama"}) {
    const ModelPreset* preset = catalog.find(name);
    ASSERT_NE(preset, nullptr) << name;
    EXPECT_EQ(preset->settings.base_url->rfind("http://127.0.0.1:", 0), 0u) << name;
  }
  EXPECT_EQ(*catalog.find("deepseek-chat")->settings.base_url, "https://api.deepseek.com");
  EXPECT_EQ(*catalog.find("glm-5.1")->settings.base_url, "https://open.bigmodel.cn/api/paas/v4");
  EXPECT_EQ(*catalog.find("qwen2.5-coder-7b")->settings.base_url,
            "https://dashscope.aliyuncs.com/compatible-mode/v1");
}

// Seed 000 lists a cost per operator; the presets must reproduce it for the documented
// typical call (2000 prompt + 1000 completion tokens).
TEST(ShippedModels, PricesReproduceTheSeedsCostPerOperator) {
  ModelCatalog catalog = ModelCatalog::load(kShipped);
  const Usage typical{2000, 1000};
  const std::map<std::string, double> per_op = {
      {"deepseek-chat", 0.001},     {"deepseek-reasoner", 0.003},  {"glm-5.1", 0.001},
      {"qwen2.5-coder-7b", 0.0005}, {"qwen2.5-coder-14b", 0.0008}, {"qwen2.5-coder-32b", 0.0015}};
  for (const auto& [name, cost] : per_op) {
    ResolvedModel m = resolve_model(name, catalog, {});
    EXPECT_NEAR(m.pricing.cost(typical), cost, 1e-12) << name;
  }
}

TEST(ResolveModel, StageOverridesBeatThePresetWhichBeatsDefaults) {
  ModelCatalog catalog = ModelCatalog::load(kShipped);
  ModelSettings overrides;
  overrides.temperature = 0.0;
  overrides.base_url = "http://127.0.0.1:9/v1";
  ResolvedModel m = resolve_model("deepseek-chat", catalog, overrides);
  EXPECT_EQ(m.base_url, "http://127.0.0.1:9/v1");
  EXPECT_EQ(m.sampling.temperature, 0.0);
  EXPECT_EQ(m.model_id, "deepseek-chat");
  EXPECT_EQ(m.api_key_env, "DEEPSEEK_API_KEY");
  EXPECT_EQ(m.timeout_s, 300) << "built-in default";
  EXPECT_EQ(m.retry.max_retries, 5);
}

TEST(ResolveModel, ANameThatIsNoPresetNeedsABaseUrl) {
  ModelCatalog catalog = ModelCatalog::load(kShipped);
  try {
    resolve_model("gpt-9", catalog, {});
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), LlmError::Kind::config);
    std::string message = e.what();
    EXPECT_NE(message.find("gpt-9"), std::string::npos);
    EXPECT_NE(message.find("deepseek-chat"), std::string::npos) << "lists the presets";
  }
  ModelSettings overrides;
  overrides.base_url = "http://127.0.0.1:8000/v1";
  ResolvedModel m = resolve_model("my-finetune", catalog, overrides);
  EXPECT_EQ(m.model_id, "my-finetune");
  EXPECT_EQ(m.pricing.cost({1000000, 1000000}), 0.0);
}

TEST(ResolveModel, RefusesExtraBodyFieldsTheClientOwns) {
  ModelSettings overrides;
  overrides.base_url = "http://x";
  overrides.extra_body = nlohmann::json{{"stream", true}};
  EXPECT_THROW(resolve_model("m", ModelCatalog{}, overrides), LlmError);
}

TEST(ModelCatalog, ErrorsPointAtTheLine) {
  std::string message = load_error("models:\n  a:\n    base_url: http://x\n    temprature: 1\n");
  EXPECT_NE(message.find(":4:5: unknown field 'temprature'"), std::string::npos) << message;
  message = load_error("models:\n  a:\n    base_url: http://x\n    params: {max_tokens: lots}\n");
  EXPECT_NE(message.find(":4:") , std::string::npos) << message;
  EXPECT_NE(message.find("max_tokens must be an integer"), std::string::npos) << message;
  message = load_error("models:\n  a:\n    model: x\n");
  EXPECT_NE(message.find("has no base_url"), std::string::npos) << message;
  message = load_error("presets: {}\n");
  EXPECT_NE(message.find("'models:'"), std::string::npos) << message;
}

// YAML keeps both of two equal keys: the second preset would silently replace the first.
TEST(ModelCatalog, APresetDefinedTwiceIsAnErrorAtTheSecond) {
  const std::string message =
      load_error("models:\n  a:\n    base_url: http://x\n  a:\n    base_url: http://y\n");
  EXPECT_NE(message.find(":4:3: model 'a' is defined twice (first at line 2)"), std::string::npos) << message;
}

// Read as a pipeline file is: a FIFO would wait for a writer forever, a device never end.
TEST(ModelCatalog, AFileThatIsNoRegularFileIsRefusedAtOnce) {
  const std::string dir = (std::filesystem::temp_directory_path() / "kforge-models-fifo").string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_EQ(::mkfifo((dir + "/models.yaml").c_str(), 0600), 0);
  for (const std::string path : {dir + "/models.yaml", std::string("/dev/zero"), dir}) {
    try {
      ModelCatalog::load(path);
      ADD_FAILURE() << path << " was read";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(ResolveModel, RefusesBackoffsThatCannotHoldAndUrlsThatAreNotHttp) {
  ModelSettings overrides;
  overrides.base_url = "http://x";
  overrides.backoff_max_s = 0;  // below the default backoff_initial of 1 s
  EXPECT_THROW(resolve_model("m", ModelCatalog{}, overrides), LlmError);
  overrides.backoff_max_s.reset();
  overrides.base_url = "ftp://x/v1";
  try {
    resolve_model("m", ModelCatalog{}, overrides);
    ADD_FAILURE() << "ftp accepted";
  } catch (const LlmError& e) {
    EXPECT_NE(std::string(e.what()).find("is not an http:// or https:// URL"), std::string::npos) << e.what();
  }
  overrides.base_url = "HTTPS://Example.com/v1";
  EXPECT_EQ(resolve_model("m", ModelCatalog{}, overrides).base_url, "HTTPS://Example.com/v1");
}

TEST(ModelCatalog, AMissingFileIsAnEmptyCatalogThatSaysSo) {
  ModelCatalog catalog = ModelCatalog::load("/nonexistent/models.yaml");
  EXPECT_FALSE(catalog.file_found());
  try {
    resolve_model("deepseek-chat", catalog, {});
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_NE(std::string(e.what()).find("file not found"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kforge::llm
