// The HTML report's task browser: a sortable, filterable task table and a page per task
// and candidate (code per round, diffs, verdicts, logs, measurements, model, cost), drawn
// by the page's script from JSON embedded in the page. Only the table's visible rows and
// the open candidate ever become DOM, so 10,000 tasks load as fast as 10.
#pragma once

#include <cstdio>
#include <ostream>
#include <string>

#include "report/report.hpp"

namespace kforge {

// Style rules of the task browser, for the page's <style>.
extern const char* const kTaskBrowserStyle;
// The task browser's script, for the page's <head>; `data` starts it.
extern const char* const kTaskBrowserScript;

// The task browser of one page, written as the report's tasks are read (html.cpp's
// writer drives it): the filters and the table inside the overview; after the overview the
// task index, the call that starts the script (the table works from then on), then one
// JSON block per task that is parsed only when that task is opened. Everything a
// candidate wrote stays data: it reaches the page through textContent, and `<` in the JSON
// is written as \u003c so that no `</script>` ends a block early.
//
// The index lists the tasks while it stays within limits.index_bytes, and a task's block
// is embedded while the blocks stay within limits.detail_bytes (report.hpp): the index
// says how many of the run's tasks it lists ("total", "listed"), and each task whether its
// block is there ("detail"). The blocks are kept in a temporary file until the index ends.
class TaskBrowserWriter {
 public:
  TaskBrowserWriter(const Report& report, std::ostream& page, const HtmlLimits& limits);
  ~TaskBrowserWriter();
  TaskBrowserWriter(const TaskBrowserWriter&) = delete;
  TaskBrowserWriter& operator=(const TaskBrowserWriter&) = delete;

  // The filters and the table, inside the overview.
  std::string markup() const;
  // After the overview: opens the index.
  void begin();
  void task(const ReportTask& task);
  // Ends the index, starts the browser, and appends the tasks' blocks.
  void end();

 private:
  const Report& report_;
  std::ostream& page_;
  HtmlLimits limits_;
  std::FILE* blocks_ = nullptr;  // the tasks' blocks until the index ends
  uint64_t listed_ = 0;
  uint64_t detailed_ = 0;
  size_t index_bytes_ = 0;
  size_t detail_bytes_ = 0;
  bool index_full_ = false;
};

}  // namespace kforge
