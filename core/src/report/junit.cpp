// JUnit XML for CI systems: one test case per task, failing when no candidate passed.
#include <fmt/format.h>

#include "report/report.hpp"

namespace kforge {

std::string render_junit(const Report& report) {
  const Metrics& m = report.metrics;
  uint64_t failures = 0;
  uint64_t errors = 0;
  double seconds = 0;
  for (const TaskResult& t : m.per_task) {
    seconds += t.seconds;
    if (t.solved) continue;
    if (t.only_errors) {
      ++errors;
    } else {
      ++failures;
    }
  }
  const std::string suite = markup_escape(m.label);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"kforge\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n",
                     m.per_task.size(), failures, errors, seconds);
  out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{:.3f}\">\n",
                     suite, m.per_task.size(), failures, errors, seconds);
  for (const TaskResult& t : m.per_task) {
    const std::string classname = suite + (t.category.empty() ? "" : "." + markup_escape(t.category));
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"", classname, markup_escape(t.task_id), t.seconds);
    if (t.solved) {
      out += fmt::format(">\n      <system-out>{} of {} candidates passed; best sample {}, speedup {}</system-out>\n    </testcase>\n",
                         t.candidates.count, t.candidates.total, t.best_sample ? std::to_string(*t.best_sample) : "-",
                         format_speedup(t.best_speedup));
      continue;
    }
    const char* element = t.only_errors ? "error" : "failure";
    const std::string type = t.failures.empty() ? "failed" : t.failures.front().error_class;
    const std::string message = t.failures.empty() ? "no candidate passed" : t.failures.front().describe();
    std::string body;
    for (const auto& f : t.failures) body += f.describe() + "\n";
    out += fmt::format(">\n      <{} type=\"{}\" message=\"{}\">{}</{}>\n    </testcase>\n", element, markup_escape(type),
                       markup_escape(message), markup_escape(body), element);
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace kforge
