// JUnit XML for CI systems: one test case per task, failing when no candidate passed.
#include <fmt/format.h>

#include "report.hpp"

namespace kforge {
namespace {

// XML 1.0 text: escaped, and without the control characters it cannot carry at all
// (compiler logs are full of ANSI escapes).
std::string xml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\n' && c != '\t' && c != '\r') continue;
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

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
  const std::string suite = xml(m.strategy);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"kforge\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n",
                     m.per_task.size(), failures, errors, seconds);
  out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{:.3f}\">\n",
                     suite, m.per_task.size(), failures, errors, seconds);
  for (const TaskResult& t : m.per_task) {
    const std::string classname = suite + (t.category.empty() ? "" : "." + xml(t.category));
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"", classname, xml(t.task_id), t.seconds);
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
    out += fmt::format(">\n      <{} type=\"{}\" message=\"{}\">{}</{}>\n    </testcase>\n", element, xml(type),
                       xml(message), xml(body), element);
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace kforge
