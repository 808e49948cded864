// A titled table of display strings, as every report format renders it (report.hpp), and
// one a plugin's report section added (sections.hpp).
#pragma once

#include <string>
#include <vector>

namespace kforge {

struct Table {
  std::string title;
  std::string note;  // what the numbers mean, one line
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

// A table of a report section (kf_report_section_kind): which section and plugin added
// it, and the JSON value report.json carries beside it.
struct SectionTable {
  std::string section;
  std::string plugin;
  Table table;
  std::string data_json;  // empty: none
};

}  // namespace kforge
