// Recipe 3 of docs/extending.md: a report table. `device_report.devices` adds "Devices" to
// every run's reports (text, Markdown, HTML, report.json): per device that judged the final
// round of a candidate, how many it judged, how many passed, and their median speedup.
// A report section reads each task as JSON (the fields docs/plugins.md lists under
// Exporters) and gives its tables at the end.
#include <kforge/sdk.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

class Devices : public kforge::sdk::ReportSection {
 public:
  static constexpr const char* kName = "device_report.devices";
  static constexpr const char* kDoc = "Devices: candidates judged, passed and the median speedup, per device";

  void task(std::string_view task_json) override {
    const nlohmann::json task = nlohmann::json::parse(task_json);
    for (const nlohmann::json& job : task.at("jobs")) {
      const std::string device = job.value("device", "");
      Tally& tally = devices_[device.empty() ? "(none)" : device];
      ++tally.candidates;
      if (job.value("passed", false)) {
        ++tally.passed;
        if (job.contains("speedup") && job["speedup"].is_number()) tally.speedups.push_back(job["speedup"].get<double>());
      }
    }
  }

  void finish(kforge::sdk::ReportTables& tables) override {
    kforge::sdk::ReportTable table;
    table.title = "Devices";
    table.note = "per device: final-round candidates, those that passed, the median speedup of those";
    table.columns = {"Device", "Candidates", "Passed", "Median speedup"};
    nlohmann::json data = nlohmann::json::object();
    for (auto& [device, tally] : devices_) {
      const double median = tally.median();
      table.rows.push_back({device, std::to_string(tally.candidates), std::to_string(tally.passed),
                            tally.speedups.empty() ? "-" : format_speedup(median)});
      data[device] = {{"candidates", tally.candidates},
                      {"passed", tally.passed},
                      {"median_speedup", tally.speedups.empty() ? nlohmann::json() : nlohmann::json(median)}};
    }
    table.data_json = data.dump();
    tables.add(table);
  }

 private:
  struct Tally {
    int candidates = 0;
    int passed = 0;
    std::vector<double> speedups;
    double median() {
      if (speedups.empty()) return 0;
      std::sort(speedups.begin(), speedups.end());
      const size_t n = speedups.size();
      return n % 2 ? speedups[n / 2] : (speedups[n / 2 - 1] + speedups[n / 2]) / 2;
    }
  };

  static std::string format_speedup(double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2fx", x);
    return text;
  }

  std::map<std::string, Tally> devices_;  // ordered by name: the table's rows
};

}  // namespace

KFORGE_PLUGIN("device_report", "1.0.0", Devices)
