// The kforge_llm plugin: stage kinds llm.generate, llm.fix and llm.select. The logic lives
// in kforge_llm_lib; this file maps job keys and stage parameters onto it.
#include "backend_pool.hpp"
#include "code_extract.hpp"
#include "fix_agent.hpp"
#include "model_selector.hpp"
#include "prompt_template.hpp"
#include "prompts.hpp"

#include <kforge/bounded_file.hpp>
#include <kforge/eval/vocabulary.hpp>
#include <kforge/sdk.hpp>

#include <filesystem>
#include <memory>

namespace {

using kforge::sdk::Job;
using kforge::sdk::Param;
using kforge::sdk::PipelineDir;
using kforge::sdk::Seconds;
namespace llm = kforge::llm;
namespace eval = kforge::eval;  // the words the eval plugin shares (vocabulary.hpp)

constexpr const char* kPluginName = "llm";
// How much of an unusable answer is kept in the verdict's log for the reader.
constexpr size_t kAnswerLogLimit = 4000;
// A task file read for the prompt: a program of a few KB (the eval plugin's bound).
constexpr uint64_t kMaxTaskFileBytes = 16u << 20;

// ---- parameters shared by the stages that call a model ----

// What every model-calling stage is configured with; nullopt: the preset's (or the default).
struct CallerOptions {
  std::string backend;
  std::string model;
  std::filesystem::path models_file;
  std::optional<std::string> base_url;
  std::optional<std::string> api_key_env;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> max_tokens;
  std::optional<int64_t> seed;
  std::optional<Seconds> timeout;
  std::optional<std::string> extra_body;  // a mapping's JSON text
  std::optional<int64_t> max_concurrency;
  std::optional<double> requests_per_minute;
  std::optional<int64_t> max_retries;
  std::optional<Seconds> backoff_initial;
  std::optional<Seconds> backoff_max;
  std::optional<double> price_input_per_million;
  std::optional<double> price_output_per_million;
  std::filesystem::path cassette;
  bool strict = true;
  double latency_scale = 0;
  std::string system;
  std::string code_block;
  std::vector<std::string> code_languages;
  std::string prompt;  // each stage declares its own: relative to the pipeline file
};

template <typename Options>
std::vector<Param> backend_params() {
  return {
      Param{"backend", KF_PARAM_STRING, "openai", false,
            "Where answers come from: openai (the live OpenAI-compatible API), replay (the "
            "cassette, offline), record (the cassette; misses are asked live and appended)."}
          .one_of({"openai", "replay", "record"})
          .template bind<Options>(&Options::backend),
      Param{"model", KF_PARAM_STRING, "", false,
            "Model name: a preset of models_file, or an API model id together with base_url. "
            "Empty: the job's candidate.model, as llm.select sets it."}
          .template bind<Options>(&Options::model),
      Param{"models_file", KF_PARAM_STRING, "models.yaml", false,
            "Model presets (base_url, model id, api_key_env, prices, default params); relative "
            "to the pipeline file."}
          .template bind<Options>(&Options::models_file),
      Param{"base_url", KF_PARAM_STRING, nullptr, false,
            "Overrides the preset's base URL, e.g. http://127.0.0.1:8000/v1 for vLLM."}
          .template bind<Options>(&Options::base_url),
      Param{"api_key_env", KF_PARAM_STRING, nullptr, false,
            "Overrides the preset's name of the environment variable holding the API key; \"\" "
            "sends no key. The key itself is never logged or stored."}
          .template bind<Options>(&Options::api_key_env),
      Param{"temperature", KF_PARAM_FLOAT, nullptr, false,
            "Sampling temperature (default: the preset's, else the server's). Use > 0 with k > 1."}
          .at_least(0)
          .template bind<Options>(&Options::temperature),
      Param{"top_p", KF_PARAM_FLOAT, nullptr, false, "Nucleus sampling (default: the preset's, else the server's)."}
          .above(0)
          .at_most(1)
          .template bind<Options>(&Options::top_p),
      Param{"max_tokens", KF_PARAM_INT, nullptr, false, "Answer length cap (default: the preset's, else the server's)."}
          .at_least(1)
          .template bind<Options>(&Options::max_tokens),
      Param{"seed", KF_PARAM_INT, nullptr, false,
            "Base seed; each request sends seed + candidate.sample so the k samples differ "
            "(default: the preset's, else 0). -1 sends no seed."}
          .at_least(-1)
          .template bind<Options>(&Options::seed),
      Param{"timeout", KF_PARAM_DURATION, nullptr, false,
            "Time per HTTP request, e.g. 90s or 5m (default: the preset's, else 300s). The stage "
            "timeout bounds all retries together."}
          .above(0)
          .template bind<Options>(&Options::timeout),
      Param{"extra_body", KF_PARAM_OBJECT, nullptr, false,
            "Fields merged into the request body, e.g. {top_k: 20} (default: the preset's). "
            "model, messages and stream are refused."}
          .template bind<Options>(&Options::extra_body),
      Param{"max_concurrency", KF_PARAM_INT, nullptr, false,
            "Requests in flight per model for this stage, on top of the stage concurrency "
            "(default: the preset's, else no cap)."}
          .at_least(0)
          .template bind<Options>(&Options::max_concurrency),
      Param{"requests_per_minute", KF_PARAM_FLOAT, nullptr, false,
            "Request rate per model for this stage, a token bucket holding one second's worth "
            "(default: the preset's, else no limit)."}
          .at_least(0)
          .template bind<Options>(&Options::requests_per_minute),
      Param{"max_retries", KF_PARAM_INT, nullptr, false,
            "Retries on 429, 5xx, connection errors and timeouts (default: the preset's, else 5)."}
          .at_least(0)
          .template bind<Options>(&Options::max_retries),
      Param{"backoff_initial", KF_PARAM_DURATION, nullptr, false,
            "First retry wait, doubled per retry with jitter; Retry-After wins when the server "
            "sends it (default: the preset's, else 1s)."}
          .at_least(0)
          .template bind<Options>(&Options::backoff_initial),
      Param{"backoff_max", KF_PARAM_DURATION, nullptr, false,
            "Longest retry wait, at least backoff_initial; a longer Retry-After fails the request "
            "(default: the preset's, else 60s)."}
          .above(0)
          .template bind<Options>(&Options::backoff_max),
      Param{"price_input_per_million", KF_PARAM_FLOAT, nullptr, false,
            "US dollars per million prompt tokens (default: the preset's, else 0)."}
          .at_least(0)
          .template bind<Options>(&Options::price_input_per_million),
      Param{"price_output_per_million", KF_PARAM_FLOAT, nullptr, false,
            "US dollars per million completion tokens (default: the preset's, else 0)."}
          .at_least(0)
          .template bind<Options>(&Options::price_output_per_million),
      Param{"cassette", KF_PARAM_STRING, "", false,
            "JSONL cassette for backend replay/record, relative to the pipeline file."}
          .template bind<Options>(&Options::cassette),
      Param{"strict", KF_PARAM_BOOL, "true", false,
            "replay: a request missing from the cassette is an error (cassette_miss). false: "
            "ask the live API instead (not recorded)."}
          .template bind<Options>(&Options::strict),
      Param{"latency_scale", KF_PARAM_FLOAT, "0", false,
            "replay/record: a served answer waits its recorded duration times this (0: at once; "
            "1: as recorded, for benchmarks)."}
          .at_least(0)
          .template bind<Options>(&Options::latency_scale),
      Param{"system", KF_PARAM_STRING, "You are an expert in writing fast and correct compute kernels.", false,
            "System message; empty sends none."}
          .template bind<Options>(&Options::system),
      Param{"code_block", KF_PARAM_STRING, "first", false,
            "Which fenced block holds the code when several qualify: first or last."}
          .one_of({"first", "last"})
          .template bind<Options>(&Options::code_block),
      Param{"code_languages", KF_PARAM_STRING_LIST, "[python, py]", false,
            "Fence tags preferred when picking the code block; with none of them present any "
            "block qualifies, and an answer without fences is code as a whole."}
          .template bind<Options>(&Options::code_languages),
  };
}

std::optional<double> seconds_of(const std::optional<Seconds>& duration) {
  return duration ? std::optional<double>(duration->count()) : std::nullopt;
}

llm::ModelSettings model_overrides(const CallerOptions& options) {
  llm::ModelSettings s;
  s.base_url = options.base_url;
  s.api_key_env = options.api_key_env;
  s.temperature = options.temperature;
  s.top_p = options.top_p;
  s.max_tokens = options.max_tokens;
  s.seed = options.seed;
  s.timeout_s = seconds_of(options.timeout);
  s.max_concurrency = options.max_concurrency;
  s.requests_per_minute = options.requests_per_minute;
  s.max_retries = options.max_retries;
  s.backoff_initial_s = seconds_of(options.backoff_initial);
  s.backoff_max_s = seconds_of(options.backoff_max);
  s.price_input_per_million = options.price_input_per_million;
  s.price_output_per_million = options.price_output_per_million;
  if (options.extra_body) {
    nlohmann::json extra = nlohmann::json::parse(*options.extra_body);
    // Refused here, when the stage is created, as a preset's extra_body is when its file is read.
    for (const char* reserved : {"model", "messages", "stream"}) {
      if (extra.contains(reserved)) {
        throw std::invalid_argument(std::string("extra_body may not set '") + reserved +
                                    "': the client owns it (set the model with the model parameter)");
      }
    }
    s.extra_body = std::move(extra);
  }
  return s;
}

llm::ExtractOptions extract_options(const CallerOptions& options) {
  llm::ExtractOptions extract;
  extract.take_last = options.code_block == "last";
  extract.languages = options.code_languages;
  return extract;
}

// The name the prompt shows ("relu"), and the id cassette selectors match ("001_relu"):
// ids are unique within a task source, names need not be.
std::string task_name_of(const Job& job) {
  auto name = job.get(KF_KEY_TASK_NAME);
  return std::string(name ? *name : job.get_or(KF_KEY_TASK_ID));
}
std::string task_id_of(const Job& job) {
  auto id = job.get(KF_KEY_TASK_ID);
  return std::string(id ? *id : job.get_or(KF_KEY_TASK_NAME));
}

// What every model-calling stage holds: the backends, the prompt and how it asks.
class ModelCaller {
 public:
  // `default_prompt` when the stage's prompt is empty; both relative to the pipeline file.
  ModelCaller(const CallerOptions& options, const PipelineDir& dir, const std::string& default_prompt,
              const char* purpose)
      : model_(options.model), system_(options.system), extract_(extract_options(options)), purpose_(purpose) {
    llm::BackendSettings settings;
    settings.mode = llm::parse_backend_mode(options.backend);
    settings.models_file = options.models_file;
    // Without presets and without a base_url no model can be reached: every job would fail.
    if (!options.base_url && !std::filesystem::is_regular_file(settings.models_file)) {
      throw std::invalid_argument("models_file '" + settings.models_file +
                                  "' does not exist (or is not a file), and no base_url is set: no model could be "
                                  "reached; point models_file at a presets file (e.g. pipelines/models.yaml)");
    }
    settings.overrides = model_overrides(options);
    settings.cassette = options.cassette;
    settings.strict = options.strict;
    settings.latency_scale = options.latency_scale;
    settings.notice = [](const std::string& message) {
      kforge::sdk::log(KF_LOG_WARN, kPluginName, message);
    };
    pool_ = std::make_unique<llm::BackendPool>(std::move(settings));
    template_ = std::make_unique<llm::PromptTemplate>(
        llm::PromptTemplate::load(dir.resolve(options.prompt.empty() ? default_prompt : options.prompt)));
    // A fixed model's preset is resolved now (validate reports an unknown one); its API key
    // belongs to the run's environment and is checked by preflight. Without one, llm.select
    // may choose any preset: each must take this stage's settings.
    if (!model_.empty()) {
      pool_->resolve(model_);
    } else {
      pool_->resolve_every_preset();
    }
  }

  // Makes the fixed model's backend before the first job, so an unset api_key_env variable
  // stops the run instead of failing every job. A model llm.select chooses per job is known
  // only then: its missing key is that job's llm_error.
  void preflight() {
    if (!model_.empty()) pool_->get(model_);
  }

  const llm::PromptTemplate& prompt() const { return *template_; }
  const llm::ExtractOptions& extract() const { return extract_; }

  // The model this job uses: the stage's own, else the one llm.select chose.
  std::string model_for(const Job& job) const {
    return model_.empty() ? job.get_or(KF_KEY_CANDIDATE_MODEL) : model_;
  }

  // Asks the model; on failure gives the job its verdict and returns nullopt.
  std::optional<llm::ChatResult> ask(Job& job, const std::string& model_name,
                                     std::string user_message) {
    if (model_name.empty()) {
      job.error("llm_error", std::string("no model for this job: set the stage's model parameter "
                                         "or put an llm.select stage before it"));
      return std::nullopt;
    }
    try {
      const llm::ModelBackend& target = pool_->get(model_name);
      llm::ChatRequest request;
      request.model = target.model.model_id;
      request.messages = llm::chat_messages(system_, std::move(user_message));
      request.params = target.model.sampling;
      const int sample = static_cast<int>(job.number(KF_KEY_CANDIDATE_SAMPLE).value_or(0));
      const int64_t base_seed = request.params.seed.value_or(0);
      request.params.seed = base_seed < 0 ? std::nullopt : std::optional<int64_t>(base_seed + sample);
      request.context = {task_id_of(job), sample,
                         static_cast<int>(job.number(KF_KEY_CANDIDATE_ROUND).value_or(0)),
                         purpose_, model_name};
      request.seconds_left = job.seconds_left();
      request.cancelled = [&job] { return job.cancelled(); };
      llm::ChatResult result = target.backend->complete(request);
      account(job, result);
      return result;
    } catch (const llm::LlmError& e) {
      job.metric("attempts", e.attempts());
      switch (e.kind()) {
        case llm::LlmError::Kind::cancelled:
          job.error("cancelled", e.what());
          break;
        case llm::LlmError::Kind::cassette_miss:
          job.error("cassette_miss", e.what());
          break;
        case llm::LlmError::Kind::api:
        case llm::LlmError::Kind::config:
          job.error("llm_error", e.what());
          break;
      }
      return std::nullopt;
    }
  }

 private:
  // Tokens and money add up over generation and every fix round of a candidate.
  static void account(Job& job, const llm::ChatResult& result) {
    auto add = [&job](const char* key, double value) {
      job.set_number(key, job.number(key).value_or(0) + value);
    };
    add(KF_KEY_CANDIDATE_TOKENS_IN, static_cast<double>(result.usage.prompt_tokens));
    add(KF_KEY_CANDIDATE_TOKENS_OUT, static_cast<double>(result.usage.completion_tokens));
    add(KF_KEY_CANDIDATE_COST, result.cost_usd);
    job.metric("llm_seconds", result.latency_s);
    if (result.recorded_latency_s) job.metric(KF_METRIC_RECORDED_SECONDS, *result.recorded_latency_s);
    job.metric("tokens_in", static_cast<double>(result.usage.prompt_tokens));
    job.metric("tokens_out", static_cast<double>(result.usage.completion_tokens));
    job.metric("cost_usd", result.cost_usd);
    job.metric("attempts", result.attempts);
    job.set("llm.source", result.served_from.empty() ? "api" : result.served_from);
  }

  std::string model_;
  std::string system_;
  llm::ExtractOptions extract_;
  std::string purpose_;
  std::unique_ptr<llm::BackendPool> pool_;
  std::unique_ptr<llm::PromptTemplate> template_;
};

// The reference program: task.source, else the file task.path names.
std::optional<std::string> task_source_of(const Job& job) {
  if (auto source = job.get(KF_KEY_TASK_SOURCE)) return std::string(*source);
  auto path = job.get(KF_KEY_TASK_PATH);
  if (!path) return std::nullopt;
  std::string why;
  return kforge::read_bounded_file(std::string(*path), kMaxTaskFileBytes, why);
}

// ---- llm.generate ----

struct GenerateOptions : CallerOptions {
  std::string target;
};

class Generate : public kforge::sdk::Stage {
 public:
  using Options = GenerateOptions;
  static constexpr const char* kName = "llm.generate";
  static constexpr const char* kDoc =
      "Asks a model to write the candidate kernel for the task (task.source or task.path) "
      "and sets candidate.code, candidate.language, candidate.model; adds the call's "
      "tokens and cost to candidate.tokens_in/out and candidate.cost. Fails with no_code "
      "when the answer holds no code; errors with llm_error (API refused or kept failing), "
      "cassette_miss (replay) or task_unreadable.";
  static constexpr uint32_t kFlags = KF_STAGE_WAITS;
  static constexpr kf_stage_role kRole = KF_ROLE_GENERATE;

  static std::vector<Param> params() {
    std::vector<Param> params = {
        Param{"target", KF_PARAM_STRING, nullptr, true,
              "What the kernel is written in: cpp, triton or cuda. Becomes candidate.language "
              "and picks the default prompt."}
            .one_of({eval::kLanguageCpp, eval::kLanguageTriton, eval::kLanguageCuda})
            .bind(&Options::target),
        Param{"prompt", KF_PARAM_STRING, "", false,
              "Prompt template, relative to the pipeline file. Empty: "
              "prompts/generate_<target>.md. Placeholders: {{task_name}}, {{task_source}}, "
              "{{target}}."}
            .bind<Options>(&Options::prompt),
    };
    for (Param& p : backend_params<Options>()) params.push_back(std::move(p));
    return params;
  }

  Generate(const Options& options, const PipelineDir& dir)
      : target_(options.target), caller_(options, dir, "prompts/generate_" + target_ + ".md", "generate") {
    caller_.prompt().check_placeholders(llm::generation_variables());
  }

  void preflight() { caller_.preflight(); }

  void process(Job& job) override {
    const std::string task_name = task_name_of(job);
    std::optional<std::string> source = task_source_of(job);
    if (!source) {
      job.error("task_unreadable", "task '" + task_name + "' has neither task.source nor a "
                                   "readable task.path (" + job.get_or(KF_KEY_TASK_PATH, "unset") + ")");
      return;
    }
    const std::string model = caller_.model_for(job);
    std::string user = caller_.prompt().render(llm::generation_values({task_name, *source, target_}));
    std::optional<llm::ChatResult> answer = caller_.ask(job, model, std::move(user));
    if (!answer) return;
    job.set(KF_KEY_CANDIDATE_MODEL, model);
    std::optional<llm::CodeBlock> code = llm::extract_code(answer->content, caller_.extract());
    if (!code) {
      job.log_tail(llm::cut_middle(answer->content, kAnswerLogLimit));
      job.fail("no_code", "the answer of " + model + " holds no code" +
                              (answer->finish_reason == "length"
                                   ? " (it was cut at max_tokens; raise max_tokens)"
                                   : ""));
      return;
    }
    job.set(KF_KEY_CANDIDATE_CODE, code->code);
    job.set(KF_KEY_CANDIDATE_LANGUAGE, target_);
    job.pass();
  }

 private:
  std::string target_;
  ModelCaller caller_;
};

// ---- llm.fix ----

struct FixOptions : CallerOptions {
  int64_t log_limit = 0;
  double fuzzy_threshold = 0;
  double ambiguity_margin = 0;
};

class Fix : public kforge::sdk::Stage {
 public:
  using Options = FixOptions;
  static constexpr const char* kName = "llm.fix";
  static constexpr const char* kDoc =
      "The FixAgent: shows the model the failing candidate.code with last.stage, "
      "last.error_class and the error log (last.message + last.log_tail), asks for a JSON "
      "search/replace edit, applies it (exact, line-trimmed, whitespace-normalised, then "
      "fuzzy matching) and sets candidate.code, candidate.diff (unified diff), fix.levels and "
      "fix.summary. Fails with fix_failed when the answer cannot be parsed or applied. "
      "The number of rounds is bounded by the pipeline's back edge.";
  static constexpr uint32_t kFlags = KF_STAGE_WAITS;
  static constexpr kf_stage_role kRole = KF_ROLE_FIX;

  static std::vector<Param> params() {
    std::vector<Param> params = {
        Param{"prompt", KF_PARAM_STRING, "prompts/fix.md", false,
              "Prompt template, relative to the pipeline file. Placeholders: {{task_name}}, "
              "{{task_source}}, {{target}}, {{code}}, {{stage}}, {{error_class}}, {{error_log}}, "
              "{{round}}."}
            .bind<Options>(&Options::prompt),
        Param{"log_limit", KF_PARAM_INT, "5000", false,
              "Bytes of error log shown to the model; longer logs keep their head third and "
              "tail two-thirds."}
            .at_least(100)
            .bind(&Options::log_limit),
        Param{"fuzzy_threshold", KF_PARAM_FLOAT, "0.8", false,
              "Least similarity for placing an edit whose old_string is not in the code."}
            .above(0)
            .at_most(1)
            .bind(&Options::fuzzy_threshold),
        Param{"ambiguity_margin", KF_PARAM_FLOAT, "0.1", false,
              "A fuzzy match is refused when the runner-up place scores within this of the best."}
            .at_least(0)
            .bind(&Options::ambiguity_margin),
    };
    for (Param& p : backend_params<Options>()) params.push_back(std::move(p));
    return params;
  }

  Fix(const Options& options, const PipelineDir& dir)
      : caller_(options, dir, "prompts/fix.md", "fix"), log_limit_(options.log_limit) {
    caller_.prompt().check_placeholders(llm::fix_variables());
    applier_.fuzzy_threshold = options.fuzzy_threshold;
    applier_.ambiguity_margin = options.ambiguity_margin;
  }

  void preflight() { caller_.preflight(); }

  void process(Job& job) override {
    auto code = job.get(KF_KEY_CANDIDATE_CODE);
    if (!code) {
      job.error("fix_failed", "the job has no candidate.code to fix");
      return;
    }
    llm::FixInput input;
    input.task_name = task_name_of(job);
    input.task_source = task_source_of(job).value_or("(the reference source is not available)");
    input.target = job.get_or(KF_KEY_CANDIDATE_LANGUAGE, eval::kLanguagePython);
    input.code = std::string(*code);
    input.stage = job.get_or(KF_KEY_LAST_STAGE, "unknown");
    input.error_class = job.get_or(KF_KEY_LAST_ERROR_CLASS);
    input.message = job.get_or(KF_KEY_LAST_MESSAGE);
    input.log_tail = job.get_or(KF_KEY_LAST_LOG_TAIL);
    input.round = static_cast<int>(job.number(KF_KEY_CANDIDATE_ROUND).value_or(0));

    const std::string model = caller_.model_for(job);
    std::string user =
        caller_.prompt().render(llm::fix_values(input, static_cast<size_t>(log_limit_)));
    std::optional<llm::ChatResult> answer = caller_.ask(job, model, std::move(user));
    if (!answer) return;
    job.set("fix.model", model);
    try {
      llm::FixApplication fix =
          llm::apply_fix_answer(input.code, answer->content, caller_.extract(), applier_);
      job.set(KF_KEY_CANDIDATE_CODE, fix.code);
      job.set(KF_KEY_CANDIDATE_DIFF, fix.diff);
      job.set("fix.levels", fix.levels());
      job.set("fix.summary", fix.summary);
      job.metric("edits", static_cast<double>(fix.edits.size()));
      job.metric("rewrite", fix.rewrite ? 1 : 0);
      job.log_tail(fix.diff);
      job.pass();
    } catch (const std::exception& e) {
      job.log_tail(llm::cut_middle(answer->content, kAnswerLogLimit));
      job.fail("fix_failed", e.what());
    }
  }

 private:
  ModelCaller caller_;
  int64_t log_limit_;
  llm::ApplierOptions applier_;
};

// ---- llm.select ----

class Select : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "llm.select";
  static constexpr const char* kDoc =
      "Model selection: sets candidate.model from the task's complexity class "
      "(task.complexity, C1..C4) through a table (strategy table, seed 000's strategy C), "
      "or to one model for every task (strategy fixed). llm.generate and llm.fix use "
      "candidate.model when their own model parameter is empty. Sets select.reason.";

  struct Options {
    std::string strategy;
    std::optional<std::string> table;  // a mapping's JSON text
    std::string fallback;
  };
  static std::vector<Param> params() {
    return {
        Param{"strategy", KF_PARAM_STRING, "table", false,
              "table: look the task's complexity class up in `table`; fixed: `default` for every task."}
            .one_of({"table", "fixed"})
            .bind(&Options::strategy),
        Param{"table", KF_PARAM_OBJECT, nullptr, false,
              "Complexity class -> model name, e.g. {C1: deepseek-chat, C4: glm-5.1}; "
              "classes left out get `default`. Only with strategy table."}
            .bind(&Options::table),
        Param{"default", KF_PARAM_STRING, nullptr, true,
              "The model for tasks whose class is missing or not in the table, and for every "
              "task with strategy fixed."}
            .bind(&Options::fallback),
    };
  }

  explicit Select(const Options& options) : selector_(make_selector(options)) {}

  void process(Job& job) override {
    llm::ModelSelector::Choice choice = selector_.choose(job.get_or(KF_KEY_TASK_COMPLEXITY));
    job.set(KF_KEY_CANDIDATE_MODEL, choice.model);
    job.set("select.reason", choice.reason);
    job.pass();
  }

 private:
  static llm::ModelSelector make_selector(const Options& options) {
    if (options.strategy == "fixed") {
      // A table beside it would never be consulted, whatever its author meant: refused, as
      // the parameter's documentation says. `--set select.table='{}'` empties one.
      if (options.table && !nlohmann::json::parse(*options.table).empty()) {
        throw std::invalid_argument("strategy fixed takes no table (it gives `default` to every task): remove the "
                                    "table, or empty it with --set select.table='{}'");
      }
      return llm::ModelSelector::fixed(options.fallback);
    }
    if (!options.table) throw std::invalid_argument("strategy table needs a table (C1..C4 -> model)");
    const nlohmann::json table = nlohmann::json::parse(*options.table);  // a mapping: the host checked it
    std::map<std::string, std::string> by_class;
    for (const auto& [complexity, model] : table.items()) {
      if (!model.is_string()) {
        throw std::invalid_argument("table entry " + complexity + " must name a model");
      }
      by_class[complexity] = model.get<std::string>();
    }
    return llm::ModelSelector::by_complexity(by_class, options.fallback);
  }

  llm::ModelSelector selector_;
};

}  // namespace

KFORGE_PLUGIN("llm", "0.1.0", Generate, Fix, Select)
