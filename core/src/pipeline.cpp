// Reads a pipeline: files and includes, variables, typed parameters, routes, and the checks
// on the route graph. docs/pipelines.md describes the format for users.
//
// Every problem is collected, not thrown at once: a user who runs `kforge validate` should
// see all of them in one go. A check that cannot run because an earlier one failed (the
// graph checks when a route points nowhere) is skipped rather than adding noise.
#include "pipeline.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "edit_distance.hpp"
#include "registry.hpp"

namespace kforge {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

std::string Diagnostic::format() const {
  if (where.line <= 0) return fmt::format("{}: error: {}", where.file, message);
  std::string out =
      fmt::format("{}:{}:{}: error: {}\n", where.file, where.line, where.column, message);
  const std::string number = std::to_string(where.line);
  const size_t gutter = std::max<size_t>(5, number.size());
  // The caret copies the snippet's tabs so that it lines up under the same character.
  std::string indent;
  for (int i = 0; i + 1 < where.column; ++i) {
    indent += (static_cast<size_t>(i) < snippet.size() && snippet[i] == '\t') ? '\t' : ' ';
  }
  out += fmt::format("{:>{}} | {}\n", number, gutter, snippet);
  out += fmt::format("{:>{}} | {}^", "", gutter, indent);
  return out;
}

namespace {

std::string format_all(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) {
    if (!out.empty()) out += '\n';
    out += d.format();
  }
  return out;
}

}  // namespace

ConfigError::ConfigError(std::vector<Diagnostic> diagnostics)
    : std::runtime_error(format_all(diagnostics)), diagnostics_(std::move(diagnostics)) {}

namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
const std::vector<std::string> kTopKeys = {"pipeline", "include",       "vars",
                                           "tasks",    "max_in_flight", "stages"};
const std::vector<std::string> kTopOnlyKeys = {"pipeline", "tasks", "max_in_flight"};
const std::vector<std::string> kTasksKeys = {"uses", "with", "k"};
const std::vector<std::string> kStageKeys = {"id", "uses", "with", "concurrency", "timeout", "on"};
const std::vector<std::string> kBoundedRouteKeys = {"to", "max_rounds", "then"};
const std::vector<std::string> kStatusRoutes = {"pass", "fail", "error"};
// `tasks` is reserved because `--set tasks.PARAM` addresses the task source.
const std::vector<std::string> kReservedIds = {kEndTarget, "tasks"};

// ---- small text helpers ----------------------------------------------------------------

// The candidate that `name` is most likely a typo of, if any is close enough.
std::optional<std::string> closest(const std::string& name,
                                   const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = std::max<size_t>(2, name.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    const size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

std::string comma_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// "'a'", "'a' or 'b'", "'a', 'b' or 'c'"
std::string alternatives(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += "'" + names[i] + "'";
  }
  return out;
}

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_variable_name(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool is_stage_id(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// YAML 1.2 core schema decimal integer: [-+]?[0-9]+
bool is_integer_literal(std::string_view s) {
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// YAML 1.2 core schema decimal number: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool is_number_literal(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    size_t n = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++n;
    return n;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t mantissa = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

// Parses an integer literal; nullopt with `out_of_range` set when it does not fit.
std::optional<int64_t> parse_int64(std::string_view s, bool& out_of_range) {
  out_of_range = false;
  if (!is_integer_literal(s)) return std::nullopt;
  if (s[0] == '+') s.remove_prefix(1);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range) out_of_range = true;
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<double> parse_finite_double(const std::string& s) {
  if (!is_number_literal(s)) return std::nullopt;
  errno = 0;
  const double value = std::strtod(s.c_str(), nullptr);
  if (errno == ERANGE || !std::isfinite(value)) return std::nullopt;
  return value;
}

// The JSON value a plain (unquoted) YAML scalar stands for under the YAML 1.2 core schema.
Json plain_scalar_json(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  bool out_of_range = false;
  if (auto i = parse_int64(s, out_of_range)) return *i;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    int64_t value = 0;
    auto [end, ec] =
        std::from_chars(s.data() + 2, s.data() + s.size(), value, s[1] == 'x' ? 16 : 8);
    if (ec == std::errc() && end == s.data() + s.size()) return value;
  }
  if (auto d = parse_finite_double(s)) return *d;
  return s;
}

std::string json_text(const Json& j) {
  // Replace rather than throw on invalid UTF-8 (environment variables can hold any bytes).
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// A scalar written in quotes (or tagged !!str) is a string whatever it looks like.
bool is_quoted(const YAML::Node& scalar) {
  return scalar.Tag() == "!" || scalar.Tag() == "tag:yaml.org,2002:str";
}

const char* shape_of(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "a single value";
    default:
      return "nothing";
  }
}

const char* expected(kf_param_type type) {
  switch (type) {
    case KF_PARAM_STRING:
      return "a string";
    case KF_PARAM_INT:
      return "an integer";
    case KF_PARAM_FLOAT:
      return "a number";
    case KF_PARAM_BOOL:
      return "true or false";
    case KF_PARAM_STRING_LIST:
      return "a list of strings";
    case KF_PARAM_OBJECT:
      return "a mapping";
  }
  return "a value";
}

// ---- value conversion --------------------------------------------------------------------

// Where scalar text comes from and where problems go. Pipeline files expand ${...} and
// report at the node; command-line values and plugin defaults are literal and reported at
// a fixed place.
class ValueSource {
 public:
  virtual ~ValueSource() = default;
  // The scalar's text; nullopt once a problem has been reported.
  virtual std::optional<std::string> text(const YAML::Node& scalar) = 0;
  virtual void error(const YAML::Node& at, const std::string& message) = 0;
};

// Typed text of a scalar parameter: canonical `text` and `json`, or a problem.
bool typed_scalar(kf_param_type type, const std::string& text, const std::string& subject,
                  ParamValue& out, std::string& problem) {
  out.type = type;
  switch (type) {
    case KF_PARAM_STRING:
      out.text = text;
      out.json = json_text(Json(text));
      return true;
    case KF_PARAM_INT: {
      bool out_of_range = false;
      auto value = parse_int64(text, out_of_range);
      if (!value) {
        problem = out_of_range
                      ? fmt::format("{} is out of range: {} does not fit in a 64-bit integer",
                                    subject, text)
                      : fmt::format("{} must be an integer, got '{}'", subject, text);
        return false;
      }
      out.text = std::to_string(*value);
      out.json = json_text(Json(*value));
      return true;
    }
    case KF_PARAM_FLOAT: {
      auto value = parse_finite_double(text);
      if (!value) {
        problem = is_number_literal(text)
                      ? fmt::format("{} is out of range: {} is not a finite double", subject, text)
                      : fmt::format("{} must be a number, got '{}'", subject, text);
        return false;
      }
      out.text = text;  // as written: std::stod reads every number literal accepted above
      out.json = json_text(Json(*value));
      return true;
    }
    case KF_PARAM_BOOL:
      if (text != "true" && text != "false") {
        problem = fmt::format(
            "{} must be true or false, got '{}' (only true and false are accepted)", subject, text);
        return false;
      }
      out.text = text;
      out.json = text;
      return true;
    default:
      problem = fmt::format("{} must be {}", subject, expected(type));
      return false;
  }
}

std::optional<Json> to_json(const YAML::Node& node, const std::string& subject,
                            ValueSource& source) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: {
      auto text = source.text(node);
      if (!text) return std::nullopt;
      return is_quoted(node) ? Json(*text) : plain_scalar_json(*text);
    }
    case YAML::NodeType::Sequence: {
      Json array = Json::array();
      bool ok = true;
      for (const YAML::Node& item : node) {
        auto value = to_json(item, subject, source);
        ok = ok && value.has_value();
        if (value) array.push_back(std::move(*value));
      }
      return ok ? std::optional<Json>(std::move(array)) : std::nullopt;
    }
    case YAML::NodeType::Map: {
      Json object = Json::object();
      bool ok = true;
      for (auto it = node.begin(); it != node.end(); ++it) {
        if (!it->first.IsScalar()) {
          source.error(it->first, fmt::format("{}: mapping keys must be plain names", subject));
          ok = false;
          continue;
        }
        const std::string& key = it->first.Scalar();
        if (object.contains(key)) {
          source.error(it->first, fmt::format("{}: duplicate key '{}'", subject, key));
          ok = false;
          continue;
        }
        auto value = to_json(it->second, subject, source);
        ok = ok && value.has_value();
        if (value) object[key] = std::move(*value);
      }
      return ok ? std::optional<Json>(std::move(object)) : std::nullopt;
    }
    default:
      return Json(nullptr);
  }
}

// Converts a YAML value to a parameter of `type`, by the rules docs/pipelines.md gives.
std::optional<ParamValue> convert(kf_param_type type, const YAML::Node& value,
                                  const std::string& subject, ValueSource& source) {
  if (!value.IsDefined() || value.IsNull()) {
    source.error(value,
                 type == KF_PARAM_STRING
                     ? fmt::format("{} has no value (write \"\" for an empty string)", subject)
                     : fmt::format("{} has no value: expected {}", subject, expected(type)));
    return std::nullopt;
  }
  ParamValue out;
  out.type = type;
  if (type == KF_PARAM_STRING_LIST) {
    if (!value.IsSequence()) {
      source.error(value, value.IsScalar()
                              ? fmt::format("{} must be a list of strings, got a single value; "
                                            "write [x] for a list of one",
                                            subject)
                              : fmt::format("{} must be a list of strings, got {}", subject,
                                            shape_of(value)));
      return std::nullopt;
    }
    Json array = Json::array();
    bool ok = true;
    for (const YAML::Node& item : value) {
      if (!item.IsScalar()) {
        source.error(
            item, fmt::format("{}: each item must be a string, got {}", subject, shape_of(item)));
        ok = false;
        continue;
      }
      auto text = source.text(item);
      if (!text) {
        ok = false;
        continue;
      }
      out.items.push_back(*text);
      array.push_back(*text);
    }
    if (!ok) return std::nullopt;
    out.json = json_text(array);
    return out;
  }
  if (type == KF_PARAM_OBJECT) {
    if (!value.IsMap()) {
      source.error(value, fmt::format("{} must be a mapping (key: value, ...), got {}", subject,
                                      shape_of(value)));
      return std::nullopt;
    }
    auto json = to_json(value, subject, source);
    if (!json) return std::nullopt;
    out.json = json_text(*json);
    return out;
  }
  if (!value.IsScalar()) {
    source.error(value,
                 fmt::format("{} must be {}, got {}", subject, expected(type), shape_of(value)));
    return std::nullopt;
  }
  auto text = source.text(value);
  if (!text) return std::nullopt;
  std::string problem;
  if (!typed_scalar(type, *text, subject, out, problem)) {
    source.error(value, problem);
    return std::nullopt;
  }
  return out;
}

// A plugin's default is YAML text, except for strings: "a: b" is meant as that string.
std::optional<YAML::Node> parse_default(const kf_param_spec& spec, std::string& problem) {
  if (spec.type == KF_PARAM_STRING) return YAML::Node(std::string(spec.default_value));
  try {
    return YAML::Load(spec.default_value);
  } catch (const YAML::Exception& e) {
    problem = e.msg;
    return std::nullopt;
  }
}

// Parses duration text: seconds ("90", "1.5") or a number with a unit (500ms, 90s, 5m, 1h).
std::optional<double> parse_duration(const std::string& text) {
  static const std::pair<const char*, double> kUnits[] = {
      {"ms", 0.001}, {"s", 1}, {"m", 60}, {"h", 3600}};
  std::string number = text;
  double scale = 1;
  for (const auto& [unit, factor] : kUnits) {
    if (text.size() > std::strlen(unit) && text.ends_with(unit) &&
        std::isdigit(static_cast<unsigned char>(text[text.size() - std::strlen(unit) - 1]))) {
      number = text.substr(0, text.size() - std::strlen(unit));
      scale = factor;
      break;
    }
  }
  if (number.empty() || number[0] == '+' || number[0] == '-') return std::nullopt;
  auto value = parse_finite_double(number);
  if (!value) return std::nullopt;
  return *value * scale;
}

// ---- the loader ---------------------------------------------------------------------------

struct SourceFile {
  std::string shown;  // the path as diagnostics show it (as given, includes joined to it)
  std::string absolute;
  std::string dir;  // absolute directory: includes and stage base_dir are relative to it
  std::vector<std::string> lines;
  YAML::Node root;
};

struct Entry {
  std::string name;
  YAML::Node key;
  YAML::Node value;
};

// The entries of a YAML mapping that passed the key checks, in file order.
struct Mapping {
  std::vector<Entry> entries;
  const Entry* find(std::string_view name) const {
    for (const Entry& e : entries) {
      if (e.name == name) return &e;
    }
    return nullptr;
  }
};

struct VarDef {
  const SourceFile* file = nullptr;  // nullptr: set with --set, taken literally
  YAML::Node value;
  enum class State { Pending, Resolving, Done, Failed } state = State::Pending;
  std::string resolved;
};

struct ParamOverride {
  std::string owner;  // stage id, or "tasks"
  std::string param;
  std::string value;
  SourceLocation where;  // the command-line argument, for diagnostics
  bool used = false;
};

struct StageDraft {
  StageSpec spec;
  const SourceFile* file = nullptr;
  const StageKind* kind = nullptr;
  SourceLocation id_where;  // where the id is written; the stage's place when it has none
  std::optional<Mapping> on;
  // For graph diagnostics: where each route's target and exhaustion target were written,
  // and whether the route was written at all (defaults are reported at the stage).
  std::vector<SourceLocation> target_where;
  std::vector<SourceLocation> then_where;
  std::vector<bool> written;
};

class Loader {
 public:
  Loader(const Registry& registry, const Overrides& overrides)
      : registry_(registry), overrides_(overrides) {}

  PipelineSpec load(const std::string& path);

  // For ValueSource implementations.
  void error(const SourceLocation& where, std::string message);
  void error_at(const SourceFile& file, const YAML::Node& node, std::string message) {
    error(locate(file, node), std::move(message));
  }
  std::optional<std::string> expand(const SourceFile& file, const YAML::Node& scalar);

 private:
  enum class Lookup { Found, Missing, Failed };

  SourceLocation locate(const SourceFile& file, const YAML::Node& node) const;
  const SourceFile* read(const fs::path& absolute, const std::string& shown,
                         const std::optional<SourceLocation>& included_from);
  Mapping mapping(const SourceFile& file, const YAML::Node& node, const std::string& noun,
                  const std::string& context, const std::vector<std::string>& allowed,
                  bool always_list_allowed = false);
  void collect(const SourceFile& file, bool top, std::vector<const SourceFile*>& chain);
  void collect_includes(const SourceFile& file, const Entry& entry,
                        std::vector<const SourceFile*>& chain);
  void collect_vars(const SourceFile& file, const Entry& entry);
  void split_overrides();
  Lookup lookup(const std::string& name, std::string& out);
  bool resolve(const std::string& name, VarDef& var);

  std::optional<std::string> string_field(const SourceFile& file, const Entry& entry,
                                          const std::string& subject);
  std::optional<int> int_field(const SourceFile& file, const Entry& entry,
                               const std::string& subject, int64_t min);
  StageConfig configure(const kf_param_spec* params, uint32_t count, const std::string& owner_id,
                        const std::string& owner, const std::string& kind, const SourceFile& file,
                        const YAML::Node& owner_node, const Entry* with);
  void read_tasks(const SourceFile& file, const Entry& entry, PipelineSpec& spec);
  void read_stage(const SourceFile& file, const YAML::Node& node, size_t index);
  void read_routes(StageDraft& draft, size_t index);
  std::optional<std::string> route_target(const StageDraft& draft, const Entry& entry,
                                          const std::string& subject);
  void check_graph();

  const Registry& registry_;
  const Overrides& overrides_;
  std::vector<std::unique_ptr<SourceFile>> files_;
  std::vector<Diagnostic> diagnostics_;
  Mapping top_;
  std::map<std::string, VarDef> vars_;
  std::vector<std::string> resolving_;  // variables being resolved, innermost last
  std::vector<ParamOverride> param_overrides_;
  std::vector<std::pair<const SourceFile*, YAML::Node>> stage_nodes_;
  std::vector<StageDraft> stages_;
  bool graph_checkable_ = true;  // false once an id or route target is wrong
};

// Reads pipeline-file scalars: ${...} expanded, problems reported at the node (or at the
// key when the value is empty, whose own mark yaml-cpp puts on the next token).
class FileValues : public ValueSource {
 public:
  FileValues(Loader& loader, const SourceFile& file, YAML::Node key)
      : loader_(loader), file_(file), key_(std::move(key)) {}
  std::optional<std::string> text(const YAML::Node& scalar) override {
    return loader_.expand(file_, scalar);
  }
  void error(const YAML::Node& at, const std::string& message) override {
    const bool empty = !at.IsDefined() || at.IsNull();
    loader_.error_at(file_, empty && key_.IsDefined() ? key_ : at, message);
  }

 private:
  Loader& loader_;
  const SourceFile& file_;
  YAML::Node key_;
};

// Reads command-line values and plugin defaults: literal text, one place to report at.
class FixedValues : public ValueSource {
 public:
  FixedValues(Loader& loader, SourceLocation where) : loader_(loader), where_(std::move(where)) {}
  std::optional<std::string> text(const YAML::Node& scalar) override { return scalar.Scalar(); }
  void error(const YAML::Node&, const std::string& message) override {
    loader_.error(where_, message);
  }

 private:
  Loader& loader_;
  SourceLocation where_;
};

void Loader::error(const SourceLocation& where, std::string message) {
  Diagnostic d;
  d.where = where;
  d.message = std::move(message);
  if (where.line > 0) {
    for (const auto& file : files_) {
      if (file->shown == where.file && static_cast<size_t>(where.line) <= file->lines.size()) {
        d.snippet = file->lines[where.line - 1];
        break;
      }
    }
  }
  diagnostics_.push_back(std::move(d));
}

SourceLocation Loader::locate(const SourceFile& file, const YAML::Node& node) const {
  SourceLocation where{file.shown, 0, 0};
  if (!node.IsDefined()) return where;  // a missing node has no mark to give
  const YAML::Mark mark = node.Mark();
  if (mark.line >= 0) {
    where.line = mark.line + 1;
    where.column = mark.column + 1;
  }
  return where;
}

const SourceFile* Loader::read(const fs::path& absolute, const std::string& shown,
                               const std::optional<SourceLocation>& included_from) {
  auto fail = [&](const std::string& why) -> const SourceFile* {
    if (included_from) {
      error(*included_from, fmt::format("cannot read included file '{}': {}", shown, why));
    } else {
      error({shown, 0, 0}, fmt::format("cannot read pipeline file: {}", why));
    }
    return nullptr;
  };
  std::error_code ec;
  if (fs::is_directory(absolute, ec)) return fail("it is a directory");
  std::ifstream in(absolute, std::ios::binary);
  if (!in) return fail(std::strerror(errno));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();

  auto file = std::make_unique<SourceFile>();
  file->shown = shown;
  file->absolute = absolute.string();
  file->dir = absolute.parent_path().string();
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    file->lines.push_back(std::move(line));
  }
  const SourceFile& ref = *file;
  files_.push_back(std::move(file));

  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    SourceLocation where{shown, 0, 0};
    if (e.mark.line >= 0) where = {shown, e.mark.line + 1, e.mark.column + 1};
    error(where, fmt::format("invalid YAML: {}", e.msg));
    return nullptr;
  }
  if (documents.empty() || documents[0].IsNull()) {
    error({shown, 0, 0},
          "the file is empty: a pipeline file is a mapping of keys "
          "(pipeline:, tasks:, stages:, ...)");
    return nullptr;
  }
  if (documents.size() > 1) {
    error_at(ref, documents[1],
             "a pipeline file holds one YAML document: remove the second "
             "one (after '---') or move it into a file of its own");
    return nullptr;
  }
  files_.back()->root = documents[0];
  return &ref;
}

Mapping Loader::mapping(const SourceFile& file, const YAML::Node& node, const std::string& noun,
                        const std::string& context, const std::vector<std::string>& allowed,
                        bool always_list_allowed) {
  Mapping out;
  std::map<std::string, YAML::Node> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) {
      error_at(file, it->first, fmt::format("{} names must be plain words {}", noun, context));
      continue;
    }
    const std::string name = it->first.Scalar();
    if (auto first = seen.find(name); first != seen.end()) {
      const SourceLocation was = locate(file, first->second);
      error_at(file, it->first,
               fmt::format("duplicate {} '{}' {} (first given at line {})", noun, name, context,
                           was.line));
      continue;
    }
    seen.emplace(name, it->first);
    if (!allowed.empty() && !contains(allowed, name)) {
      auto guess = closest(name, allowed);
      std::string message = fmt::format("unknown {} '{}' {}", noun, name, context);
      if (guess) message += fmt::format("; did you mean '{}'?", *guess);
      if (!guess || always_list_allowed)
        message += fmt::format(" (allowed: {})", comma_list(allowed));
      error_at(file, it->first, std::move(message));
      continue;
    }
    out.entries.push_back({name, it->first, it->second});
  }
  return out;
}

// ---- variables ----------------------------------------------------------------------------

std::optional<std::string> Loader::expand(const SourceFile& file, const YAML::Node& scalar) {
  const std::string& s = scalar.Scalar();
  std::string out;
  bool ok = true;
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, 3, "$${") == 0) {  // the escape for a literal ${
      out += "${";
      i += 3;
      continue;
    }
    if (s.compare(i, 2, "${") != 0) {
      out += s[i++];
      continue;
    }
    const size_t close = s.find('}', i + 2);
    if (close == std::string::npos) {
      error_at(file, scalar,
               fmt::format("unterminated '${{' in '{}': close it with '}}' (write $${{ for a "
                           "literal ${{)",
                           s));
      return std::nullopt;
    }
    const std::string inner = s.substr(i + 2, close - i - 2);
    const size_t dash = inner.find(":-");
    const std::string name = inner.substr(0, dash);
    i = close + 1;
    if (!is_variable_name(name)) {
      error_at(file, scalar,
               fmt::format("invalid variable name '{}' in '${{{}}}': use letters, digits and _, "
                           "not starting with a digit",
                           name, inner));
      ok = false;
      continue;
    }
    std::string value;
    switch (lookup(name, value)) {
      case Lookup::Found:
        out += value;
        break;
      case Lookup::Missing:
        if (dash != std::string::npos) {
          out += inner.substr(dash + 2);
        } else {
          error_at(file, scalar,
                   fmt::format("unknown variable '{0}': define it under vars:, in the environment, "
                               "or give a default with ${{{0}:-value}}",
                               name));
          ok = false;
        }
        break;
      case Lookup::Failed:  // already reported where that variable is defined
        ok = false;
        break;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

Loader::Lookup Loader::lookup(const std::string& name, std::string& out) {
  if (auto it = vars_.find(name); it != vars_.end()) {
    if (!resolve(name, it->second)) return Lookup::Failed;
    out = it->second.resolved;
    return Lookup::Found;
  }
  if (const char* env = std::getenv(name.c_str())) {
    out = env;
    return Lookup::Found;
  }
  return Lookup::Missing;
}

bool Loader::resolve(const std::string& name, VarDef& var) {
  switch (var.state) {
    case VarDef::State::Done:
      return true;
    case VarDef::State::Failed:
      return false;
    case VarDef::State::Resolving: {
      // A cycle: name it from where it starts, and report it at the variable that closes it.
      auto start = std::find(resolving_.begin(), resolving_.end(), name);
      std::string cycle;
      for (auto it = start; it != resolving_.end(); ++it) cycle += *it + " -> ";
      cycle += name;
      VarDef& closing = vars_.at(resolving_.back());
      error_at(*closing.file, closing.value,
               fmt::format("variables refer to each other in a cycle: {}", cycle));
      return false;
    }
    case VarDef::State::Pending:
      break;
  }
  var.state = VarDef::State::Resolving;
  resolving_.push_back(name);
  auto value = expand(*var.file, var.value);
  resolving_.pop_back();
  var.state = value ? VarDef::State::Done : VarDef::State::Failed;
  if (value) var.resolved = std::move(*value);
  return value.has_value();
}

// ---- files and includes -------------------------------------------------------------------

void Loader::collect(const SourceFile& file, bool top, std::vector<const SourceFile*>& chain) {
  if (!file.root.IsMap()) {
    error_at(file, file.root,
             fmt::format("a pipeline file must be a mapping of keys (pipeline:, tasks:, "
                         "stages:, ...), got {}",
                         shape_of(file.root)));
    return;
  }
  const std::string context = top ? "at the top level" : "at the top level of an included file";
  Mapping keys = mapping(file, file.root, "key", context, kTopKeys);
  if (top) {
    top_ = keys;
  } else {
    for (const Entry& e : keys.entries) {
      if (contains(kTopOnlyKeys, e.name)) {
        error_at(file, e.key,
                 fmt::format("'{}' is only allowed in the top-level pipeline file; an included "
                             "file may hold include:, vars: and stages:",
                             e.name));
      }
    }
  }
  // Order matters: included stages come first, and this file's vars override theirs.
  if (const Entry* include = keys.find("include")) collect_includes(file, *include, chain);
  if (const Entry* vars = keys.find("vars")) collect_vars(file, *vars);
  if (const Entry* stages = keys.find("stages")) {
    if (stages->value.IsSequence()) {
      for (const YAML::Node& stage : stages->value) stage_nodes_.emplace_back(&file, stage);
    } else if (!stages->value.IsNull()) {
      error_at(file, stages->value,
               fmt::format("stages must be a list of stages (- id: ..., uses: ...), got {}",
                           shape_of(stages->value)));
    }
  }
}

void Loader::collect_includes(const SourceFile& file, const Entry& entry,
                              std::vector<const SourceFile*>& chain) {
  if (!entry.value.IsSequence()) {
    error_at(file, entry.value.IsNull() ? entry.key : entry.value,
             fmt::format("include must be a list of files, e.g. include: [common.yaml], got {}",
                         shape_of(entry.value)));
    return;
  }
  for (const YAML::Node& item : entry.value) {
    if (!item.IsScalar() || item.Scalar().empty()) {
      error_at(file, item, "each include must be a file name");
      continue;
    }
    const std::string& name = item.Scalar();
    if (name.find("${") != std::string::npos) {
      // Variables are only known once every include has been read.
      error_at(file, item, "include paths cannot use ${...} variables: write the path itself");
      continue;
    }
    const fs::path absolute = (fs::path(file.dir) / name).lexically_normal();
    const std::string shown =
        (fs::path(file.shown).parent_path() / name).lexically_normal().string();
    auto loop = std::find_if(chain.begin(), chain.end(),
                             [&](const SourceFile* f) { return f->absolute == absolute.string(); });
    if (loop != chain.end()) {
      std::string cycle;
      for (auto it = loop; it != chain.end(); ++it) cycle += (*it)->shown + " -> ";
      error_at(file, item, fmt::format("include cycle: {}{}", cycle, shown));
      continue;
    }
    const SourceFile* included = read(absolute, shown, locate(file, item));
    if (included == nullptr) continue;
    chain.push_back(included);
    collect(*included, false, chain);
    chain.pop_back();
  }
}

void Loader::collect_vars(const SourceFile& file, const Entry& entry) {
  if (entry.value.IsNull()) return;
  if (!entry.value.IsMap()) {
    error_at(
        file, entry.value,
        fmt::format("vars must be a mapping of names to values, got {}", shape_of(entry.value)));
    return;
  }
  for (const Entry& var : mapping(file, entry.value, "variable", "under vars", {}).entries) {
    VarDef def;
    def.file = &file;
    def.value = var.value;
    if (!is_variable_name(var.name)) {
      error_at(file, var.key,
               fmt::format("invalid variable name '{}': use letters, digits and _, not starting "
                           "with a digit",
                           var.name));
      def.state = VarDef::State::Failed;
    } else if (!var.value.IsScalar()) {
      error_at(
          file, var.value.IsNull() ? var.key : var.value,
          var.value.IsNull()
              ? fmt::format("variable '{}' has no value (write \"\" for an empty string)", var.name)
              : fmt::format("variable '{}' must be a single value, got {}", var.name,
                            shape_of(var.value)));
      def.state = VarDef::State::Failed;
    }
    vars_[var.name] = std::move(def);
  }
}

void Loader::split_overrides() {
  for (const auto& [key, value] : overrides_.values) {
    const SourceLocation where{fmt::format("--set {}={}", key, value), 0, 0};
    const size_t dot = key.find('.');
    if (dot == std::string::npos) {
      if (!is_variable_name(key)) {
        error(where, fmt::format("'{}' is not a variable name: use letters, digits and _, or "
                                 "STAGE.PARAM to set a stage parameter",
                                 key));
        continue;
      }
      VarDef def;
      def.state = VarDef::State::Done;
      def.resolved = value;
      vars_[key] = std::move(def);
      continue;
    }
    ParamOverride o;
    o.owner = key.substr(0, dot);
    o.param = key.substr(dot + 1);
    o.value = value;
    o.where = where;
    param_overrides_.push_back(std::move(o));
  }
}

// ---- fields -------------------------------------------------------------------------------

std::optional<std::string> Loader::string_field(const SourceFile& file, const Entry& entry,
                                                const std::string& subject) {
  FileValues values(*this, file, entry.key);
  auto value = convert(KF_PARAM_STRING, entry.value, subject, values);
  if (!value) return std::nullopt;
  return value->text;
}

std::optional<int> Loader::int_field(const SourceFile& file, const Entry& entry,
                                     const std::string& subject, int64_t min) {
  FileValues values(*this, file, entry.key);
  auto value = convert(KF_PARAM_INT, entry.value, subject, values);
  if (!value) return std::nullopt;
  const int64_t number = std::stoll(value->text);
  if (number < min || number > kMaxInt) {
    error_at(file, entry.value,
             number < min ? fmt::format("{} must be at least {}, got {}", subject, min, number)
                          : fmt::format("{} must be at most {}, got {}", subject, kMaxInt, number));
    return std::nullopt;
  }
  return static_cast<int>(number);
}

StageConfig Loader::configure(const kf_param_spec* params, uint32_t count,
                              const std::string& owner_id, const std::string& owner,
                              const std::string& kind, const SourceFile& file,
                              const YAML::Node& owner_node, const Entry* with) {
  StageConfig config;
  config.base_dir = file.dir;
  std::vector<std::string> names;
  for (uint32_t i = 0; i < count; ++i) names.emplace_back(params[i].name);

  Mapping given;
  if (with != nullptr && with->value.IsMap()) {
    const std::string context = fmt::format("for {} ({})", owner, kind);
    if (names.empty()) {
      for (auto it = with->value.begin(); it != with->value.end(); ++it) {
        error_at(file, it->first,
                 fmt::format("{} kind '{}' takes no parameters",
                             owner == "tasks" ? "source" : "stage", kind));
      }
    } else {
      given = mapping(file, with->value, "parameter", context, names);
    }
  } else if (with != nullptr && !with->value.IsNull()) {
    error_at(file, with->value,
             fmt::format("with must be a mapping of parameters, got {}", shape_of(with->value)));
  }

  for (ParamOverride& o : param_overrides_) {
    if (o.owner != owner_id) continue;
    o.used = true;
    if (!contains(names, o.param)) {
      auto guess = closest(o.param, names);
      error(o.where, fmt::format("{} ({}) has no parameter '{}'{}", owner, kind, o.param,
                                 guess ? fmt::format("; did you mean '{}'?", *guess)
                                       : fmt::format(" (parameters: {})", comma_list(names))));
    }
  }

  const SourceLocation owner_where =
      with != nullptr ? locate(file, with->key) : locate(file, owner_node);
  for (uint32_t i = 0; i < count; ++i) {
    const kf_param_spec& spec = params[i];
    const std::string subject = fmt::format("parameter '{}' of {}", spec.name, owner);
    std::optional<ParamValue> value;
    auto override_it = std::find_if(
        param_overrides_.begin(), param_overrides_.end(),
        [&](const ParamOverride& o) { return o.owner == owner_id && o.param == spec.name; });
    if (override_it != param_overrides_.end()) {
      // Written as on the command line: YAML flow text (`[a, b]`, `{x: 1}`), strings as is.
      FixedValues values(*this, override_it->where);
      if (spec.type == KF_PARAM_STRING) {
        value = convert(spec.type, YAML::Node(override_it->value), subject, values);
      } else {
        try {
          value = convert(spec.type, YAML::Load(override_it->value), subject, values);
        } catch (const YAML::Exception& e) {
          error(override_it->where, fmt::format("{}: cannot read '{}' as YAML: {}", subject,
                                                override_it->value, e.msg));
        }
      }
    } else if (const Entry* entry = given.find(spec.name)) {
      FileValues values(*this, file, entry->key);
      value = convert(spec.type, entry->value, subject, values);
    } else if (spec.required) {
      error(owner_where, fmt::format("missing required parameter '{}' of {} ({}): {}", spec.name,
                                     owner, kind, spec.doc ? spec.doc : ""));
    } else if (spec.default_value != nullptr) {
      const std::string default_subject =
          fmt::format("the default of parameter '{}' of kind '{}' (a plugin bug)", spec.name, kind);
      FixedValues values(*this, owner_where);
      std::string problem;
      auto node = parse_default(spec, problem);
      if (node) {
        value = convert(spec.type, *node, default_subject, values);
      } else {
        error(owner_where, fmt::format("{} is not valid YAML: {}", default_subject, problem));
      }
    }
    if (value) config.values.emplace(spec.name, std::move(*value));
  }
  return config;
}

// ---- the pipeline -------------------------------------------------------------------------

void Loader::read_tasks(const SourceFile& file, const Entry& entry, PipelineSpec& spec) {
  spec.source.where = locate(file, entry.key);
  if (!entry.value.IsMap()) {
    error_at(file, entry.value.IsNull() ? entry.key : entry.value,
             fmt::format("tasks must be a mapping with uses: (a source kind) and with: "
                         "(its parameters), got {}",
                         shape_of(entry.value)));
    return;
  }
  Mapping keys = mapping(file, entry.value, "key", "in tasks", kTasksKeys);
  if (const Entry* k = keys.find("k")) {
    if (auto value = int_field(file, *k, "k (candidates per task)", 1)) spec.k = *value;
  }
  const Entry* uses = keys.find("uses");
  if (uses == nullptr) {
    error_at(file, entry.key,
             "tasks has no uses: name the task source kind, e.g. uses: tasks.list");
    return;
  }
  auto name = string_field(file, *uses, "uses of tasks");
  if (!name) return;
  spec.source.uses = *name;
  const SourceKind* kind = registry_.source(*name);
  if (kind == nullptr) {
    std::vector<std::string> known;
    for (const SourceKind& s : registry_.sources()) known.push_back(s.name);
    auto near = registry_.closest(*name, true);
    error_at(file, uses->value,
             fmt::format("unknown task source kind '{}'{}", *name,
                         !near.empty()   ? fmt::format("; did you mean {}?", alternatives(near))
                         : known.empty() ? std::string("; no source kinds are registered (are the "
                                                       "plugins on KFORGE_PLUGIN_PATH?)")
                                         : fmt::format(" (known: {})", comma_list(known))));
    for (ParamOverride& o : param_overrides_) o.used = o.used || o.owner == "tasks";
    return;
  }
  spec.source.config = configure(kind->abi->params, kind->abi->param_count, "tasks", "tasks",
                                 kind->name, file, entry.key, keys.find("with"));
}

void Loader::read_stage(const SourceFile& file, const YAML::Node& node, size_t index) {
  StageDraft draft;
  draft.file = &file;
  draft.spec.where = locate(file, node);
  draft.id_where = draft.spec.where;
  if (!node.IsMap()) {
    error_at(
        file, node,
        fmt::format("each stage must be a mapping (- id: ..., uses: ...), got {}", shape_of(node)));
    graph_checkable_ = false;
    return;
  }
  // The raw id names the stage in messages about its keys, before it is checked itself.
  std::string label = fmt::format("stage #{}", index + 1);
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == "id" && it->second.IsScalar()) {
      label = fmt::format("stage '{}'", it->second.Scalar());
    }
  }
  Mapping keys = mapping(file, node, "key", "in " + label, kStageKeys);

  if (const Entry* id = keys.find("id")) {
    draft.id_where = locate(file, id->value);
    if (auto text = string_field(file, *id, "id of " + label)) {
      if (!is_stage_id(*text)) {
        error_at(
            file, id->value,
            fmt::format("invalid stage id '{}': use lower-case letters, digits, _ and -", *text));
        graph_checkable_ = false;
      } else if (contains(kReservedIds, *text)) {
        error_at(file, id->value,
                 fmt::format("stage id '{}' is reserved ({}): choose another name", *text,
                             *text == kEndTarget ? "'end' is the route target that ends a job"
                                                 : "'tasks' names the task source in --set "
                                                   "tasks.PARAM"));
        graph_checkable_ = false;
      } else {
        auto twin = std::find_if(stages_.begin(), stages_.end(),
                                 [&](const StageDraft& d) { return d.spec.id == *text; });
        if (twin != stages_.end()) {
          const SourceLocation& first = twin->id_where;
          error_at(file, id->value,
                   fmt::format("duplicate stage id '{}' (first declared at {}:{}:{})", *text,
                               first.file, first.line, first.column));
          graph_checkable_ = false;
        }
        draft.spec.id = *text;
        label = fmt::format("stage '{}'", *text);
      }
    } else {
      graph_checkable_ = false;
    }
  } else {
    error_at(file, node,
             fmt::format("{} has no id: add id: <name> (lower-case letters, digits, "
                         "_ and -)",
                         label));
    graph_checkable_ = false;
  }

  if (const Entry* uses = keys.find("uses")) {
    if (auto name = string_field(file, *uses, "uses of " + label)) {
      draft.spec.uses = *name;
      draft.kind = registry_.stage(*name);
      if (draft.kind == nullptr) {
        std::vector<std::string> known;
        for (const StageKind& s : registry_.stages()) known.push_back(s.name);
        auto near = registry_.closest(*name, false);
        error_at(file, uses->value,
                 fmt::format("unknown stage kind '{}'{}", *name,
                             !near.empty() ? fmt::format("; did you mean {}?", alternatives(near))
                             : known.empty()
                                 ? std::string("; no stage kinds are registered (are the plugins "
                                               "on KFORGE_PLUGIN_PATH?)")
                                 : fmt::format(" (known: {})", comma_list(known))));
      }
    }
  } else {
    error_at(file, node,
             fmt::format("{} has no uses: name its stage kind, e.g. uses: llm.generate", label));
  }

  if (draft.kind != nullptr) {
    draft.spec.config =
        configure(draft.kind->abi->params, draft.kind->abi->param_count, draft.spec.id, label,
                  draft.kind->name, file, node, keys.find("with"));
  } else {
    draft.spec.config.base_dir = file.dir;
    // Parameters of an unknown kind cannot be checked; its overrides are not "unknown stage".
    for (ParamOverride& o : param_overrides_) o.used = o.used || o.owner == draft.spec.id;
  }

  if (const Entry* concurrency = keys.find("concurrency")) {
    if (auto value = int_field(file, *concurrency, "concurrency of " + label, 1)) {
      draft.spec.concurrency = *value;
    }
  }
  if (const Entry* timeout = keys.find("timeout")) {
    if (auto text = string_field(file, *timeout, "timeout of " + label)) {
      auto seconds = parse_duration(*text);
      if (!seconds || *seconds <= 0) {
        error_at(file, timeout->value,
                 fmt::format("invalid duration '{}' for timeout of {}: write a positive number "
                             "of seconds (90, 1.5) or a number with a unit: 500ms, 90s, 5m, 1h",
                             *text, label));
      } else {
        draft.spec.timeout_seconds = *seconds;
      }
    }
  }
  if (const Entry* on = keys.find("on")) {
    if (on->value.IsMap()) {
      std::vector<std::string> allowed;  // empty (anything) when the kind is unknown
      if (draft.kind != nullptr) {
        allowed = kStatusRoutes;
        for (uint32_t i = 0; i < draft.kind->abi->route_count; ++i) {
          allowed.emplace_back(draft.kind->abi->routes[i]);
        }
      }
      draft.on = mapping(file, on->value, "route",
                         fmt::format("in {} (kind {})", label, draft.spec.uses), allowed, true);
    } else if (!on->value.IsNull()) {
      error_at(file, on->value,
               fmt::format("on must be a mapping of routes (pass: ..., fail: ...), got {}",
                           shape_of(on->value)));
    }
  }
  stages_.push_back(std::move(draft));
}

std::optional<std::string> Loader::route_target(const StageDraft& draft, const Entry& entry,
                                                const std::string& subject) {
  FileValues values(*this, *draft.file, entry.key);
  auto target = convert(KF_PARAM_STRING, entry.value, subject, values);
  if (!target) {
    graph_checkable_ = false;
    return std::nullopt;
  }
  const std::string& id = target->text;
  if (id == kEndTarget) return id;
  std::vector<std::string> ids;
  for (const StageDraft& d : stages_) {
    if (!d.spec.id.empty()) ids.push_back(d.spec.id);
  }
  if (contains(ids, id)) return id;
  auto guess = closest(id, ids);
  error_at(*draft.file, entry.value,
           fmt::format("{} goes to unknown stage '{}'{}", subject, id,
                       guess ? fmt::format("; did you mean '{}'?", *guess)
                             : fmt::format(" (stages: {}, or end)", comma_list(ids))));
  graph_checkable_ = false;
  return std::nullopt;
}

void Loader::read_routes(StageDraft& draft, size_t index) {
  const SourceFile& file = *draft.file;
  const std::string label =
      draft.spec.id.empty() ? fmt::format("stage #{}", index + 1) : "stage '" + draft.spec.id + "'";
  std::vector<std::string> names = kStatusRoutes;
  if (draft.kind != nullptr) {
    for (uint32_t i = 0; i < draft.kind->abi->route_count; ++i) {
      names.emplace_back(draft.kind->abi->routes[i]);
    }
  }
  if (draft.on) {  // a kind we do not know may have routes we do not know: keep them
    for (const Entry& e : draft.on->entries) {
      if (!contains(names, e.name)) names.push_back(e.name);
    }
  }
  const SourceLocation& stage_where = draft.id_where;

  for (const std::string& name : names) {
    RouteSpec route;
    route.on = name;
    route.where = stage_where;
    SourceLocation target_where = stage_where;
    SourceLocation then_where = stage_where;
    const Entry* entry = draft.on ? draft.on->find(name) : nullptr;
    const std::string subject = fmt::format("route '{}' of {}", name, label);
    if (entry != nullptr) {
      route.where = locate(file, entry->key);
      if (entry->value.IsMap()) {
        Mapping bounded = mapping(file, entry->value, "key", "in " + subject, kBoundedRouteKeys);
        const Entry* to = bounded.find("to");
        const Entry* rounds = bounded.find("max_rounds");
        if (to == nullptr || rounds == nullptr) {
          error_at(file, entry->value,
                   fmt::format("{}: the long form is a bounded edge and needs to: and "
                               "max_rounds:, e.g. {{to: fix, max_rounds: 2, then: end}}; "
                               "for a plain route write {}: <stage>",
                               subject, name));
          graph_checkable_ = false;
        }
        if (to != nullptr) {
          target_where = locate(file, to->value);
          if (auto t = route_target(draft, *to, subject)) route.target = *t;
        }
        if (rounds != nullptr) {
          auto value = int_field(file, *rounds, "max_rounds of " + subject, 1);
          if (value) {
            route.max_rounds = *value;
          } else {
            graph_checkable_ = false;
          }
        }
        if (const Entry* then = bounded.find("then")) {
          then_where = locate(file, then->value);
          if (auto t = route_target(draft, *then, subject + " (then)")) {
            route.exhausted_target = *t;
          }
        }
      } else if (entry->value.IsScalar()) {
        target_where = locate(file, entry->value);
        if (auto t = route_target(draft, *entry, subject)) route.target = *t;
      } else {
        error_at(file, entry->value.IsNull() ? entry->key : entry->value,
                 fmt::format("{} must name a stage id or end, or be a bounded edge "
                             "{{to: ..., max_rounds: ..., then: ...}}, got {}",
                             subject, shape_of(entry->value)));
        graph_checkable_ = false;
      }
    } else if (name == "pass") {
      route.target = index + 1 < stages_.size() ? stages_[index + 1].spec.id : kEndTarget;
    } else if (name == "error") {
      // Unrouted errors follow the fail route, bound included.
      const RouteSpec& fail = draft.spec.routes[1];
      route = fail;
      route.on = name;
      target_where = draft.target_where[1];
      then_where = draft.then_where[1];
    } else {
      route.target = kEndTarget;
    }
    draft.spec.routes.push_back(std::move(route));
    draft.target_where.push_back(target_where);
    draft.then_where.push_back(then_where);
    draft.written.push_back(entry != nullptr);
  }
}

void Loader::check_graph() {
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < stages_.size(); ++i) index_of[stages_[i].spec.id] = i;

  struct Edge {
    size_t to;
    bool bounded;
    const RouteSpec* route;  // the route the edge belongs to
    SourceLocation where;
    bool written;
  };
  std::vector<std::vector<Edge>> edges(stages_.size());
  for (size_t i = 0; i < stages_.size(); ++i) {
    const StageDraft& d = stages_[i];
    for (size_t r = 0; r < d.spec.routes.size(); ++r) {
      const RouteSpec& route = d.spec.routes[r];
      const bool written = d.written[r];
      if (route.target != kEndTarget) {
        edges[i].push_back(
            {index_of.at(route.target), route.max_rounds > 0, &route, d.target_where[r], written});
      }
      // After its last round a bounded edge hands the job on unconditionally.
      if (route.max_rounds > 0 && route.exhausted_target != kEndTarget) {
        edges[i].push_back(
            {index_of.at(route.exhausted_target), false, &route, d.then_where[r], written});
      }
    }
  }

  // Reachability from the entry, over every edge.
  std::vector<bool> reached(stages_.size(), false);
  std::vector<size_t> todo = {0};
  reached[0] = true;
  while (!todo.empty()) {
    const size_t at = todo.back();
    todo.pop_back();
    for (const Edge& e : edges[at]) {
      if (!reached[e.to]) {
        reached[e.to] = true;
        todo.push_back(e.to);
      }
    }
  }
  for (size_t i = 0; i < stages_.size(); ++i) {
    if (reached[i]) continue;
    error(stages_[i].id_where,
          fmt::format("stage '{}' is unreachable: no route leads to it from the entry stage "
                      "'{}'; route a verdict to it or remove it",
                      stages_[i].spec.id, stages_[0].spec.id));
  }

  // Cycles made only of unbounded edges would run a job forever. A depth-first search
  // finds each through the edge that closes it.
  enum class Mark { New, Open, Done };
  std::vector<Mark> mark(stages_.size(), Mark::New);
  std::vector<std::pair<size_t, const Edge*>> path;  // stage, edge taken to get there
  std::set<std::string> reported;
  auto visit = [&](auto&& self, size_t at) -> void {
    mark[at] = Mark::Open;
    for (const Edge& e : edges[at]) {
      if (e.bounded) continue;
      if (mark[e.to] == Mark::Open) {
        // The cycle: from e.to along the path to `at`, then e back to e.to.
        auto start =
            std::find_if(path.begin(), path.end(), [&](const auto& p) { return p.first == e.to; });
        std::vector<std::pair<size_t, const Edge*>> cycle(start, path.end());
        cycle.emplace_back(e.to, &e);
        std::string names;
        for (const auto& [stage, edge] : cycle)
          names += (names.empty() ? "" : " -> ") + stages_[stage].spec.id;
        if (!reported.insert(names).second) continue;
        // Report at a route the user wrote, where there is one, rather than at a default.
        const Edge* where = &e;
        for (size_t c = 1; c < cycle.size(); ++c) {
          if (!where->written && cycle[c].second->written) where = cycle[c].second;
        }
        error(where->where,
              fmt::format("unbounded cycle {}: a job could go round it forever; make one of its "
                          "routes a bounded edge, e.g. {}: {{to: {}, max_rounds: 3, then: end}}",
                          names, where->route->on, stages_[where->to].spec.id));
      } else if (mark[e.to] == Mark::New) {
        path.emplace_back(e.to, &e);
        self(self, e.to);
        path.pop_back();
      }
    }
    mark[at] = Mark::Done;
  };
  for (size_t i = 0; i < stages_.size(); ++i) {
    if (mark[i] != Mark::New) continue;
    path.assign(1, {i, nullptr});
    visit(visit, i);
  }
}

PipelineSpec Loader::load(const std::string& path) {
  PipelineSpec spec;
  const fs::path absolute = fs::absolute(path).lexically_normal();
  spec.file = absolute.string();
  const SourceFile* top = read(absolute, path, std::nullopt);
  if (top == nullptr) throw ConfigError(std::move(diagnostics_));

  std::vector<const SourceFile*> chain = {top};
  collect(*top, true, chain);
  split_overrides();
  for (auto& [name, var] : vars_) {
    if (resolve(name, var)) spec.vars[name] = var.resolved;
  }

  const bool top_is_map = top->root.IsMap();
  if (const Entry* name = top_.find("pipeline")) {
    if (auto text = string_field(*top, *name, "pipeline (the pipeline's name)")) {
      if (text->empty()) {
        error_at(*top, name->value, "pipeline needs a non-empty name");
      } else {
        spec.name = *text;
      }
    }
  } else if (top_is_map) {
    error_at(*top, top->root,
             "missing required key 'pipeline': the pipeline's name, e.g. pipeline: demo");
  }
  if (const Entry* tasks = top_.find("tasks")) {
    read_tasks(*top, *tasks, spec);
  } else if (top_is_map) {
    error_at(*top, top->root,
             "missing required key 'tasks': the task source, e.g. tasks: {uses: tasks.list, "
             "with: {path: tasks/}}");
  }
  if (const Entry* limit = top_.find("max_in_flight")) {
    if (auto value = int_field(*top, *limit, "max_in_flight", 1)) spec.max_in_flight = *value;
  }

  for (size_t i = 0; i < stage_nodes_.size(); ++i) {
    read_stage(*stage_nodes_[i].first, stage_nodes_[i].second, i);
  }
  if (stages_.empty() && top_is_map) {
    const Entry* stages = top_.find("stages");
    error_at(*top, stages ? stages->key : top->root,
             stages ? "stages is empty: a pipeline needs at least one stage"
                    : "missing required key 'stages': the list of stages, e.g. stages: [{id: "
                      "generate, uses: llm.generate}]");
  }
  for (size_t i = 0; i < stages_.size(); ++i) read_routes(stages_[i], i);
  for (const ParamOverride& o : param_overrides_) {
    if (o.used) continue;
    std::vector<std::string> ids;
    for (const StageDraft& d : stages_) ids.push_back(d.spec.id);
    auto guess = closest(o.owner, ids);
    error(o.where, fmt::format("there is no stage '{}' to set '{}' on{}", o.owner, o.param,
                               guess ? fmt::format("; did you mean '{}'?", *guess)
                                     : fmt::format(" (stages: {}; tasks for the task source)",
                                                   comma_list(ids))));
  }
  if (graph_checkable_ && !stages_.empty()) check_graph();

  if (!diagnostics_.empty()) throw ConfigError(std::move(diagnostics_));
  for (StageDraft& d : stages_) spec.stages.push_back(std::move(d.spec));
  return spec;
}

}  // namespace

PipelineSpec load_pipeline(const std::string& path, const Registry& registry,
                           const Overrides& overrides) {
  return Loader(registry, overrides).load(path);
}

namespace detail {

std::optional<std::string> default_json(const kf_param_spec& spec) {
  if (spec.default_value == nullptr || spec.required) return std::nullopt;
  // A throwaway sink: a default that does not convert is simply left out of the schema;
  // loading a pipeline that uses the kind reports it.
  class Quiet : public ValueSource {
   public:
    std::optional<std::string> text(const YAML::Node& scalar) override { return scalar.Scalar(); }
    void error(const YAML::Node&, const std::string&) override {}
  } quiet;
  std::string problem;
  auto node = parse_default(spec, problem);
  if (!node) return std::nullopt;
  auto value = convert(spec.type, *node, spec.name, quiet);
  if (!value) return std::nullopt;
  return value->json;
}

}  // namespace detail

}  // namespace kforge
