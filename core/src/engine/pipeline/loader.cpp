// Reads a pipeline: files and includes (files.cpp), variables (variables.cpp), stages and
// their typed parameters (stages.cpp), routes and the checks on the route graph
// (routes.cpp). docs/pipelines.md describes the format for users.
//
// Every problem is collected, not thrown at once: a user who runs `kforge validate` should
// see all of them in one go. A check that cannot run because an earlier one failed (the
// graph checks when a route points nowhere) is skipped rather than adding noise.
#include "engine/pipeline/loader.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "engine/pipeline/load.hpp"
#include "engine/registry.hpp"

namespace kforge {
namespace loader {

namespace fs = std::filesystem;

void Loader::warning(const SourceLocation& where, std::string message) {
  error(where, std::move(message));
  Diagnostic d = std::move(diagnostics_.back());
  diagnostics_.pop_back();
  d.warning = true;
  warnings_.push_back(std::move(d));
}

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

SourceLocation Loader::locate_item(const SourceFile& file, const YAML::Node& item) const {
  SourceLocation where = locate(file, item);
  if (!item.IsNull() || where.line <= 0) return where;
  // An empty item (a lone `-`) has no token of its own: yaml-cpp marks the next one, often
  // on a later line. The item is where its `-` is: the last one before that mark, past
  // blanks and comments.
  for (int line = where.line; line >= 1 && static_cast<size_t>(line) <= file.lines.size(); --line) {
    std::string_view text = file.lines[static_cast<size_t>(line) - 1];
    if (line == where.line) text = text.substr(0, std::min(text.size(), static_cast<size_t>(where.column - 1)));
    if (const size_t comment = text.find(" #"); comment != std::string_view::npos) text = text.substr(0, comment);
    if (!text.empty() && text.front() == '#') text = {};
    const size_t last = text.find_last_not_of(" \t");
    if (last == std::string_view::npos) continue;
    if (text[last] == '-') return {file.shown, line, static_cast<int>(last) + 1};
    return where;
  }
  return where;
}

Plan Loader::load(const std::string& path) {
  Plan spec;
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
  spec.label = spec.name;
  if (const Entry* label = top_.find("label")) {
    if (auto text = string_field(*top, *label, "label (the run's name in reports)")) {
      if (!text->empty()) spec.label = *text;
    }
  }
  if (const Entry* tasks = top_.find("tasks")) {
    read_tasks(*top, *tasks, spec);
  } else if (top_is_map) {
    error_at(*top, top->root,
             "missing required key 'tasks': the task source, e.g. tasks: {uses: KIND, with: {...}}");
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
                      "generate, uses: KIND}]");
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
  spec.stages = compile_stages();
  spec.warnings = std::move(warnings_);
  return spec;
}

}  // namespace loader

Plan load_pipeline(const std::string& path, const Registry& registry,
                           const Overrides& overrides) {
  Plan plan = loader::Loader(registry, overrides).load(path);
  for (const Diagnostic& w : plan.warnings) spdlog::warn("{}", w.format());
  return plan;
}

StageConfig load_params(const StageKind& kind, const std::string& text, const std::string& base_dir) {
  const Registry none;
  const Overrides no_overrides;
  return loader::Loader(none, no_overrides).load_params(kind.params, "stage '" + kind.name + "'", kind.name, text, base_dir);
}

StageConfig load_params(const SourceKind& kind, const std::string& text, const std::string& base_dir) {
  const Registry none;
  const Overrides no_overrides;
  return loader::Loader(none, no_overrides).load_params(kind.params, "tasks", kind.name, text, base_dir);
}


}  // namespace kforge
