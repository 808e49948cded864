// Variables: vars:, the environment, --set NAME=value, ${NAME:-default}; and the split of
// --set overrides into variables and stage parameters.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include <kforge/bounded_file.hpp>

#include "engine/pipeline/loader.hpp"
#include "engine/pipeline/scalars.hpp"

namespace kforge::loader {

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
        substituted_bytes_ += value.size();
        if (out.size() + value.size() > kMaxScalarBytes || substituted_bytes_ > kMaxSubstitutedBytes) {
          // Each variable may repeat the one before ten times: nine such lines name 10 GB.
          error_at(file, scalar,
                   out.size() + value.size() > kMaxScalarBytes
                       ? fmt::format("this value expands to more than {} of text (through ${{{}}}); a value may "
                                     "hold at most that much",
                                     byte_size_text(kMaxScalarBytes), name)
                       : fmt::format("the pipeline's ${{...}} substitutions expand to more than {} of text in all "
                                     "(here through ${{{}}})",
                                     byte_size_text(kMaxSubstitutedBytes), name));
          return std::nullopt;
        }
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
  if (resolving_.size() >= kMaxVariableDepth) {
    // Reported once: every variable above this one in the chain fails with it.
    if (!chain_too_deep_) {
      chain_too_deep_ = true;
      error_at(*var.file, var.value,
               fmt::format("variable '{}' is reached through more than {} variables, each defined by the next "
                           "({} -> ... -> {}); a pipeline needs a few levels: define it more directly",
                           name, kMaxVariableDepth, resolving_.front(), name));
    }
    var.state = VarDef::State::Failed;
    return false;
  }
  var.state = VarDef::State::Resolving;
  resolving_.push_back(name);
  auto value = expand(*var.file, var.value);
  resolving_.pop_back();
  var.state = value ? VarDef::State::Done : VarDef::State::Failed;
  if (value) var.resolved = std::move(*value);
  return value.has_value();
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


}  // namespace kforge::loader
