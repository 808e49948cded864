// A third-party plugin of a format the engine has never heard of.
//
// Its exporter: `kforge export --format tally` writes tally.csv, one row per task (id,
// format, jobs, passed, the outcomes), and options.json, the options it was given. Options
// it takes: `title` (any JSON), and `refuse` (text), which refuses the run with that text
// after it began to write, so a test can show that a refused export leaves no file behind;
// `escape` writes outside its directory, which the host must refuse.
//
// Its report sections: tally.outcomes adds "Tally: outcomes" (candidates per outcome, with
// the counts as data) to every run's reports; tally.graph reports only on tasks of format
// npu-graph ("Tally: graph tasks"). TALLY_SECTION_FAILS=create|task|finish makes
// tally.outcomes fail there, so a test can show the rest of the report stands.
#include <kforge/sdk.hpp>

#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

// Just enough JSON reading for the fields it needs: the text of "key":"value" or a number.
std::string field(std::string_view json, std::string_view key, size_t from = 0) {
  const std::string quoted = "\"" + std::string(key) + "\":";
  const size_t at = json.find(quoted, from);
  if (at == std::string_view::npos) return "";
  size_t start = at + quoted.size();
  if (json[start] == '"') {
    const size_t end = json.find('"', start + 1);
    return std::string(json.substr(start + 1, end - start - 1));
  }
  size_t end = json.find_first_of(",}]", start);
  return std::string(json.substr(start, end - start));
}

class Tally : public kforge::sdk::Exporter {
 public:
  static constexpr const char* kName = "tally";
  static constexpr const char* kDoc = "tally.csv: jobs and passes per task";

  explicit Tally(std::string_view options) : options_(options) {
    if (options.find("\"unknown\"") != std::string_view::npos) {
      throw std::invalid_argument("unknown option 'unknown': tally takes title, refuse and escape");
    }
  }

  void task(std::string_view json) override {
    // "jobs":[{...},...]: count the objects and those that passed.
    int jobs = 0;
    int passed = 0;
    std::string outcomes;
    for (size_t at = json.find("\"sample\":"); at != std::string_view::npos; at = json.find("\"sample\":", at + 1)) {
      ++jobs;
      if (field(json, "passed", at) == "true") ++passed;
      outcomes += (outcomes.empty() ? "" : "|") + field(json, "outcome", at);
    }
    rows_ += field(json, "id") + "," + field(json, "format") + "," + std::to_string(jobs) + "," + std::to_string(passed) +
             "," + outcomes + "\n";
  }

  void finish(kforge::sdk::ExportFiles& files) override {
    files.write("tally.csv", "task,format,jobs,passed,outcomes\n");
    files.write("tally.csv", rows_);
    files.write("options.json", options_);
    if (const std::string why = field(options_, "refuse"); !why.empty()) throw std::runtime_error(why);
    if (!field(options_, "escape").empty()) files.write("../escaped.txt", "out of the directory");
  }

 private:
  std::string options_;
  std::string rows_;
};

// Throws when TALLY_SECTION_FAILS names `step`.
void fail_at(const char* step) {
  const char* fails = std::getenv("TALLY_SECTION_FAILS");
  if (fails != nullptr && std::string(fails) == step) throw std::runtime_error(std::string("told to fail at ") + step);
}

class Outcomes : public kforge::sdk::ReportSection {
 public:
  static constexpr const char* kName = "tally.outcomes";
  static constexpr const char* kDoc = "Tally: candidates per outcome";
  Outcomes() { fail_at("create"); }

  void task(std::string_view json) override {
    fail_at("task");
    for (size_t at = json.find("\"sample\":"); at != std::string_view::npos; at = json.find("\"sample\":", at + 1)) {
      const std::string outcome = field(json, "outcome", at);
      auto it = counts_.begin();
      while (it != counts_.end() && it->first != outcome) ++it;
      if (it == counts_.end()) it = counts_.insert(counts_.end(), {outcome, 0});
      ++it->second;
    }
  }

  void finish(kforge::sdk::ReportTables& tables) override {
    fail_at("finish");
    kforge::sdk::ReportTable table{"Tally: outcomes", "candidates per outcome, in order of first appearance",
                                   {"Outcome", "Candidates"}, {}, "{"};
    for (const auto& [outcome, count] : counts_) {
      table.rows.push_back({outcome, std::to_string(count)});
      table.data_json += (table.data_json.size() > 1 ? "," : "") + ("\"" + outcome + "\":" + std::to_string(count));
    }
    table.data_json += "}";
    tables.add(table);
  }

 private:
  std::vector<std::pair<std::string, int>> counts_;
};

class Graph : public kforge::sdk::ReportSection {
 public:
  static constexpr const char* kName = "tally.graph";
  static constexpr const char* kDoc = "Tally: the npu-graph tasks";
  static std::vector<std::string> task_formats() { return {"npu-graph"}; }
  void task(std::string_view json) override { ids_.push_back(field(json, "id")); }
  void finish(kforge::sdk::ReportTables& tables) override {
    kforge::sdk::ReportTable table{"Tally: graph tasks", "", {"Task"}, {}, ""};
    for (const std::string& id : ids_) table.rows.push_back({id});
    tables.add(table);
  }

 private:
  std::vector<std::string> ids_;
};

}  // namespace

KFORGE_PLUGIN("tally", "1.0.0", Tally, Outcomes, Graph)
