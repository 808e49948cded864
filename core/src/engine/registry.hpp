// Loads plugin shared objects and keeps the stage and source kinds they register.
#pragma once

#include "api.hpp"

#include <kforge/abi.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace kforge {

// Why a plugin could not be loaded; each case is its own class so callers and tests
// can tell them apart.
class KFORGE_API PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class KFORGE_API PluginNotLoadable : public PluginError {  // dlopen failed: the message has dlerror()
 public:
  using PluginError::PluginError;
};
class KFORGE_API PluginEntryMissing : public PluginError {  // no kforge_plugin_entry symbol
 public:
  using PluginError::PluginError;
};
class KFORGE_API PluginAbiMismatch : public PluginError {  // says the plugin's and the host's versions
 public:
  using PluginError::PluginError;
};
class KFORGE_API DuplicateKind : public PluginError {  // names both files
 public:
  using PluginError::PluginError;
};

struct StageKind {
  const kf_stage_kind* abi = nullptr;
  std::string name;
  std::string plugin;  // plugin name
  std::string version; // plugin version
  std::string file;    // shared object it came from
};

struct SourceKind {
  const kf_source_kind* abi = nullptr;
  std::string name;
  std::string plugin;
  std::string version;
  std::string file;
};

class KFORGE_API Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Loads one shared object and registers its kinds; throws a PluginError subclass.
  // Loading the same file twice is a no-op.
  void load(const std::string& path);

  // Registers a descriptor that is linked into the executable (tests, built-ins).
  void add(const kf_plugin_descriptor* descriptor, const std::string& origin);

  // Loads every lib*.so in `directories`, in order (see default_plugin_path()).
  // Problems with single files are returned as messages; the rest still loads.
  std::vector<std::string> discover(const std::vector<std::string>& directories);

  const StageKind* stage(const std::string& name) const;
  const SourceKind* source(const std::string& name) const;
  const std::vector<StageKind>& stages() const { return stages_; }
  const std::vector<SourceKind>& sources() const { return sources_; }
  // Known kind names closest to `name` (edit distance), best first, for "did you mean".
  std::vector<std::string> closest(const std::string& name, bool sources) const;

 private:
  struct Library;
  std::vector<std::unique_ptr<Library>> libraries_;
  std::vector<StageKind> stages_;
  std::vector<SourceKind> sources_;
};

// The default search path: KFORGE_PLUGIN_PATH entries, then the build tree's plugin
// directory when this binary runs from the build tree, else the install prefix's.
// Directories that do not exist are left out.
KFORGE_API std::vector<std::string> default_plugin_path();

}  // namespace kforge
