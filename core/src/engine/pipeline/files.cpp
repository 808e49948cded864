// Pipeline files and includes: reading YAML documents, checking mapping keys, and
// collecting the stages and variables of every included file.
#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include <kforge/bounded_file.hpp>

#include "engine/pipeline/loader.hpp"
#include "engine/pipeline/scalars.hpp"

namespace kforge::loader {

namespace fs = std::filesystem;

namespace {

// Flow nesting refused before parsing: yaml-cpp's depth guard counts its own recursion,
// which reaches its limit a few hundred levels of [ or { deep, after seconds.
constexpr int kDeepFlowNesting = 256;

// Where flow collections ([ ], { }) first nest kDeepFlowNesting levels deep, skipping
// quoted text and comments; line 0 when they never do (deep block nesting is left to
// yaml-cpp's guard).
SourceLocation deep_nesting_place(const std::string& text, const std::string& shown) {
  int line = 1, column = 0, depth = 0;
  char quote = 0;
  bool comment = false;
  char previous = '\n';
  for (size_t i = 0; i < text.size(); previous = text[i], ++i) {
    const char c = text[i];
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
      comment = false;
      continue;
    }
    if (comment) continue;
    if (quote != 0) {
      if (quote == '"' && c == '\\') {
        ++i, ++column;  // the escaped character
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '#' && (previous == ' ' || previous == '\t' || previous == '\n')) {
      comment = true;
    } else if ((c == '"' || c == '\'') && std::strchr(" \t\n[{,:", previous) != nullptr) {
      quote = c;
    } else if (c == '[' || c == '{') {
      if (++depth >= kDeepFlowNesting) return {shown, line, column};
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return {shown, 0, 0};
}

}  // namespace

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
  if (files_.size() >= kMaxPipelineFiles) {
    return fail(fmt::format("the pipeline already reads {} files (includes counted each time they are included); "
                            "include fewer files",
                            kMaxPipelineFiles));
  }
  std::string why;
  std::optional<std::string> text = read_bounded_file(absolute.string(), kMaxPipelineFileBytes, why);
  if (!text) return fail(why);
  return parse(*text, shown, absolute.string(), absolute.parent_path().string());
}

const SourceFile* Loader::parse(const std::string& text, const std::string& shown, const std::string& absolute,
                                const std::string& dir) {
  auto file = std::make_unique<SourceFile>();
  file->shown = shown;
  file->absolute = absolute;
  file->dir = dir;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    file->lines.push_back(std::move(line));
  }
  const SourceFile& ref = *file;
  files_.push_back(std::move(file));

  // yaml-cpp takes bytes that are not UTF-8 as they are: in a value they would reach the
  // stages, the store and the reports as mojibake, so they are refused where they are.
  if (const std::optional<size_t> bad = invalid_utf8_at(text)) {
    const size_t newline = text.rfind('\n', *bad);  // the byte itself is no newline
    const size_t line_begin = newline == std::string::npos ? 0 : newline + 1;
    const auto line = std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(line_begin), '\n') + 1;
    error({shown, static_cast<int>(line), static_cast<int>(*bad - line_begin) + 1},
          fmt::format("invalid UTF-8 (byte 0x{:02X}): a pipeline file must be UTF-8 text, comments included; save it "
                      "as UTF-8",
                      static_cast<unsigned char>(text[*bad])));
    return nullptr;
  }

  const std::string too_deep =
      fmt::format("invalid YAML: the value nests too deeply here (more than {} levels of [ ] or {{ }}); a pipeline "
                  "needs a few levels: flatten it",
                  kDeepFlowNesting);
  // Found before parsing: the place where it gets too deep (yaml-cpp's own guard marks
  // where its scanner stopped, often the end of the line), and at once (the parser's
  // recursion over 10^5 brackets takes seconds).
  if (const SourceLocation deep = deep_nesting_place(text, shown); deep.line > 0) {
    error(deep, too_deep);
    return nullptr;
  }
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text);
  } catch (const YAML::DeepRecursion& e) {
    // Deep block nesting, which the bracket count does not see.
    error({shown, e.mark.line + 1, e.mark.column + 1}, too_deep);
    return nullptr;
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
      for (const YAML::Node& stage : stages->value) {
        if (stage_nodes_.size() == kMaxStages) {
          error_at(file, stage, fmt::format("a pipeline may have at most {} stages: this one has more", kMaxStages));
          break;
        }
        stage_nodes_.emplace_back(&file, stage);
      }
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


}  // namespace kforge::loader
