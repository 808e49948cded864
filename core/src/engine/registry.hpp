// Loads plugin shared objects and keeps the kinds they register: stages, task sources,
// exporters and report sections.
#pragma once

#include "api.hpp"

#include <kforge/abi.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kforge {

// Why a plugin could not be loaded; each case is its own class so callers and tests
// can tell them apart.
class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class PluginNotLoadable : public PluginError {  // dlopen failed: the message has dlerror()
 public:
  using PluginError::PluginError;
};
class PluginEntryMissing : public PluginError {  // no kforge_plugin_entry symbol
 public:
  using PluginError::PluginError;
};
class PluginAbiMismatch : public PluginError {  // says the plugin's and the host's versions
 public:
  using PluginError::PluginError;
};
class DuplicateKind : public PluginError {  // names both files
 public:
  using PluginError::PluginError;
};
class MisnamedKind : public PluginError {  // a bundled plugin's kind outside its prefix
 public:
  using PluginError::PluginError;
};

// One parameter of a kind's schema as the host reads it: the ABI's kf_param_spec and, when
// the plugin declares them (since 0.2), its constraints.
struct ParamSpec {
  std::string name;
  kf_param_type type = KF_PARAM_STRING;
  std::optional<std::string> default_value;  // YAML text; none when required or absent
  bool required = false;
  std::string doc;
  std::vector<std::string> choices;  // empty: any text
  uint32_t range = 0;                // KF_RANGE_* bits
  double min = 0;
  double max = 0;
  std::vector<std::string> former_names;  // accepted with a warning (since 0.2)
};

// A stage kind as a plugin registered it, read once from its ABI table: the rest of the
// runtime never touches kf_stage_kind, whatever version of the table the plugin has.
struct StageKind {
  std::string name;
  std::string doc;
  std::string plugin;   // plugin name
  std::string version;  // plugin version
  std::string file;     // shared object it came from
  std::vector<ParamSpec> params;
  std::vector<std::string> routes;  // named routes besides pass/fail/error
  uint32_t flags = 0;               // KF_STAGE_*
  kf_stage_role role = KF_ROLE_OTHER;
  decltype(kf_stage_kind::create) create = nullptr;
  decltype(kf_stage_kind::process) process = nullptr;
  decltype(kf_stage_kind::destroy) destroy = nullptr;
  decltype(kf_stage_kind::cache_key) cache_key = nullptr;  // nullptr when the stage adds nothing
  decltype(kf_stage_kind::preflight) preflight = nullptr;  // nullptr when it checks nothing at run start
  decltype(kf_stage_kind::warm_up) warm_up = nullptr;      // nullptr when it starts nothing ahead of its jobs
  std::vector<std::string> former_names;                   // names before a rename, still accepted

  bool waits() const { return (flags & KF_STAGE_WAITS) != 0; }
  bool cacheable() const { return (flags & KF_STAGE_CACHEABLE) != 0; }
};

struct SourceKind {
  std::string name;
  std::string doc;
  std::string plugin;
  std::string version;
  std::string file;
  std::vector<ParamSpec> params;
  decltype(kf_source_kind::create) create = nullptr;
  decltype(kf_source_kind::next) next = nullptr;
  decltype(kf_source_kind::destroy) destroy = nullptr;
  decltype(kf_source_kind::count) count = nullptr;  // nullptr when the source cannot tell
  decltype(kf_source_kind::preflight) preflight = nullptr;  // nullptr when it checks nothing at run start
  std::vector<std::string> former_names;                    // names before a rename, still accepted
};

// An exporter as a plugin registered it (kf_exporter_kind, since 0.2): `kforge export
// --format NAME` runs it.
struct ExporterKind {
  std::string name;
  std::string doc;
  std::string plugin;
  std::string version;
  std::string file;
  decltype(kf_exporter_kind::create) create = nullptr;
  decltype(kf_exporter_kind::task) task = nullptr;
  decltype(kf_exporter_kind::finish) finish = nullptr;
  decltype(kf_exporter_kind::destroy) destroy = nullptr;
};

// A report section as a plugin registered it (kf_report_section_kind, since 0.2): tables
// of its own that `kforge report` adds for runs with tasks of its formats.
struct ReportSectionKind {
  std::string name;
  std::string doc;
  std::string plugin;
  std::string version;
  std::string file;
  std::vector<std::string> task_formats;  // empty: it reports on every task
  decltype(kf_report_section_kind::create) create = nullptr;
  decltype(kf_report_section_kind::task) task = nullptr;
  decltype(kf_report_section_kind::finish) finish = nullptr;
  decltype(kf_report_section_kind::destroy) destroy = nullptr;

  bool reports_on(const std::string& format) const {
    return task_formats.empty() || std::find(task_formats.begin(), task_formats.end(), format) != task_formats.end();
  }
};

class KFORGE_API Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Loads one shared object and registers its kinds; throws a PluginError subclass. Tables
  // of any size from their first release (KF_*_V1_SIZE) on are accepted: fields a plugin's
  // table lacks take their defaults, fields this host does not know are left alone.
  // Loading the same file twice is a no-op. Returns the plugin's descriptor. A file of the
  // bundled plugin directory (bundled_plugin_dir()) is a bundled plugin (add's `bundled`).
  const kf_plugin_descriptor* load(const std::string& path);

  // Registers a descriptor that is linked into the executable (tests, built-ins). A
  // `bundled` plugin is one of kforge's own, built from plugins/<folder>/ into
  // libkforge_<folder>.so: its name must be its file's <folder>, and each kind's name that
  // name or start with it and a dot (former names aside); MisnamedKind otherwise.
  void add(const kf_plugin_descriptor* descriptor, const std::string& origin, bool bundled = false);

  // Loads every lib*.so in `directories`, in order (see default_plugin_path()).
  // Problems with single files are returned as messages; the rest still loads.
  std::vector<std::string> discover(const std::vector<std::string>& directories);

  const StageKind* stage(const std::string& name) const;
  const SourceKind* source(const std::string& name) const;
  // The kind that had `name` before a rename (its former_names), or nullptr.
  const StageKind* renamed_stage(const std::string& name) const;
  const SourceKind* renamed_source(const std::string& name) const;
  const ExporterKind* exporter(const std::string& name) const;
  const ReportSectionKind* report_section(const std::string& name) const;
  // In registration order; a deque, so that the kinds a loaded pipeline points at stay put
  // when more plugins load.
  const std::deque<StageKind>& stages() const { return stages_; }
  const std::deque<SourceKind>& sources() const { return sources_; }
  const std::deque<ExporterKind>& exporters() const { return exporters_; }
  const std::deque<ReportSectionKind>& report_sections() const { return report_sections_; }
  // Known kind names closest to `name` (edit distance), best first, for "did you mean".
  std::vector<std::string> closest(const std::string& name, bool sources) const;

 private:
  struct Library;
  std::vector<std::unique_ptr<Library>> libraries_;
  std::deque<StageKind> stages_;
  std::deque<SourceKind> sources_;
  std::deque<ExporterKind> exporters_;
  std::deque<ReportSectionKind> report_sections_;
};

// The directory of kforge's own plugins: the install prefix's when this binary is
// installed, else the build tree's when it runs from the build tree; empty when neither
// exists.
std::string bundled_plugin_dir();

// The default search path: KFORGE_PLUGIN_PATH entries, then bundled_plugin_dir().
// Directories that do not exist are left out.
KFORGE_API std::vector<std::string> default_plugin_path();

}  // namespace kforge
