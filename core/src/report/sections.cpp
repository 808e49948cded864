#include "report/sections.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/host.hpp"
#include "engine/registry.hpp"

namespace kforge {

struct SectionsFold::Running {
  const ReportSectionKind* kind = nullptr;
  void* instance = nullptr;
  ~Running() {
    if (instance != nullptr) kind->destroy(instance);
  }
};

namespace {

// Logs why a section's tables are left out of the report.
void drop(const ReportSectionKind& kind, const char* when, const char* err) {
  spdlog::error("report section '{}' (plugin {}, {}) {}: {}; its tables are left out of the report", kind.name,
                kind.plugin, kind.file, when, err[0] == '\0' ? "it gave no reason" : err);
}

}  // namespace

std::vector<const ReportSectionKind*> sections_for_run(const Registry& registry,
                                                       const std::function<bool(const std::string& format)>& has_format) {
  std::vector<const ReportSectionKind*> sections;
  for (const ReportSectionKind& kind : registry.report_sections()) {
    if (kind.task_formats.empty() || std::any_of(kind.task_formats.begin(), kind.task_formats.end(), has_format)) {
      sections.push_back(&kind);
    }
  }
  return sections;
}

SectionsFold::SectionsFold(const std::vector<const ReportSectionKind*>& sections, std::string strategy)
    : strategy_(std::move(strategy)) {
  for (const ReportSectionKind* kind : sections) {
    char err[4096] = {0};
    auto running = std::make_unique<Running>();
    running->kind = kind;
    if (kind->create(host_api(), &running->instance, err, sizeof err) != KF_OK) {
      running->instance = nullptr;
      drop(*kind, "could not begin", err);
      continue;
    }
    running_.push_back(std::move(running));
  }
}

SectionsFold::~SectionsFold() = default;

void SectionsFold::add(const ExportTask& task) {
  std::string text;  // made once, for the first section that reads the task
  for (auto it = running_.begin(); it != running_.end();) {
    const ReportSectionKind& kind = *(*it)->kind;
    if (!kind.reports_on(task.info.format)) {
      ++it;
      continue;
    }
    if (text.empty()) {
      text = export_task_json(strategy_, task).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    char err[4096] = {0};
    if (kind.task((*it)->instance, text.data(), text.size(), err, sizeof err) != KF_OK) {
      drop(kind, fmt::format("refused task '{}'", task.info.id).c_str(), err);
      it = running_.erase(it);
      continue;
    }
    ++it;
  }
}

std::vector<SectionTable> SectionsFold::finish() {
  std::vector<SectionTable> tables;
  for (const auto& running : running_) {
    const ReportSectionKind& kind = *running->kind;
    ReportOutput output;
    char err[4096] = {0};
    if (kind.finish(running->instance, reinterpret_cast<kf_report_output*>(&output), err, sizeof err) != KF_OK) {
      drop(kind, "failed", err);
      continue;
    }
    for (ReportOutput::Table& t : output.tables) {
      tables.push_back({kind.name, kind.plugin, Table{std::move(t.title), std::move(t.note), std::move(t.columns),
                                                      std::move(t.rows)},
                        std::move(t.data_json)});
    }
  }
  running_.clear();
  return tables;
}

}  // namespace kforge
