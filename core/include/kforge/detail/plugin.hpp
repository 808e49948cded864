// kforge plugin SDK glue: the C view of a plugin's classes (their schemas, the entry points
// the host calls, the descriptor KFORGE_PLUGIN exports), built at compile time from what
// each class declares. Included by kforge/sdk.hpp after the classes it adapts; nothing here
// is for plugins to call, and it may change with any SDK version (the ABI in kforge/abi.h
// is what stays).
#pragma once

#ifndef KFORGE_SDK_CLASSES_DEFINED
#error "include <kforge/sdk.hpp>, not kforge/detail/plugin.hpp"
#endif

namespace kforge::sdk {
namespace detail {

// The class is built from an options struct that its parameters fill (Param::bind), and
// perhaps the directory of its pipeline file.
template <typename T>
concept HasOptions = requires { typename T::Options; } &&
                     (std::is_constructible_v<T, const typename T::Options&> ||
                      std::is_constructible_v<T, const typename T::Options&, const PipelineDir&>);

// Every parameter bound to a field of Options, of a type the field holds; else what is not.
template <typename Options>
std::string check_bindings(const std::vector<Param>& params, const char* kind) {
  for (const Param& p : params) {
    if (p.binding.options == nullptr) {
      return std::string(kind) + ": parameter '" + p.name + "' is bound to no field of the options struct " +
             "(declare it with Param{...}.bind(&Options::field))";
    }
    if (p.binding.options != &options_tag<Options>) {
      return std::string(kind) + ": parameter '" + p.name + "' is bound to a field of another options struct " +
             "than the class's Options (write .bind<Options>(&Options::field))";
    }
    if (!p.binding.problem.empty()) return std::string(kind) + ": " + p.binding.problem;
  }
  return "";
}

template <typename T>
std::vector<Param> params_of() {
  if constexpr (requires { T::params(); }) {
    return T::params();
  } else {
    return {};
  }
}

// Static storage for the C view of one class's schema; lives as long as the library.
template <typename T>
struct Schema {
  std::vector<Param> params = params_of<T>();
  std::vector<kf_param_spec> specs;
  std::vector<std::vector<const char*>> choices;  // per parameter
  std::vector<kf_param_constraints> constraints;  // per parameter
  std::vector<const kf_param_constraints*> constraint_table;
  std::vector<std::string> route_names;
  std::vector<const char*> routes;
  std::vector<std::string> former_name_list;
  std::vector<const char*> former_names;
  std::vector<std::vector<const char*>> param_former_names;  // per parameter
  std::string binding_problem;  // why the class's Options cannot be filled; empty when it can

  Schema() {
    choices.resize(params.size());
    constraints.resize(params.size());
    param_former_names.resize(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      const Param& p = params[i];
      specs.push_back({p.name.c_str(), p.type, p.default_value, p.required ? 1 : 0, p.doc.c_str()});
      for (const std::string& c : p.choices) choices[i].push_back(c.c_str());
      for (const std::string& n : p.former_names) param_former_names[i].push_back(n.c_str());
      kf_param_constraints& c = constraints[i];
      c.struct_size = sizeof(kf_param_constraints);
      c.choices = choices[i].data();
      c.choice_count = static_cast<uint32_t>(choices[i].size());
      c.range = p.range;
      c.min = p.min;
      c.max = p.max;
      c.former_names = param_former_names[i].data();
      c.former_name_count = static_cast<uint32_t>(param_former_names[i].size());
    }
    if constexpr (HasOptions<T>) binding_problem = check_bindings<typename T::Options>(params, T::kName);
    for (const kf_param_constraints& c : constraints) constraint_table.push_back(&c);
    if constexpr (requires { T::routes(); }) route_names = T::routes();
    for (const std::string& r : route_names) routes.push_back(r.c_str());
    if constexpr (requires { T::former_names(); }) former_name_list = T::former_names();
    for (const std::string& n : former_name_list) former_names.push_back(n.c_str());
  }
  static const Schema& get() {
    static const Schema schema;
    return schema;
  }
};

template <typename T>
kf_status create(const kf_host_api* host, const kf_config* cfg, void** instance, char* err,
                 size_t err_size) noexcept {
  return guarded(err, err_size, "unknown exception while creating the stage", [&] {
    g_host = host;
    const Config config(host, cfg);
    if constexpr (HasOptions<T>) {
      const Schema<T>& schema = Schema<T>::get();
      if (!schema.binding_problem.empty()) throw std::logic_error(schema.binding_problem);
      typename T::Options options{};
      for (const Param& p : schema.params) p.binding.fill(&options, config);
      if constexpr (std::is_constructible_v<T, const typename T::Options&, const PipelineDir&>) {
        *instance = new T(std::as_const(options), PipelineDir(config.base_dir()));
      } else {
        *instance = new T(std::as_const(options));
      }
    } else if constexpr (std::is_constructible_v<T, const Config&>) {
      *instance = new T(config);  // reads its parameters by name: the way before Options
    } else {
      static_assert(std::is_default_constructible_v<T>,
                    "a stage or source is constructed from its Options (Param::bind), or by default when it takes "
                    "no parameters, or from a Config");
      *instance = new T();
    }
  });
}

template <typename T>
void destroy(void* instance) noexcept {
  delete static_cast<T*>(instance);
}

template <typename T>
kf_status process(void* instance, kf_job* job, char* err, size_t err_size) noexcept {
  return guarded(err, err_size, "unknown exception in the stage", [&] {
    Job view(g_host, job);
    static_cast<T*>(instance)->process(view);
  });
}

template <typename T>
kf_status cache_key(void* instance, const kf_job* job, char* out, size_t out_size, size_t* length) noexcept {
  try {
    const Job view(g_host, const_cast<kf_job*>(job));  // read-only use: cache_key takes it const
    const std::string material = static_cast<const T*>(instance)->cache_key(view);
    *length = material.size();
    if (material.size() <= out_size) std::memcpy(out, material.data(), material.size());
    return KF_OK;
  } catch (...) {
    return KF_ERROR;  // no key: the host evaluates instead of answering from the cache
  }
}

// The class has `void preflight()` (a stage's or a source's run-start check).
template <typename T>
concept HasPreflight = requires(T& t) { t.preflight(); };

template <typename T>
kf_status preflight(void* instance, char* err, size_t err_size) noexcept {
  return guarded(err, err_size, "unknown exception in the preflight check", [&] {
    static_cast<T*>(instance)->preflight();
  });
}

// The class has `void warm_up()` (a stage's start of what its first job needs).
template <typename T>
concept HasWarmUp = requires(T& t) { t.warm_up(); };

template <typename T>
kf_status warm_up(void* instance, char* err, size_t err_size) noexcept {
  return guarded(err, err_size, "unknown exception while warming up", [&] {
    static_cast<T*>(instance)->warm_up();
  });
}

template <typename T>
kf_status next(void* instance, kf_task* task, int* has_task, char* err, size_t err_size) noexcept {
  return guarded(err, err_size, "unknown exception in the task source", [&] {
    Task view(g_host, task);
    *has_task = static_cast<T*>(instance)->next(view) ? 1 : 0;
  });
}

template <typename T>
kf_status count(void* instance, uint64_t* tasks) noexcept {
  try {
    auto total = static_cast<T*>(instance)->count();
    if (!total) return KF_NOT_FOUND;
    *tasks = *total;
    return KF_OK;
  } catch (...) {
    return KF_ERROR;
  }
}

template <typename T>
kf_status create_exporter(const kf_host_api* host, const char* options, size_t options_len, void** instance, char* err,
                          size_t err_size) noexcept {
  return guarded(err, err_size, "unknown exception while creating the exporter", [&] {
    g_host = host;
    *instance = new T(std::string_view(options, options_len));
  });
}

// An exporter's or a report section's task.
template <typename T>
kf_status read_task(void* instance, const char* task, size_t len, char* err, size_t err_size) noexcept {
  return guarded(err, err_size, "unknown exception while reading a task", [&] {
    static_cast<T*>(instance)->task(std::string_view(task, len));
  });
}

template <typename T>
kf_status export_finish(void* instance, kf_export_output* out, char* err, size_t err_size) noexcept {
  return guarded(err, err_size, "unknown exception in the exporter", [&] {
    ExportFiles files(g_host, out);
    static_cast<T*>(instance)->finish(files);
  });
}

template <typename T>
const kf_exporter_kind* exporter_kind() {
  static const kf_exporter_kind kind = [] {
    kf_exporter_kind k{};
    k.struct_size = sizeof(kf_exporter_kind);
    k.name = T::kName;
    k.doc = T::kDoc;
    k.create = &create_exporter<T>;
    k.task = &read_task<T>;
    k.finish = &export_finish<T>;
    k.destroy = &destroy<T>;
    return k;
  }();
  return &kind;
}

template <typename T>
kf_status create_section(const kf_host_api* host, void** instance, char* err, size_t err_size) noexcept {
  return guarded(err, err_size, "unknown exception while creating the report section", [&] {
    g_host = host;
    *instance = new T();
  });
}

template <typename T>
kf_status finish_section(void* instance, kf_report_output* out, char* err, size_t err_size) noexcept {
  return guarded(err, err_size, "unknown exception in the report section", [&] {
    ReportTables tables(g_host, out);
    static_cast<T*>(instance)->finish(tables);
  });
}

template <typename T>
const kf_report_section_kind* report_section_kind() {
  // The task formats as C strings, for as long as the library is loaded.
  struct Formats {
    std::vector<std::string> names;
    std::vector<const char*> table;
    Formats() {
      if constexpr (requires { T::task_formats(); }) names = T::task_formats();
      for (const std::string& n : names) table.push_back(n.c_str());
    }
  };
  static const Formats formats;
  static const kf_report_section_kind kind = [] {
    kf_report_section_kind k{};
    k.struct_size = sizeof(kf_report_section_kind);
    k.name = T::kName;
    k.doc = T::kDoc;
    k.task_formats = formats.table.data();
    k.task_format_count = static_cast<uint32_t>(formats.table.size());
    k.create = &create_section<T>;
    k.task = &read_task<T>;
    k.finish = &finish_section<T>;
    k.destroy = &destroy<T>;
    return k;
  }();
  return &kind;
}

template <typename T>
const kf_stage_kind* stage_kind() {
  static const kf_stage_kind kind = [] {
    const Schema<T>& schema = Schema<T>::get();
    kf_stage_kind k{};
    k.struct_size = sizeof(kf_stage_kind);
    k.name = T::kName;
    k.doc = T::kDoc;
    k.params = schema.specs.data();
    k.param_count = static_cast<uint32_t>(schema.specs.size());
    k.routes = schema.routes.data();
    k.route_count = static_cast<uint32_t>(schema.routes.size());
    if constexpr (requires { T::kFlags; }) k.flags = T::kFlags;
    k.create = &create<T>;
    k.process = &process<T>;
    k.destroy = &destroy<T>;
    if constexpr (requires { T::kRole; }) k.role = T::kRole;
    k.param_constraints = schema.constraint_table.data();
    if constexpr (requires(const T& t, const Job& j) { { t.cache_key(j) } -> std::convertible_to<std::string>; }) {
      k.cache_key = &cache_key<T>;
    }
    if constexpr (HasPreflight<T>) k.preflight = &preflight<T>;
    if constexpr (HasWarmUp<T>) k.warm_up = &warm_up<T>;
    k.former_names = schema.former_names.data();
    k.former_name_count = static_cast<uint32_t>(schema.former_names.size());
    return k;
  }();
  return &kind;
}

template <typename T>
const kf_source_kind* source_kind() {
  static const kf_source_kind kind = [] {
    const Schema<T>& schema = Schema<T>::get();
    kf_source_kind k{};
    k.struct_size = sizeof(kf_source_kind);
    k.name = T::kName;
    k.doc = T::kDoc;
    k.params = schema.specs.data();
    k.param_count = static_cast<uint32_t>(schema.specs.size());
    k.create = &create<T>;
    k.next = &next<T>;
    k.destroy = &destroy<T>;
    k.count = &count<T>;
    k.param_constraints = schema.constraint_table.data();
    if constexpr (HasPreflight<T>) k.preflight = &preflight<T>;
    k.former_names = schema.former_names.data();
    k.former_name_count = static_cast<uint32_t>(schema.former_names.size());
    return k;
  }();
  return &kind;
}

template <typename... Ts>
struct Plugin {
  static_assert(((std::is_base_of_v<Stage, Ts> || std::is_base_of_v<Source, Ts> ||
                  std::is_base_of_v<Exporter, Ts> || std::is_base_of_v<ReportSection, Ts>) && ...),
                "KFORGE_PLUGIN takes classes derived from kforge::sdk::Stage, Source, Exporter or ReportSection");
  std::vector<const kf_stage_kind*> stages;
  std::vector<const kf_source_kind*> sources;
  std::vector<const kf_exporter_kind*> exporters;
  std::vector<const kf_report_section_kind*> report_sections;
  kf_plugin_descriptor descriptor{};

  Plugin(const char* name, const char* version) {
    (add<Ts>(), ...);
    descriptor.abi_version = KF_ABI_VERSION;
    descriptor.struct_size = sizeof(kf_plugin_descriptor);
    descriptor.name = name;
    descriptor.version = version;
    descriptor.stages = stages.data();
    descriptor.stage_count = static_cast<uint32_t>(stages.size());
    descriptor.sources = sources.data();
    descriptor.source_count = static_cast<uint32_t>(sources.size());
    descriptor.exporters = exporters.data();
    descriptor.exporter_count = static_cast<uint32_t>(exporters.size());
    descriptor.report_sections = report_sections.data();
    descriptor.report_section_count = static_cast<uint32_t>(report_sections.size());
  }

 private:
  template <typename T>
  void add() {
    if constexpr (std::is_base_of_v<Stage, T>) {
      stages.push_back(stage_kind<T>());
    } else if constexpr (std::is_base_of_v<Exporter, T>) {
      exporters.push_back(exporter_kind<T>());
    } else if constexpr (std::is_base_of_v<ReportSection, T>) {
      report_sections.push_back(report_section_kind<T>());
    } else {
      sources.push_back(source_kind<T>());
    }
  }
};

}  // namespace detail
}  // namespace kforge::sdk
