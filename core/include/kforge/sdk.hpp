// kforge plugin SDK: write a stage as one C++ class, register it with one macro.
//
//   struct UpperOptions {
//     bool strict = false;
//     int64_t limit = 100;
//     kforge::sdk::Seconds budget{};
//   };
//   class Upper : public kforge::sdk::Stage {
//    public:
//     using Options = UpperOptions;
//     static constexpr const char* kName = "demo.upper";
//     static constexpr const char* kDoc = "Upper-cases the candidate code.";
//     static std::vector<kforge::sdk::Param> params() {
//       using kforge::sdk::Param;
//       return {Param{"strict", KF_PARAM_BOOL, "false", false, "Fail on empty code."}.bind(&Options::strict),
//               Param{"limit", KF_PARAM_INT, "100", false, "Longest code."}.at_least(1).bind(&Options::limit),
//               Param{"budget", KF_PARAM_DURATION, "30s", false, "Time per job."}.above(0)
//                   .formerly({"budget_s"}).bind(&Options::budget)};
//     }
//     explicit Upper(const Options& options) : options_(options) {}
//     void process(kforge::sdk::Job& job) override { ... job.pass(); }
//    private:
//     Options options_;
//   };
//   KFORGE_PLUGIN("demo", "1.0.0", Upper)
//
// Each parameter is declared once: its schema (type, default, choices, range, former names),
// which the host checks when it validates a pipeline, and the field of the class's Options
// that the SDK fills from the checked value before the constructor runs (ParamField in
// kforge/detail/params.hpp says which field types hold which parameter types). A class
// without Options is constructed from a Config and reads its parameters by name: the way of
// plugins written before binding, still accepted.
// Header-only on purpose: everything here compiles into the plugin, and only the C types
// of kforge/abi.h cross into the host. Optional members of a stage class: `kRole`
// (KF_ROLE_*), `kFlags` (KF_STAGE_*), `params()`, `routes()`, `former_names()` (names the
// kind had before a rename, which pipelines may use for one more release), for cacheable stages
// `std::string cache_key(const Job&) const` (key material the host cannot know), and
// `void preflight()` (the run-start check of what the run's environment must provide: API
// keys, programs on PATH; throw to refuse, saying what to install or set), and `void
// warm_up()` (the run starts: begin in the background what the first job would wait for,
// a server; return at once). A source class
// derives from kforge::sdk::Source and has kName, kDoc, optional params(), preflight() and
// former_names(),
// and `bool next(Task&)`. An exporter class (`kforge export --format NAME`) derives from
// kforge::sdk::Exporter and has kName, kDoc, a constructor from the options' JSON text
// (throw to refuse an option), `void task(std::string_view json)` per task of the run and
// `void finish(ExportFiles&)`, which writes the files; throwing from task or finish refuses
// the export with the message (docs/plugins.md#exporters). A report section class (tables
// of its own in `kforge report`) derives from kforge::sdk::ReportSection and has kName,
// kDoc, optional `static std::vector<std::string> task_formats()` (the task.format values
// it reports on; without it, every task), a default constructor, `void task(std::string_view
// json)` per task and `void finish(ReportTables&)`, which adds its tables
// (docs/plugins.md#report-sections). The SDK works with hosts of every 0.x version: what an
// older host does not offer (KF_HAS_FUNCTION) is answered as "not available", never called;
// an older host never calls preflight, so a stage must not rely on it having run.
#pragma once

#include <kforge/abi.h>
#include <kforge/config.hpp>
#include <kforge/detail/host.hpp>
#include <kforge/detail/params.hpp>

#include <chrono>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace kforge::sdk {

// A duration field that keeps fractions of a second.
using Seconds = std::chrono::duration<double>;

// One parameter of a stage's schema. `default_value` is YAML text; nullptr for none. The
// host checks choices and ranges when it validates a pipeline, so a constructor sees only
// values that fit: Param{...}.one_of({"a", "b"}), .at_least(1), .above(0), .at_most(1).
struct Param {
  // The fields of kf_param_spec, in its order, so that Param{"name", KF_PARAM_INT, "3", false, "doc"}
  // reads as the C table does.
  Param(std::string name = {}, kf_param_type type = KF_PARAM_STRING, const char* default_value = nullptr,
        bool required = false, std::string doc = {})
      : name(std::move(name)), type(type), default_value(default_value), required(required), doc(std::move(doc)) {}

  std::string name;
  kf_param_type type = KF_PARAM_STRING;
  const char* default_value = nullptr;
  bool required = false;
  std::string doc;
  std::vector<std::string> choices;  // STRING and STRING_LIST: the accepted values
  uint32_t range = 0;                // KF_RANGE_*: INT, FLOAT and DURATION (seconds)
  double min = 0;
  double max = 0;
  std::vector<std::string> former_names;  // accepted with a warning: formerly()
  detail::Binding binding;                // the options field it fills: bind()

  Param one_of(std::vector<std::string> values) const {
    Param p = *this;
    p.choices = std::move(values);
    return p;
  }
  Param at_least(double bound) const { return with_min(bound, 0); }
  Param above(double bound) const { return with_min(bound, KF_RANGE_MIN_EXCLUSIVE); }
  Param at_most(double bound) const { return with_max(bound, 0); }
  Param below(double bound) const { return with_max(bound, KF_RANGE_MAX_EXCLUSIVE); }
  // Names the parameter had before a rename: a pipeline that still writes one gets this
  // parameter and a warning at that place. Keep them one release, then drop them.
  Param formerly(std::vector<std::string> names) const {
    Param p = *this;
    p.former_names = std::move(names);
    return p;
  }
  // The field of the class's Options this parameter fills: Param{...}.bind(&Options::limit).
  // Shared declarations that bind a base struct's field name the class's Options:
  // .bind<Options>(&Options::timeout) where timeout is a member of a base of Options.
  template <typename Options = void, typename Field, typename Owner>
  Param bind(Field Owner::*field) const {
    using Target = std::conditional_t<std::is_void_v<Options>, Owner, Options>;
    Param p = *this;
    p.binding = detail::bind_field<Target>(field, p.name, p.type, p.required);
    return p;
  }

 private:
  Param with_min(double bound, uint32_t exclusive) const {
    Param p = *this;
    p.range = (p.range & ~KF_RANGE_MIN_EXCLUSIVE) | KF_RANGE_MIN | exclusive;
    p.min = bound;
    return p;
  }
  Param with_max(double bound, uint32_t exclusive) const {
    Param p = *this;
    p.range = (p.range & ~KF_RANGE_MAX_EXCLUSIVE) | KF_RANGE_MAX | exclusive;
    p.max = bound;
    return p;
  }
};

inline void log(kf_log_level level, const std::string& plugin, const std::string& message) {
  if (detail::g_host != nullptr) detail::g_host->log(level, plugin.c_str(), message.c_str());
}

// One candidate of one task inside one stage call.
class Job {
 public:
  Job(const kf_host_api* host, kf_job* job) : host_(host), job_(job) {}

  // The value of a string key, or nullopt when the job has none. The view lives until
  // this stage call returns.
  std::optional<std::string_view> get(const char* key) const {
    const char* out = nullptr;
    size_t len = 0;
    if (host_->job_get_string(job_, key, &out, &len) != KF_OK) return std::nullopt;
    return std::string_view(out, len);
  }
  std::string get_or(const char* key, std::string_view fallback = {}) const {
    auto value = get(key);
    return std::string(value ? *value : fallback);
  }
  std::optional<double> number(const char* key) const {
    double out = 0;
    if (host_->job_get_number(job_, key, &out) != KF_OK) return std::nullopt;
    return out;
  }
  void set(const char* key, std::string_view value) {
    host_->job_set_string(job_, key, value.data(), value.size());
  }
  void set_number(const char* key, double value) { host_->job_set_number(job_, key, value); }

  void pass(const char* route = nullptr) {
    host_->job_verdict(job_, KF_VERDICT_PASS, route, nullptr, nullptr);
  }
  // The candidate is wrong: `error_class` is a short stable id (compile_error, ...).
  void fail(const std::string& error_class, const std::string& message,
            const char* route = nullptr) {
    host_->job_verdict(job_, KF_VERDICT_FAIL, route, error_class.c_str(), message.c_str());
  }
  // The stage could not judge (infrastructure trouble), as opposed to a wrong candidate.
  void error(const std::string& error_class, const std::string& message) {
    host_->job_verdict(job_, KF_VERDICT_ERROR, nullptr, error_class.c_str(), message.c_str());
  }
  void metric(const char* name, double value) { host_->job_metric(job_, name, value); }
  void log_tail(std::string_view text) { host_->job_log_tail(job_, text.data(), text.size()); }
  double seconds_left() const { return host_->job_seconds_left(job_); }
  // Whether the run is being cancelled: long calls poll this and give up.
  bool cancelled() const {
    if (KF_HAS_FUNCTION(host_, kf_host_api, job_cancelled)) return host_->job_cancelled(job_) != 0;
    return host_->run_cancelled() != 0;
  }
  // The run's secret seed (see kf_host_api::job_run_seed); nullopt outside a run or from a
  // host older than 0.2.
  std::optional<uint64_t> run_seed() const {
    uint64_t seed = 0;
    if (!KF_HAS_FUNCTION(host_, kf_host_api, job_run_seed) || host_->job_run_seed(job_, &seed) != KF_OK) {
      return std::nullopt;
    }
    return seed;
  }
  // This call's verdict includes measurements (timings): the verdict cache does not replay
  // it into another run unless that run's user asks. A host older than 0.2 ignores it.
  void mark_measured() {
    if (KF_HAS_FUNCTION(host_, kf_host_api, job_measured)) host_->job_measured(job_);
  }

 private:
  const kf_host_api* host_;
  kf_job* job_;
};

// The task a source is filling in.
class Task {
 public:
  Task(const kf_host_api* host, kf_task* task) : host_(host), task_(task) {}
  void set(const char* key, std::string_view value) {
    host_->task_set_string(task_, key, value.data(), value.size());
  }
  void set_number(const char* key, double value) { host_->task_set_number(task_, key, value); }

 private:
  const kf_host_api* host_;
  kf_task* task_;
};

class Stage {
 public:
  virtual ~Stage() = default;
  // Set a verdict on `job` (pass/fail/error). Throwing fails the job with the message.
  virtual void process(Job& job) = 0;
};

class Source {
 public:
  virtual ~Source() = default;
  // Fill `task` and return true, or return false when there are no more tasks.
  virtual bool next(Task& task) = 0;
  // How many tasks next() will emit, when known up front (progress bars and ETAs).
  virtual std::optional<uint64_t> count() const { return std::nullopt; }
};

// The files of one export (Exporter::finish writes them). The host puts them in place only
// when finish returns, so a refused export leaves none behind.
class ExportFiles {
 public:
  ExportFiles(const kf_host_api* host, kf_export_output* out) : host_(host), out_(out) {}
  // Appends `data` to the file `name` (a plain file name), created on its first write.
  void write(const std::string& name, std::string_view data) {
    if (host_->export_write(out_, name.c_str(), data.data(), data.size()) != KF_OK) {
      throw std::runtime_error("the host refused to write export file '" + name + "' (a plain file name is needed)");
    }
  }

 private:
  const kf_host_api* host_;
  kf_export_output* out_;
};

class Exporter {
 public:
  virtual ~Exporter() = default;
  // One task of the run as a JSON object's text (kf_exporter_kind in kforge/abi.h).
  virtual void task(std::string_view task_json) = 0;
  // After the last task.
  virtual void finish(ExportFiles& files) = 0;
};

// One table a report section adds (ReportSection::finish).
struct ReportTable {
  std::string title;
  std::string note;                            // what its numbers mean, one line; empty for none
  std::vector<std::string> columns;            // the first names the row
  std::vector<std::vector<std::string>> rows;  // display text, one cell per column
  std::string data_json;                       // report.json's copy for programs (the numbers unformatted); empty for none
};

// Where a report section's tables go. The host takes them only when finish returns: a
// section that throws adds none.
class ReportTables {
 public:
  ReportTables(const kf_host_api* host, kf_report_output* out) : host_(host), out_(out) {}
  // Throws, saying why, when the host refuses the table (no title, no column, a row of
  // another width, data that is not JSON) or cannot take tables at all (older than 0.2).
  void add(const ReportTable& table) {
    if (!KF_HAS_FUNCTION(host_, kf_host_api, report_table) || !KF_HAS_FUNCTION(host_, kf_host_api, report_row)) {
      throw std::runtime_error("this kforge takes no report tables (it is older than 0.2)");
    }
    std::vector<const char*> columns;
    for (const std::string& c : table.columns) columns.push_back(c.c_str());
    const char* data = table.data_json.empty() ? nullptr : table.data_json.c_str();
    if (host_->report_table(out_, table.title.c_str(), table.note.empty() ? nullptr : table.note.c_str(),
                            columns.data(), static_cast<uint32_t>(columns.size()), data,
                            table.data_json.size()) != KF_OK) {
      throw std::runtime_error("the host refused report table '" + table.title +
                               "': it needs a title, at least one column, and data that is JSON");
    }
    for (const std::vector<std::string>& row : table.rows) {
      std::vector<const char*> cells;
      for (const std::string& c : row) cells.push_back(c.c_str());
      if (host_->report_row(out_, cells.data(), static_cast<uint32_t>(cells.size())) != KF_OK) {
        throw std::runtime_error("the host refused a row of report table '" + table.title + "': it has " +
                                 std::to_string(row.size()) + " cells for " + std::to_string(columns.size()) +
                                 " columns");
      }
    }
  }

 private:
  const kf_host_api* host_;
  kf_report_output* out_;
};

class ReportSection {
 public:
  virtual ~ReportSection() = default;
  // One task of the run, as an exporter gets it (kf_exporter_kind in kforge/abi.h).
  virtual void task(std::string_view task_json) = 0;
  // After the last task: add the tables (none when there is nothing to say).
  virtual void finish(ReportTables& tables) = 0;
};

}  // namespace kforge::sdk

// The glue that turns the classes above into the C ABI's descriptors and entry points.
#define KFORGE_SDK_CLASSES_DEFINED
#include <kforge/detail/plugin.hpp>

// Exports the plugin's entry symbol. Arguments: plugin name, version, then every stage,
// source, exporter and report section class the library provides.
#define KFORGE_PLUGIN(plugin_name, plugin_version, ...)                                    \
  extern "C" KF_EXPORT const kf_plugin_descriptor* kforge_plugin_entry(void) {             \
    static const ::kforge::sdk::detail::Plugin<__VA_ARGS__> plugin(plugin_name,            \
                                                                   plugin_version);        \
    return &plugin.descriptor;                                                             \
  }
