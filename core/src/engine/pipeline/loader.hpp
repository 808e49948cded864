// The pipeline loader's internals, shared by the files that implement it by concern:
// loader.cpp (the whole), files.cpp (files and includes), variables.cpp, stages.cpp (the
// task source, stages and parameters) and routes.cpp (routes and the route graph).
#pragma once

#include <kforge/abi.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/pipeline/load.hpp"
#include "engine/pipeline/values.hpp"
#include "engine/plan.hpp"

namespace kforge {
struct ParamSpec;
struct StageKind;
}

namespace kforge::loader {

inline constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
// Input bounds (docs/pipelines.md#limits). A pipeline is a small hand-written file: these
// refuse a device, a runaway include list or an alias bomb at once instead of filling
// memory. Each pipeline file holds at most kMaxPipelineFileBytes; at most kMaxPipelineFiles
// are read (an include counts each time it is included); a mapping parameter (YAML aliases
// expanded) holds at most kMaxExpandedValues values and kMaxExpandedBytes of text; a
// pipeline has at most kMaxStages stages. A mapping parameter nests at most
// kMaxValueNesting levels; a variable refers through at most kMaxVariableDepth variables
// (v1: ${v0}, v2: ${v1}, ...), one value expands to at most kMaxScalarBytes and all
// ${...} substitutions of a pipeline together to at most kMaxSubstitutedBytes, so no
// recursion can overflow the stack and no expansion can fill memory.
inline constexpr uintmax_t kMaxPipelineFileBytes = 1u << 20;
inline constexpr size_t kMaxValueNesting = 64;
inline constexpr size_t kMaxVariableDepth = 64;
inline constexpr size_t kMaxScalarBytes = 1u << 20;
inline constexpr size_t kMaxSubstitutedBytes = 16u << 20;
inline constexpr size_t kMaxPipelineFiles = 256;
inline constexpr size_t kMaxExpandedValues = 100000;
inline constexpr size_t kMaxExpandedBytes = 16u << 20;
inline constexpr size_t kMaxStages = 1000;
inline const std::vector<std::string> kTopKeys = {"pipeline", "label", "include", "vars",
                                                  "tasks",    "max_in_flight", "stages"};
inline const std::vector<std::string> kTopOnlyKeys = {"pipeline", "label", "tasks", "max_in_flight"};
inline const std::vector<std::string> kTasksKeys = {"uses", "with", "k"};
inline const std::vector<std::string> kStageKeys = {"id", "uses", "with", "concurrency", "timeout", "on"};
inline const std::vector<std::string> kBoundedRouteKeys = {"to", "max_rounds", "then"};
inline const std::vector<std::string> kStatusRoutes = {"pass", "fail", "error"};
inline constexpr const char* kEndTarget = "end";
// `tasks` is reserved because `--set tasks.PARAM` addresses the task source.
inline const std::vector<std::string> kReservedIds = {kEndTarget, "tasks"};

// ---- small text helpers (names.cpp) ------------------------------------------------------

// The candidate that `name` is most likely a typo of, if any is close enough.
std::optional<std::string> closest(const std::string& name, const std::vector<std::string>& candidates);
// "a, b, c"
std::string comma_list(const std::vector<std::string>& names);
// "'a'", "'a' or 'b'", "'a', 'b' or 'c'"
std::string alternatives(const std::vector<std::string>& names);
bool contains(const std::vector<std::string>& names, std::string_view name);
// "unknown stage kind 'x'; did you mean 'y'? ...": a typo, or a kind whose plugin is not
// loaded; `what` is "stage kind" or "task source kind", `near` the close names, `known` all.
std::string unknown_kind(const std::string& what, const std::string& name, const std::vector<std::string>& near,
                         const std::vector<std::string>& known);
bool is_variable_name(std::string_view s);
bool is_stage_id(std::string_view s);

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

// A route as written, its targets still stage ids (or "end").
struct RouteSpec {
  std::string on;
  std::string target;
  int max_rounds = 0;
  std::string exhausted_target = kEndTarget;
  SourceLocation where;
};

// A stage as written: the plan's stage with its routes still named by id.
struct StageSpec {
  std::string id;
  std::string uses;  // stage kind name
  StageConfig config;
  int concurrency = 0;
  double timeout_seconds = 0;
  std::vector<RouteSpec> routes;  // pass, fail, error, then named routes
  SourceLocation where;
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

  Plan load(const std::string& path);
  // One kind's parameters from YAML text, checked as a pipeline's `with:` is.
  StageConfig load_params(const std::vector<ParamSpec>& params, const std::string& owner, const std::string& kind,
                          const std::string& text, const std::string& base_dir);

  // For ValueSource implementations.
  void error(const SourceLocation& where, std::string message);
  void warning(const SourceLocation& where, std::string message);
  void error_at(const SourceFile& file, const YAML::Node& node, std::string message) {
    error(locate(file, node), std::move(message));
  }
  std::optional<std::string> expand(const SourceFile& file, const YAML::Node& scalar);

 private:
  enum class Lookup { Found, Missing, Failed };

  SourceLocation locate(const SourceFile& file, const YAML::Node& node) const;
  // A sequence item's place; an empty item's is its `-`, not the token after it.
  SourceLocation locate_item(const SourceFile& file, const YAML::Node& item) const;
  const SourceFile* read(const std::filesystem::path& absolute, const std::string& shown,
                         const std::optional<SourceLocation>& included_from);
  // Keeps the text's lines for diagnostics; nullptr (reported) when it is not one YAML document.
  const SourceFile* parse(const std::string& text, const std::string& shown, const std::string& absolute,
                          const std::string& dir);
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
  StageConfig configure(const std::vector<ParamSpec>& params, const std::string& owner_id, const std::string& owner,
                        const std::string& kind, const SourceFile& file, const YAML::Node& owner_node,
                        const Entry* with);
  // A parameter may be given by a former name (ParamSpec::former_names), with a warning.
  const Entry* given_param(const SourceFile& file, const Mapping& given, const ParamSpec& spec,
                           const std::string& owner, const std::string& kind);
  void warn_former_param(const SourceLocation& where, const std::string& former, const ParamSpec& spec,
                         const std::string& owner, const std::string& kind);
  void read_tasks(const SourceFile& file, const Entry& entry, Plan& plan);
  void read_stage(const SourceFile& file, const YAML::Node& node, size_t index);
  void read_routes(StageDraft& draft, size_t index);
  std::optional<std::string> route_target(const StageDraft& draft, const Entry& entry,
                                          const std::string& subject);
  void check_graph();
  // The stages with their routes resolved to indices, once everything checked out.
  std::vector<StagePlan> compile_stages();

  const Registry& registry_;
  const Overrides& overrides_;
  std::vector<std::unique_ptr<SourceFile>> files_;
  std::vector<Diagnostic> diagnostics_;
  std::vector<Diagnostic> warnings_;
  // `uses:` by a kind's former name: the kind, warned about once per name.
  template <typename Kind>
  const Kind* renamed(const Kind* kind, const std::string& name, const SourceFile& file, const YAML::Node& where);
  std::set<std::string> renamed_warned_;
  Mapping top_;
  std::map<std::string, VarDef> vars_;
  std::vector<std::string> resolving_;  // variables being resolved, innermost last
  size_t substituted_bytes_ = 0;        // text all ${...} substitutions produced so far
  bool chain_too_deep_ = false;         // a variable chain over kMaxVariableDepth was reported
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

}  // namespace kforge::loader
