// The task source and the stages: their keys, kinds and typed parameters.
#include <fmt/format.h>

#include <algorithm>
#include <type_traits>

#include "engine/pipeline/loader.hpp"
#include "engine/pipeline/scalars.hpp"
#include "engine/pipeline/values.hpp"
#include "engine/registry.hpp"

namespace kforge::loader {

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
  const int64_t number = value->integer;
  if (number < min || number > kMaxInt) {
    error_at(file, entry.value,
             number < min ? fmt::format("{} must be at least {}, got {}", subject, min, number)
                          : fmt::format("{} must be at most {}, got {}", subject, kMaxInt, number));
    return std::nullopt;
  }
  return static_cast<int>(number);
}

StageConfig Loader::configure(const std::vector<ParamSpec>& params, const std::string& owner_id,
                              const std::string& owner, const std::string& kind, const SourceFile& file,
                              const YAML::Node& owner_node, const Entry* with) {
  StageConfig config;
  config.base_dir = file.dir;
  std::vector<std::string> names;  // every name a parameter may be given by, former ones too
  for (const ParamSpec& p : params) {
    names.push_back(p.name);
    names.insert(names.end(), p.former_names.begin(), p.former_names.end());
  }

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
  for (const ParamSpec& spec : params) {
    const std::string subject = fmt::format("parameter '{}' of {}", spec.name, owner);
    std::optional<ParamValue> value;
    // Where a value that breaks the parameter's choices or range is reported.
    SourceLocation value_where = owner_where;
    std::string value_subject = subject;
    auto override_it = std::find_if(param_overrides_.begin(), param_overrides_.end(), [&](const ParamOverride& o) {
      return o.owner == owner_id && (o.param == spec.name || contains(spec.former_names, o.param));
    });
    if (override_it != param_overrides_.end() && override_it->param != spec.name) {
      warn_former_param(override_it->where, override_it->param, spec, owner, kind);
    }
    const Entry* entry = given_param(file, given, spec, owner, kind);
    if (override_it != param_overrides_.end()) {
      // Written as on the command line: YAML flow text (`[a, b]`, `{x: 1}`), strings as is.
      FixedValues values(*this, override_it->where);
      value_where = override_it->where;
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
    } else if (entry != nullptr) {
      FileValues values(*this, file, entry->key);
      value_where = locate(file, entry->value.IsNull() ? entry->key : entry->value);
      value = convert(spec.type, entry->value, subject, values);
    } else if (spec.required) {
      error(owner_where, fmt::format("missing required parameter '{}' of {} ({}): {}", spec.name,
                                     owner, kind, spec.doc));
    } else if (spec.default_value) {
      const std::string default_subject =
          fmt::format("the default of parameter '{}' of kind '{}' (a plugin bug)", spec.name, kind);
      value_subject = default_subject;
      FixedValues values(*this, owner_where);
      std::string problem;
      auto node = parse_default(spec, problem);
      if (node) {
        value = convert(spec.type, *node, default_subject, values);
      } else {
        error(owner_where, fmt::format("{} is not valid YAML: {}", default_subject, problem));
      }
    }
    if (!value) continue;
    if (auto problem = violated_constraint(spec, *value, value_subject)) {
      error(value_where, *problem);
      continue;
    }
    config.values.emplace(spec.name, std::move(*value));
  }
  return config;
}

// The entry that gives `spec`: by its name, else by a former name (warned about at its place).
// Both at once is an error: the value would depend on which one wins.
const Entry* Loader::given_param(const SourceFile& file, const Mapping& given, const ParamSpec& spec,
                                 const std::string& owner, const std::string& kind) {
  const Entry* current = given.find(spec.name);
  for (const std::string& former : spec.former_names) {
    const Entry* old = given.find(former);
    if (old == nullptr) continue;
    if (current != nullptr) {
      error_at(file, old->key,
               fmt::format("parameter '{}' of {} is given twice: '{}' is its former name; keep {} only", spec.name,
                           owner, former, spec.name));
      continue;
    }
    warn_former_param(locate(file, old->key), former, spec, owner, kind);
    current = old;
  }
  return current;
}

void Loader::warn_former_param(const SourceLocation& where, const std::string& former, const ParamSpec& spec,
                               const std::string& owner, const std::string& kind) {
  warning(where, fmt::format("'{}' is the former name of parameter '{}' of {} ({}), accepted for this release only: "
                             "write {}{}",
                             former, spec.name, owner, kind, spec.name,
                             spec.type == KF_PARAM_DURATION
                                 ? " (a duration: a bare number is seconds, as before, or give a unit: 30s, 5m)"
                                 : ""));
}

StageConfig Loader::load_params(const std::vector<ParamSpec>& params, const std::string& owner, const std::string& kind,
                                const std::string& text, const std::string& base_dir) {
  const bool blank = text.find_first_not_of(" \t\r\n") == std::string::npos;
  const SourceFile* file = parse(blank ? "{}" : text, "parameters of " + kind, "", base_dir);
  StageConfig config;
  if (file != nullptr && !file->root.IsMap()) {
    error_at(*file, file->root, fmt::format("parameters must be a mapping (name: value, ...), got {}", shape_of(file->root)));
  } else if (file != nullptr) {
    const Entry with{"with", file->root, file->root};
    config = configure(params, owner, owner, kind, *file, file->root, &with);
  }
  if (!diagnostics_.empty()) throw ConfigError(std::move(diagnostics_));
  return config;
}

// ---- the pipeline -------------------------------------------------------------------------

void Loader::read_tasks(const SourceFile& file, const Entry& entry, Plan& plan) {
  plan.source.where = locate(file, entry.key);
  if (!entry.value.IsMap()) {
    error_at(file, entry.value.IsNull() ? entry.key : entry.value,
             fmt::format("tasks must be a mapping with uses: (a source kind) and with: "
                         "(its parameters), got {}",
                         shape_of(entry.value)));
    return;
  }
  Mapping keys = mapping(file, entry.value, "key", "in tasks", kTasksKeys);
  if (const Entry* k = keys.find("k")) {
    if (auto value = int_field(file, *k, "k (candidates per task)", 1)) plan.k = *value;
  }
  const Entry* uses = keys.find("uses");
  if (uses == nullptr) {
    error_at(file, entry.key,
             "tasks has no uses: name the task source kind (`kforge plugins list` shows them)");
    return;
  }
  auto name = string_field(file, *uses, "uses of tasks");
  if (!name) return;
  const SourceKind* kind = renamed(registry_.source(*name), *name, file, uses->value);
  if (kind == nullptr) {
    std::vector<std::string> known;
    for (const SourceKind& s : registry_.sources()) known.push_back(s.name);
    auto near = registry_.closest(*name, true);
    error_at(file, uses->value, unknown_kind("task source kind", *name, near, known));
    for (ParamOverride& o : param_overrides_) o.used = o.used || o.owner == "tasks";
    return;
  }
  plan.source.kind = kind;
  plan.source.config = configure(kind->params, "tasks", "tasks", kind->name, file, entry.key, keys.find("with"));
}

template <typename Kind>
const Kind* Loader::renamed(const Kind* kind, const std::string& name, const SourceFile& file, const YAML::Node& where) {
  if (kind != nullptr) return kind;
  if constexpr (std::is_same_v<Kind, StageKind>) {
    kind = registry_.renamed_stage(name);
  } else {
    kind = registry_.renamed_source(name);
  }
  if (kind != nullptr && renamed_warned_.insert(name).second) {
    warning(locate(file, where), fmt::format("'{}' is the former name of '{}' (plugin {}), accepted for this release "
                                             "only: write uses: {}",
                                             name, kind->name, kind->plugin, kind->name));
  }
  return kind;
}

void Loader::read_stage(const SourceFile& file, const YAML::Node& node, size_t index) {
  StageDraft draft;
  draft.file = &file;
  draft.spec.where = locate_item(file, node);
  draft.id_where = draft.spec.where;
  if (!node.IsMap()) {
    error(
        draft.spec.where,
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
      draft.kind = renamed(registry_.stage(*name), *name, file, uses->value);
      if (draft.kind == nullptr) {
        std::vector<std::string> known;
        for (const StageKind& s : registry_.stages()) known.push_back(s.name);
        auto near = registry_.closest(*name, false);
        error_at(file, uses->value, unknown_kind("stage kind", *name, near, known));
      }
    }
  } else {
    error_at(file, node,
             fmt::format("{} has no uses: name its stage kind (`kforge plugins list` shows them)", label));
  }

  if (draft.kind != nullptr) {
    draft.spec.config =
        configure(draft.kind->params, draft.spec.id, label, draft.kind->name, file, node, keys.find("with"));
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
                             "of seconds (90, 1.5) or a number with a unit: 500ms, 90s, 5m, 1h; at most 1e9 s "
                             "(leave timeout out for none)",
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
        allowed.insert(allowed.end(), draft.kind->routes.begin(), draft.kind->routes.end());
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


}  // namespace kforge::loader
