#include "report_options.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "command.hpp"

namespace kforge::cli {

ReportOptions::ReportOptions(CLI::App* command, const char* formats_option) : formats_option_(formats_option) {
  command->add_option(formats_option, formats_text_,
                      "Report formats, comma-separated: text,md,json,html,junit (default: all)");
  command->add_option("--min-pass-rate", min_pass_rate_, "Exit 1 when fewer than this share of tasks pass (0..1)")
      ->check(kFinite & CLI::Range(0.0, 1.0));
  command->add_option("--min-fast-p", min_fast_p_,
                      "P:SHARE: exit 1 when fewer than SHARE of tasks are correct and faster than P x baseline "
                      "(repeatable), e.g. 1.0:0.2")
      ->allow_extra_args(false);  // one value per --min-fast-p: it must not swallow the pipeline
}

void ReportOptions::check() {
  // "text,md" -> formats
  std::stringstream items(formats_text_);
  std::string item;
  while (std::getline(items, item, ',')) {
    auto format = parse_report_format(item);
    if (!format) {
      throw CLI::ValidationError(formats_option_,
                                 fmt::format("unknown report format '{}' (known: {})", item, kReportFormatNames));
    }
    formats_.push_back(*format);
  }
  thresholds_.min_pass_rate = min_pass_rate_;
  for (const auto& text : min_fast_p_) {
    try {
      thresholds_.min_fast_p.push_back(parse_fast_p_threshold(text));
    } catch (const std::invalid_argument& e) {
      throw CLI::ValidationError("--min-fast-p", e.what());
    }
  }
}

int report_and_gate(const Report& report, const std::string& out_dir, const ReportOptions& options,
                    ReportFor report_for) {
  const std::vector<ReportFormat>& formats = options.formats();
  if (std::find(formats.begin(), formats.end(), ReportFormat::Text) != formats.end()) {
    print_stdout(fmt::format("\n{}", render_text(report_tables(report.metrics, report.section_tables))));
  }
  if (::access(out_dir.c_str(), W_OK) != 0) {
    if (report_for == ReportFor::Run) {
      spdlog::error("'{}' is not writable any more ({}): the report files were not written. The results are saved: "
                    "`kforge report {}` writes them once the directory is writable",
                    out_dir, std::strerror(errno), out_dir);
      return kExitRuntime;
    }
    spdlog::warn("'{}' is not writable ({}): report files are not written", out_dir, std::strerror(errno));
  } else {
    for (const auto& path : write_report_files(report, out_dir, formats)) spdlog::info("report: {}", path);
  }
  const auto missed = missed_thresholds(report, options.thresholds());
  for (const auto& m : missed) spdlog::error("threshold missed: {}", m);
  return missed.empty() ? kExitOk : kExitThresholds;
}

}  // namespace kforge::cli
