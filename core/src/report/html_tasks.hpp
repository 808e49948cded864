// The HTML report's task browser: a sortable, filterable task table and a page per task
// and candidate (code per round, diffs, verdicts, logs, measurements, model, cost), drawn
// by the page's script from JSON embedded in the page. Only the table's visible rows and
// the open candidate ever become DOM, so 10,000 tasks load as fast as 10.
#pragma once

#include <string>

#include "report/report.hpp"

namespace kforge {

// Style rules of the task browser, for the page's <style>.
extern const char* const kTaskBrowserStyle;
// The task browser's script, for the page's <head>; `data` starts it.
extern const char* const kTaskBrowserScript;

struct TaskBrowserHtml {
  // The filters and the table, inside the overview; then the detail view beside it.
  std::string markup;
  // What the script draws from: the task index, the call that starts the script (the
  // table works from then on), then one JSON block per task that is parsed only when that
  // task is opened. Everything a candidate wrote stays data: it
  // reaches the page through textContent, and `<` in the JSON is written as \u003c so
  // that no `</script>` ends a block early.
  std::string data;
};

TaskBrowserHtml task_browser_html(const Report& report);

}  // namespace kforge
