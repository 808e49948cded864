// Report sections (kf_report_section_kind): the tables plugins add to a run's reports. A
// section reports on the runs that have tasks of its formats (every run when it names none),
// reads those tasks as an exporter reads them (export_task_json), and adds its tables after
// the run's last task. docs/plugins.md#report-sections.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "report/export.hpp"
#include "report/table.hpp"

namespace kforge {

class Registry;
struct ReportSectionKind;

// The sections of `registry` that report on a run whose task formats `has_format` tells, in
// registration order.
std::vector<const ReportSectionKind*> sections_for_run(const Registry& registry,
                                                       const std::function<bool(const std::string& format)>& has_format);

// One report's sections at work: add() every task in task order, then finish(). A section
// whose call fails is dropped with its tables, and the failure logged as an error naming
// it: the rest of the report stands.
class SectionsFold {
 public:
  SectionsFold(const std::vector<const ReportSectionKind*>& sections, std::string strategy);
  ~SectionsFold();
  SectionsFold(const SectionsFold&) = delete;
  SectionsFold& operator=(const SectionsFold&) = delete;

  // No section is at work: the report need not read the verdicts for them.
  bool empty() const { return running_.empty(); }
  void add(const ExportTask& task);
  // The tables, section by section in the order the sections were given.
  std::vector<SectionTable> finish();

 private:
  struct Running;
  std::vector<std::unique_ptr<Running>> running_;
  std::string strategy_;
};

}  // namespace kforge
