#include "cassette.hpp"

#include "request_key.hpp"
#include "throttle.hpp"

#include <kforge/bounded_file.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace kforge::llm {

namespace {

// A recorded run's answers: thousands of kernels of a few KB each fit many times over.
constexpr uint64_t kMaxCassetteBytes = 256u << 20;

bool is_sha256_hex(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

Selector parse_selector(const nlohmann::json& match, const std::string& where) {
  if (!match.is_object() || match.empty()) {
    throw std::runtime_error(where + "\"match\" must be a non-empty object");
  }
  Selector selector;
  for (const auto& [field, value] : match.items()) {
    auto expect = [&](bool ok, const char* type) {
      if (!ok) throw std::runtime_error(where + "match." + field + " must be " + type);
    };
    if (field == "task") {
      expect(value.is_string(), "a string");
      selector.task = value.get<std::string>();
    } else if (field == "sample") {
      expect(value.is_number_integer(), "an integer");
      selector.sample = value.get<int>();
    } else if (field == "round") {
      expect(value.is_number_integer(), "an integer");
      selector.round = value.get<int>();
    } else if (field == "purpose") {
      expect(value == "generate" || value == "fix", "\"generate\" or \"fix\"");
      selector.purpose = value.get<std::string>();
    } else if (field == "model") {
      expect(value.is_string(), "a string");
      selector.model = value.get<std::string>();
    } else {
      throw std::runtime_error(where + "unknown selector field \"" + field +
                               "\" (known: task, sample, round, purpose, model)");
    }
  }
  return selector;
}

CassetteEntry parse_entry(const std::string& text, const std::string& where) {
  nlohmann::json line;
  try {
    line = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(where + "not valid JSON: " + e.what());
  }
  if (!line.is_object()) throw std::runtime_error(where + "a line must be a JSON object");
  CassetteEntry entry;
  bool has_key = line.contains("key");
  bool has_match = line.contains("match");
  if (has_key == has_match) {
    throw std::runtime_error(where + "a line needs exactly one of \"key\" (recorded) and "
                                     "\"match\" (selector)");
  }
  if (has_key) {
    if (!line["key"].is_string() || !is_sha256_hex(line["key"].get<std::string>())) {
      throw std::runtime_error(where + "\"key\" must be 64 lower-case hex digits (SHA-256)");
    }
    entry.key = line["key"].get<std::string>();
  } else {
    entry.selector = parse_selector(line["match"], where);
  }
  auto response = line.find("response");
  if (response == line.end() || !response->is_object() || !response->contains("content") ||
      !(*response)["content"].is_string()) {
    throw std::runtime_error(where + "\"response\" must be an object with a string \"content\"");
  }
  entry.content = (*response)["content"].get<std::string>();
  if (auto usage = response->find("usage"); usage != response->end()) {
    if (!usage->is_object()) throw std::runtime_error(where + "response.usage must be an object");
    entry.usage.prompt_tokens = usage->value("prompt_tokens", int64_t{0});
    entry.usage.completion_tokens = usage->value("completion_tokens", int64_t{0});
  }
  entry.finish_reason = response->value("finish_reason", std::string());
  entry.model = response->value("model", std::string());
  if (auto duration = line.find("duration_s"); duration != line.end()) {
    if (!duration->is_number() || duration->get<double>() < 0) {
      throw std::runtime_error(where + "\"duration_s\" must be a number >= 0");
    }
    entry.duration_s = duration->get<double>();
  }
  return entry;
}

}  // namespace

bool Selector::matches(const RequestContext& context) const {
  return (!task || *task == context.task) && (!sample || *sample == context.sample) &&
         (!round || *round == context.round) && (!purpose || *purpose == context.purpose) &&
         (!model || *model == context.model_name);
}

int Selector::specificity() const {
  return int(task.has_value()) + int(sample.has_value()) + int(round.has_value()) +
         int(purpose.has_value()) + int(model.has_value());
}

std::string Selector::describe() const {
  nlohmann::json fields = nlohmann::json::object();
  if (task) fields["task"] = *task;
  if (sample) fields["sample"] = *sample;
  if (round) fields["round"] = *round;
  if (purpose) fields["purpose"] = *purpose;
  if (model) fields["model"] = *model;
  return fields.dump();
}

std::shared_ptr<Cassette> Cassette::open(const std::string& path, bool create) {
  static std::mutex registry_mutex;
  static std::map<std::string, std::weak_ptr<Cassette>> registry;
  std::string id = std::filesystem::weakly_canonical(path).string();
  std::lock_guard lock(registry_mutex);
  if (auto existing = registry[id].lock()) return existing;
  auto cassette = std::make_shared<Cassette>(path, create);
  registry[id] = cassette;
  return cassette;
}

Cassette::Cassette(std::string path, bool create) : path_(std::move(path)) {
  std::error_code ec;
  if (create && !std::filesystem::exists(std::filesystem::symlink_status(path_, ec))) return;  // a new recording
  std::string why;
  const std::optional<std::string> content = read_bounded_file(path_, kMaxCassetteBytes, why);
  if (!content) {
    throw std::runtime_error("cassette " + path_ + " cannot be read: " + why +
                             (create || std::filesystem::exists(path_, ec) ? "" : "; record one with backend: record"));
  }
  std::istringstream in(*content);
  std::string text;
  while (std::getline(in, text)) {
    ++lines_;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    CassetteEntry entry = parse_entry(text, path_ + ":" + std::to_string(lines_) + ": ");
    entry.line = lines_;
    add(std::move(entry));
  }
}

Cassette::~Cassette() {
  if (writer_ != nullptr) std::fclose(writer_);
}

void Cassette::add(CassetteEntry entry) {
  if (entry.key) {
    auto [it, inserted] = by_key_.emplace(*entry.key, entry);
    if (!inserted) {
      throw std::runtime_error(path_ + ":" + std::to_string(entry.line) + ": repeats the key of line " +
                               std::to_string(it->second.line) + "; keep one of them");
    }
    return;
  }
  for (const CassetteEntry& other : selectors_) {
    if (other.selector->describe() == entry.selector->describe()) {
      throw std::runtime_error(path_ + ":" + std::to_string(entry.line) +
                               ": repeats the selector of line " + std::to_string(other.line) +
                               " " + entry.selector->describe() + "; keep one of them");
    }
  }
  selectors_.push_back(std::move(entry));
}

std::optional<CassetteEntry> Cassette::find(const std::string& key,
                                            const RequestContext& context) const {
  std::shared_lock lock(mutex_);
  if (auto it = by_key_.find(key); it != by_key_.end()) return it->second;
  const CassetteEntry* best = nullptr;
  const CassetteEntry* tie = nullptr;
  for (const CassetteEntry& entry : selectors_) {
    if (!entry.selector->matches(context)) continue;
    int score = entry.selector->specificity();
    if (best == nullptr || score > best->selector->specificity()) {
      best = &entry;
      tie = nullptr;
    } else if (score == best->selector->specificity()) {
      tie = &entry;
    }
  }
  if (tie != nullptr) {
    throw std::runtime_error("cassette " + path_ + ": lines " + std::to_string(best->line) +
                             " " + best->selector->describe() + " and " +
                             std::to_string(tie->line) + " " + tie->selector->describe() +
                             " match task '" + context.task + "' equally well; make one of "
                             "them more specific");
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

void Cassette::append(const std::string& key, const ChatRequest& request,
                      const ChatResult& result) {
  nlohmann::json params = chat_request_body(request);
  params.erase("model");
  params.erase("messages");
  nlohmann::json line = {
      {"key", key},
      {"model", request.model},
      {"sample", request.context.sample},
      {"context",
       {{"task", request.context.task},
        {"round", request.context.round},
        {"purpose", request.context.purpose},
        {"model", request.context.model_name}}},
      {"params", params},
      {"response",
       {{"content", result.content},
        {"usage",
         {{"prompt_tokens", result.usage.prompt_tokens},
          {"completion_tokens", result.usage.completion_tokens}}},
        {"finish_reason", result.finish_reason},
        {"model", result.model}}},
      {"duration_s", result.latency_s},
      {"recorded_at", utc_now_iso8601()}};
  std::string text = dump_json(line) + "\n";

  std::unique_lock lock(mutex_);
  if (by_key_.count(key) != 0) return;  // another thread recorded the same request
  if (writer_ == nullptr) {
    writer_ = std::fopen(path_.c_str(), "a");
    if (writer_ == nullptr) {
      throw std::runtime_error("cannot open cassette " + path_ + " for appending: " +
                               std::strerror(errno));
    }
  }
  if (std::fputs(text.c_str(), writer_) < 0 || std::fflush(writer_) != 0) {
    throw std::runtime_error("cannot write to cassette " + path_ + ": " + std::strerror(errno));
  }
  CassetteEntry entry = parse_entry(text, path_ + ": ");
  entry.line = ++lines_;
  by_key_.emplace(key, std::move(entry));
}

size_t Cassette::size() const {
  std::shared_lock lock(mutex_);
  return by_key_.size() + selectors_.size();
}

CassetteBackend::CassetteBackend(std::shared_ptr<Cassette> cassette,
                                 std::shared_ptr<ChatBackend> live, CassetteOptions options)
    : cassette_(std::move(cassette)), live_(std::move(live)), options_(options) {
  if (options_.record && !live_) {
    throw std::invalid_argument("recording into cassette " + cassette_->path() +
                                " needs a live backend");
  }
}

ChatResult CassetteBackend::complete(const ChatRequest& request) {
  const auto started = Clock::now();
  const std::string key = request_key(request);
  const RequestContext& ctx = request.context;
  std::optional<CassetteEntry> entry;
  try {
    entry = cassette_->find(key, ctx);
  } catch (const std::runtime_error& e) {
    throw LlmError(LlmError::Kind::cassette_miss, e.what());
  }
  if (entry) {
    // Bounded by a day as well: a recorded duration times latency_scale may be anything.
    double pause = std::min({entry->duration_s * options_.latency_scale, request.seconds_left, 86400.0});
    if (pause > 0) {
      auto until = started + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(pause));
      if (!sleep_until(until, request.cancelled)) {
        throw LlmError(LlmError::Kind::cancelled, "replay cancelled");
      }
    }
    ChatResult result;
    result.content = entry->content;
    result.usage = entry->usage;
    result.cost_usd = options_.pricing.cost(entry->usage);
    result.model = entry->model.empty() ? request.model : entry->model;
    result.finish_reason = entry->finish_reason;
    result.attempts = 0;
    result.recorded_latency_s = entry->duration_s;
    result.served_from = entry->key ? "cassette key " + key.substr(0, 12)
                                    : cassette_->path() + ":" + std::to_string(entry->line);
    result.latency_s = std::chrono::duration<double>(Clock::now() - started).count();
    return result;
  }
  if (!live_) {
    throw LlmError(
        LlmError::Kind::cassette_miss,
        "cassette " + cassette_->path() + " has no answer for task '" + ctx.task + "' (sample " +
            std::to_string(ctx.sample) + ", round " + std::to_string(ctx.round) + ", purpose " +
            ctx.purpose + ", model " + ctx.model_name + "), request key " + key +
            ". Record it with backend: record, or add a selector line such as "
            "{\"match\": {\"task\": \"" + ctx.task + "\", \"purpose\": \"" + ctx.purpose +
            "\"}, \"response\": {\"content\": \"...\"}}");
  }
  ChatResult result = live_->complete(request);
  if (options_.record) cassette_->append(key, request, result);
  return result;
}

}  // namespace kforge::llm
