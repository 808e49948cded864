// The kf_host_api the runtime hands to every plugin, and the per-call context behind the
// ABI's opaque kf_job pointer.
#pragma once

#include "api.hpp"

#include <kforge/abi.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/cancel.hpp"
#include "engine/job.hpp"

namespace kforge {

// What a kf_job* points at during one stage call: the job and the verdict being written.
struct JobCall {
  Job* job = nullptr;
  Verdict* verdict = nullptr;
  const std::vector<std::string>* routes = nullptr;  // named routes the stage may choose
  const CancelToken* cancel = nullptr;                 // the run's
  std::optional<uint64_t> run_seed;                    // the run's secret seed; none in validate
  std::string problem;  // a misuse of the API by the plugin, reported as the job's error
  bool verdict_given = false;  // the stage called job_verdict (a call without one passes)
  // Keys the stage wrote, so a cached verdict can replay them.
  std::vector<std::string> written_strings;
  std::vector<std::string> written_numbers;
};

// What a kf_export_output* points at during one exporter's finish: where its files go.
struct ExportOutput {
  // Appends data to the file `name`, already checked to be a plain file name.
  std::function<void(const std::string& name, std::string_view data)> write;
};

// What a kf_report_output* points at during one report section's finish: the tables it
// added, in order.
struct ReportOutput {
  struct Table {
    std::string title;
    std::string note;
    std::vector<std::string> columns;
    std::vector<std::vector<std::string>> rows;
    std::string data_json;  // empty: none
  };
  std::vector<Table> tables;
};

KFORGE_API const kf_host_api* host_api();

// Receives every line plugins log through the host, besides the log itself (the plugin
// test kit collects them); an empty function removes the listener.
using PluginLogListener = std::function<void(kf_log_level, const std::string& plugin, const std::string& message)>;
KFORGE_API void set_plugin_log_listener(PluginLogListener listener);

}  // namespace kforge
