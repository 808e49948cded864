#include "engine/registry.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "engine/param_types.hpp"
#include "util/edit_distance.hpp"

namespace fs = std::filesystem;

namespace kforge {

// A dlopen handle. Never dlclose'd: stage instances and static strings of the plugin may
// outlive any scope we could tie the handle to, and unloading buys nothing in a CLI run.
struct Registry::Library {
  std::string path;
  void* handle = nullptr;
  const kf_plugin_descriptor* descriptor = nullptr;
};

Registry::Registry() = default;
Registry::~Registry() = default;

namespace {

std::string canonical(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

}  // namespace

const kf_plugin_descriptor* Registry::load(const std::string& path) {
  const std::string file = canonical(path);
  for (const auto& lib : libraries_) {
    if (lib->path == file) return lib->descriptor;
  }
  // RTLD_LOCAL keeps each plugin's symbols (its own copy of fmt, the SDK's inline
  // variables, ...) from binding to another plugin's.
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw PluginNotLoadable(fmt::format("cannot load plugin '{}': {}", file, why ? why : "unknown error"));
  }
  dlerror();
  void* symbol = dlsym(handle, KF_PLUGIN_ENTRY_SYMBOL);
  if (symbol == nullptr) {
    throw PluginEntryMissing(fmt::format(
        "'{}' is not a kforge plugin: it does not export '{}' (build it with KFORGE_PLUGIN(...) "
        "from kforge/sdk.hpp)",
        file, KF_PLUGIN_ENTRY_SYMBOL));
  }
  auto entry = reinterpret_cast<kf_plugin_entry_fn>(symbol);
  const kf_plugin_descriptor* descriptor = entry();
  if (descriptor == nullptr) {
    throw PluginEntryMissing(fmt::format("plugin '{}': {}() returned no descriptor", file,
                                         KF_PLUGIN_ENTRY_SYMBOL));
  }
  const std::string bundled = bundled_plugin_dir();
  add(descriptor, file, !bundled.empty() && fs::path(file).parent_path() == fs::path(canonical(bundled)));
  auto library = std::make_unique<Library>();
  library->path = file;
  library->handle = handle;
  library->descriptor = descriptor;
  libraries_.push_back(std::move(library));
  return descriptor;
}

namespace {

// Reads one parameter's spec and, where the table has them, its constraints.
ParamSpec read_param(const kf_param_spec& spec, const kf_param_constraints* constraints, const std::string& where) {
  ParamSpec p;
  p.name = spec.name ? spec.name : "";
  if (p.name.empty()) throw PluginError(fmt::format("{}: a parameter has no name", where));
  p.type = spec.type;
  if (param_type(p.type) == nullptr) {
    throw PluginError(fmt::format("{}: parameter '{}' has type {}, which this kforge does not know: a newer kforge "
                                  "reads it",
                                  where, p.name, static_cast<int>(p.type)));
  }
  p.required = spec.required != 0;
  if (spec.default_value != nullptr && !p.required) p.default_value = spec.default_value;
  p.doc = spec.doc ? spec.doc : "";
  if (constraints == nullptr) return p;
  if (constraints->struct_size < KF_PARAM_CONSTRAINTS_V1_SIZE) {
    throw PluginAbiMismatch(fmt::format("{}: the constraints of parameter '{}' are a table of {} bytes, smaller than "
                                        "any version of it ({} bytes)",
                                        where, p.name, constraints->struct_size, KF_PARAM_CONSTRAINTS_V1_SIZE));
  }
  for (uint32_t i = 0; i < constraints->choice_count; ++i) p.choices.emplace_back(constraints->choices[i]);
  p.range = constraints->range;
  p.min = constraints->min;
  p.max = constraints->max;
  if (KF_HAS_FIELD(constraints, kf_param_constraints, former_name_count)) {
    for (uint32_t i = 0; i < constraints->former_name_count; ++i) {
      const char* name = constraints->former_names != nullptr ? constraints->former_names[i] : nullptr;
      if (name == nullptr || *name == '\0') {
        throw PluginError(fmt::format("{}: former name {} of parameter '{}' is empty", where, i + 1, p.name));
      }
      p.former_names.emplace_back(name);
    }
  }
  return p;
}

// A kind's parameters; each name, former ones included, names one parameter only.
std::vector<ParamSpec> read_params(const kf_param_spec* specs, uint32_t count,
                                   const kf_param_constraints* const* constraints, const std::string& where) {
  std::vector<ParamSpec> params;
  std::map<std::string, std::string> owner;  // every name -> the parameter it names
  for (uint32_t i = 0; i < count; ++i) {
    ParamSpec p = read_param(specs[i], constraints ? constraints[i] : nullptr, where);
    std::vector<std::string> names = p.former_names;
    names.insert(names.begin(), p.name);
    for (const std::string& name : names) {
      auto [it, fresh] = owner.emplace(name, p.name);
      if (!fresh) {
        throw PluginError(fmt::format("{}: parameters '{}' and '{}' both take the name '{}'", where, it->second,
                                      p.name, name));
      }
    }
    params.push_back(std::move(p));
  }
  return params;
}

// A table of `count` names, none of them empty.
std::vector<std::string> read_names(const char* const* names, uint32_t count, const char* noun, const std::string& kind,
                                    const std::string& origin) {
  std::vector<std::string> out;
  for (uint32_t i = 0; i < count; ++i) {
    if (names == nullptr || names[i] == nullptr || *names[i] == '\0') {
      throw PluginError(fmt::format("plugin '{}', kind '{}': {} {} is empty", origin, kind, noun, i + 1));
    }
    out.emplace_back(names[i]);
  }
  return out;
}

kf_stage_role read_role(uint32_t role) {
  return role <= KF_ROLE_FIX ? static_cast<kf_stage_role>(role) : KF_ROLE_OTHER;
}

// What stage and source kinds share: a table no shorter than its first release, the
// functions every kind needs, identity, doc and parameters.
template <typename Kind, typename Table>
Kind read_kind(const Table& k, size_t first_release_size, const char* noun, bool has_functions,
               const char* functions, const std::string& plugin, const std::string& version,
               const std::string& origin) {
  const std::string where = fmt::format("plugin '{}', {} kind '{}'", origin, noun, k.name);
  if (k.struct_size < first_release_size) {
    throw PluginAbiMismatch(fmt::format("{}: its table has {} bytes, smaller than any version of it ({} bytes)",
                                        where, k.struct_size, first_release_size));
  }
  if (!has_functions) throw PluginError(fmt::format("{}: {} are required", where, functions));
  Kind kind;
  kind.name = k.name;
  kind.doc = k.doc ? k.doc : "";
  kind.plugin = plugin;
  kind.version = version;
  kind.file = origin;
  const Table* table = &k;  // KF_HAS_FIELD reads a table through a pointer
  const auto* constraints = KF_HAS_FIELD(table, Table, param_constraints) ? k.param_constraints : nullptr;
  kind.params = read_params(k.params, k.param_count, constraints, where);
  kind.create = k.create;
  kind.destroy = k.destroy;
  return kind;
}

StageKind read_stage(const kf_stage_kind& k, const std::string& plugin, const std::string& version,
                     const std::string& origin) {
  StageKind kind = read_kind<StageKind>(k, KF_STAGE_KIND_V1_SIZE, "stage",
                                        k.create != nullptr && k.process != nullptr && k.destroy != nullptr,
                                        "create, process and destroy", plugin, version, origin);
  for (uint32_t r = 0; r < k.route_count; ++r) kind.routes.emplace_back(k.routes[r]);
  kind.flags = k.flags;
  kind.process = k.process;
  const kf_stage_kind* table = &k;
  if (KF_HAS_FIELD(table, kf_stage_kind, role)) kind.role = read_role(k.role);
  if (KF_HAS_FIELD(table, kf_stage_kind, cache_key)) kind.cache_key = k.cache_key;
  if (KF_HAS_FIELD(table, kf_stage_kind, preflight)) kind.preflight = k.preflight;
  if (KF_HAS_FIELD(table, kf_stage_kind, warm_up)) kind.warm_up = k.warm_up;
  if (KF_HAS_FIELD(table, kf_stage_kind, former_name_count)) {
    kind.former_names = read_names(k.former_names, k.former_name_count, "former name", kind.name, origin);
  }
  return kind;
}

SourceKind read_source(const kf_source_kind& k, const std::string& plugin, const std::string& version,
                       const std::string& origin) {
  SourceKind kind = read_kind<SourceKind>(k, KF_SOURCE_KIND_V1_SIZE, "source",
                                          k.create != nullptr && k.next != nullptr && k.destroy != nullptr,
                                          "create, next and destroy", plugin, version, origin);
  kind.next = k.next;
  kind.count = k.count;
  const kf_source_kind* table = &k;
  if (KF_HAS_FIELD(table, kf_source_kind, preflight)) kind.preflight = k.preflight;
  if (KF_HAS_FIELD(table, kf_source_kind, former_name_count)) {
    kind.former_names = read_names(k.former_names, k.former_name_count, "former name", kind.name, origin);
  }
  return kind;
}

ExporterKind read_exporter(const kf_exporter_kind& k, const std::string& plugin, const std::string& version,
                           const std::string& origin) {
  const std::string where = fmt::format("plugin '{}', exporter '{}'", origin, k.name);
  if (k.struct_size < KF_EXPORTER_KIND_V1_SIZE) {
    throw PluginAbiMismatch(fmt::format("{}: its table has {} bytes, smaller than any version of it ({} bytes)",
                                        where, k.struct_size, KF_EXPORTER_KIND_V1_SIZE));
  }
  if (k.create == nullptr || k.task == nullptr || k.finish == nullptr || k.destroy == nullptr) {
    throw PluginError(fmt::format("{}: create, task, finish and destroy are required", where));
  }
  return ExporterKind{k.name, k.doc ? k.doc : "", plugin, version, origin, k.create, k.task, k.finish, k.destroy};
}

ReportSectionKind read_report_section(const kf_report_section_kind& k, const std::string& plugin,
                                      const std::string& version, const std::string& origin) {
  const std::string where = fmt::format("plugin '{}', report section '{}'", origin, k.name);
  if (k.struct_size < KF_REPORT_SECTION_KIND_V1_SIZE) {
    throw PluginAbiMismatch(fmt::format("{}: its table has {} bytes, smaller than any version of it ({} bytes)",
                                        where, k.struct_size, KF_REPORT_SECTION_KIND_V1_SIZE));
  }
  if (k.create == nullptr || k.task == nullptr || k.finish == nullptr || k.destroy == nullptr) {
    throw PluginError(fmt::format("{}: create, task, finish and destroy are required", where));
  }
  ReportSectionKind kind{k.name, k.doc ? k.doc : "", plugin, version, origin, {}, k.create, k.task, k.finish, k.destroy};
  for (uint32_t i = 0; i < k.task_format_count; ++i) {
    if (k.task_formats[i] == nullptr || *k.task_formats[i] == '\0') {
      throw PluginError(fmt::format("{}: task format {} is empty", where, i + 1));
    }
    kind.task_formats.emplace_back(k.task_formats[i]);
  }
  return kind;
}

// Kinds of one table (exporters, report sections) with names unique among those registered
// before and those of the same plugin; `noun` names the table in messages.
template <typename Kind, typename Table, typename Read>
std::vector<Kind> read_named(const Table* const* tables, uint32_t count, const std::deque<Kind>& registered,
                             const char* noun, const std::string& origin, Read read) {
  std::vector<Kind> kinds;
  for (uint32_t i = 0; i < count; ++i) {
    const Table& k = *tables[i];
    if (k.name == nullptr || *k.name == '\0') {
      throw PluginError(fmt::format("plugin '{}': one of its {}s has no name", origin, noun));
    }
    for (const Kind& other : registered) {
      if (other.name == k.name) {
        throw DuplicateKind(fmt::format("{} '{}' is registered twice: by '{}' and by '{}'", noun, k.name, other.file, origin));
      }
    }
    for (const Kind& earlier : kinds) {
      if (earlier.name == k.name) {
        throw DuplicateKind(fmt::format("{} '{}' is registered twice by '{}'", noun, earlier.name, origin));
      }
    }
    kinds.push_back(read(k));
  }
  return kinds;
}

// A bundled plugin is plugins/<folder>/, built as libkforge_<folder>.so: its name is the
// folder's, and every kind it registers is named <folder> or <folder>.<name>, so that a
// kind's name says where its source is. Former names are what kinds were called before.
void check_bundled_names(const std::string& origin, const std::string& plugin, const std::vector<StageKind>& stages,
                         const std::vector<SourceKind>& sources, const std::vector<ExporterKind>& exporters,
                         const std::vector<ReportSectionKind>& sections) {
  const std::string file = fs::path(origin).filename().string();
  if (file != "libkforge_" + plugin + ".so") {
    throw MisnamedKind(fmt::format("bundled plugin '{}' is named '{}': a bundled plugin is named after its folder "
                                   "plugins/<folder>/ and built as libkforge_<folder>.so (kforge_add_plugin(kforge_<folder>))",
                                   origin, plugin));
  }
  auto check = [&](const std::string& name, const char* noun) {
    if (name == plugin || name.starts_with(plugin + ".")) return;
    throw MisnamedKind(fmt::format("bundled plugin '{}' registers {} '{}': the kinds of plugins/{}/ are named {}.<name> "
                                   "(rename it, keeping the old name among its former names for a release)",
                                   origin, noun, name, plugin, plugin));
  };
  for (const StageKind& k : stages) check(k.name, "stage kind");
  for (const SourceKind& k : sources) check(k.name, "source kind");
  for (const ExporterKind& k : exporters) check(k.name, "exporter");
  for (const ReportSectionKind& k : sections) check(k.name, "report section");
}

}  // namespace

void Registry::add(const kf_plugin_descriptor* d, const std::string& origin, bool bundled) {
  // abi_version is the first field of every descriptor version: safe to read first.
  if (d->abi_version < KF_ABI_VERSION_MIN || d->abi_version > KF_ABI_VERSION) {
    throw PluginAbiMismatch(fmt::format(
        "plugin '{}' was built for kforge ABI version {}, but this kforge supports versions {} to "
        "{}: rebuild the plugin against this kforge's SDK",
        origin, d->abi_version, KF_ABI_VERSION_MIN, KF_ABI_VERSION));
  }
  if (d->struct_size < KF_PLUGIN_DESCRIPTOR_V1_SIZE) {
    throw PluginAbiMismatch(fmt::format(
        "plugin '{}' has a descriptor of {} bytes, smaller than ABI version {} allows ({} bytes)",
        origin, d->struct_size, d->abi_version, KF_PLUGIN_DESCRIPTOR_V1_SIZE));
  }
  const std::string plugin = d->name ? d->name : "";
  const std::string version = d->version ? d->version : "";
  // Read and check every kind before registering any, so a rejected plugin leaves nothing
  // behind.
  std::vector<StageKind> stages;
  for (uint32_t i = 0; i < d->stage_count; ++i) {
    if (d->stages[i]->name == nullptr || *d->stages[i]->name == '\0') {
      throw PluginError(fmt::format("plugin '{}' registers a kind without a name", origin));
    }
    stages.push_back(read_stage(*d->stages[i], plugin, version, origin));
  }
  std::vector<SourceKind> sources;
  for (uint32_t i = 0; i < d->source_count; ++i) {
    if (d->sources[i]->name == nullptr || *d->sources[i]->name == '\0') {
      throw PluginError(fmt::format("plugin '{}' registers a kind without a name", origin));
    }
    sources.push_back(read_source(*d->sources[i], plugin, version, origin));
  }
  // A name (current or former) is one kind's, among the stages and among the sources.
  auto check_unique = [&](const auto& fresh, const auto& registered, const char* noun) {
    std::map<std::string, const std::string*> taken;  // name -> file
    for (const auto& k : registered) {
      taken.emplace(k.name, &k.file);
      for (const std::string& former : k.former_names) taken.emplace(former, &k.file);
    }
    for (const auto& k : fresh) {
      std::vector<std::string> names = k.former_names;
      names.insert(names.begin(), k.name);
      for (const std::string& name : names) {
        const auto [it, inserted] = taken.emplace(name, &origin);
        if (inserted) continue;
        if (it->second == &origin) {
          throw DuplicateKind(fmt::format("{} kind '{}' is registered twice by '{}'", noun, name, origin));
        }
        throw DuplicateKind(fmt::format("{} kind '{}' is registered twice: by '{}' and by '{}'", noun, name,
                                        *it->second, origin));
      }
    }
  };
  check_unique(stages, stages_, "stage");
  check_unique(sources, sources_, "source");
  std::vector<ExporterKind> exporters;
  if (KF_HAS_FIELD(d, kf_plugin_descriptor, exporter_count)) {
    exporters = read_named<ExporterKind>(d->exporters, d->exporter_count, exporters_, "exporter", origin,
                                         [&](const kf_exporter_kind& k) { return read_exporter(k, plugin, version, origin); });
  }
  std::vector<ReportSectionKind> sections;
  if (KF_HAS_FIELD(d, kf_plugin_descriptor, report_section_count)) {
    sections = read_named<ReportSectionKind>(
        d->report_sections, d->report_section_count, report_sections_, "report section", origin,
        [&](const kf_report_section_kind& k) { return read_report_section(k, plugin, version, origin); });
  }
  if (bundled) {
    check_bundled_names(origin, plugin, stages, sources, exporters, sections);
  }
  for (StageKind& k : stages) stages_.push_back(std::move(k));
  for (SourceKind& k : sources) sources_.push_back(std::move(k));
  for (ExporterKind& k : exporters) exporters_.push_back(std::move(k));
  for (ReportSectionKind& k : sections) report_sections_.push_back(std::move(k));
}

std::vector<std::string> Registry::discover(const std::vector<std::string>& directories) {
  std::vector<std::string> problems;
  for (const std::string& dir : directories) {
    std::error_code ec;
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_regular_file() && name.starts_with("lib") && name.ends_with(".so")) {
        files.push_back(entry.path().string());
      }
    }
    std::sort(files.begin(), files.end());  // load order, and so errors, are reproducible
    for (const std::string& file : files) {
      try {
        load(file);
      } catch (const PluginError& e) {
        problems.emplace_back(e.what());
      }
    }
  }
  return problems;
}

const StageKind* Registry::stage(const std::string& name) const {
  for (const auto& k : stages_) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

const ExporterKind* Registry::exporter(const std::string& name) const {
  for (const auto& k : exporters_) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

const ReportSectionKind* Registry::report_section(const std::string& name) const {
  for (const auto& k : report_sections_) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

namespace {

template <typename Kind>
const Kind* renamed(const std::deque<Kind>& kinds, const std::string& name) {
  for (const Kind& k : kinds) {
    if (std::find(k.former_names.begin(), k.former_names.end(), name) != k.former_names.end()) return &k;
  }
  return nullptr;
}

}  // namespace

const StageKind* Registry::renamed_stage(const std::string& name) const { return renamed(stages_, name); }
const SourceKind* Registry::renamed_source(const std::string& name) const { return renamed(sources_, name); }

const SourceKind* Registry::source(const std::string& name) const {
  for (const auto& k : sources_) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::vector<std::string> Registry::closest(const std::string& name, bool sources) const {
  std::vector<std::pair<size_t, std::string>> scored;
  auto consider = [&](const std::string& candidate) {
    size_t d = edit_distance(name, candidate);
    // Close enough to be a typo, or the same last component ("upper" for "text.upper").
    bool same_tail = candidate.size() > name.size() && candidate.ends_with("." + name);
    if (d <= std::max<size_t>(2, name.size() / 3) || same_tail) scored.emplace_back(d, candidate);
  };
  if (sources) {
    for (const auto& k : sources_) consider(k.name);
  } else {
    for (const auto& k : stages_) consider(k.name);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> names;
  for (size_t i = 0; i < scored.size() && i < 3; ++i) names.push_back(scored[i].second);
  return names;
}

std::vector<std::string> default_plugin_path() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("KFORGE_PLUGIN_PATH")) {
    std::string value = env;
    size_t start = 0;
    while (start <= value.size()) {
      size_t end = value.find(':', start);
      if (end == std::string::npos) end = value.size();
      if (end > start) dirs.push_back(value.substr(start, end - start));
      start = end + 1;
    }
  }
  if (const std::string bundled = bundled_plugin_dir(); !bundled.empty()) dirs.push_back(bundled);
  return dirs;
}

std::string bundled_plugin_dir() {
  // An installed binary uses the plugins of its own prefix (found from the executable, so
  // an installed tree can be moved), wherever that prefix is, even inside a build tree; a
  // binary in the build tree that is not installed uses the build tree's. Never both: the
  // same plugin in both places would register every kind twice.
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path installed = (exe.parent_path().parent_path() / KFORGE_INSTALL_PLUGIN_DIR).lexically_normal();
  const std::string build_dir = KFORGE_BUILD_DIR;
  if (fs::is_directory(installed, ec)) return installed.string();
  if (exe.string().starts_with(build_dir + "/") && fs::is_directory(KFORGE_BUILD_PLUGIN_DIR, ec)) {
    return KFORGE_BUILD_PLUGIN_DIR;
  }
  return "";
}

}  // namespace kforge
