// JUnit XML for CI systems: one test case per task, failing when no candidate passed.
#include <fmt/format.h>

#include <ostream>

#include "report/report.hpp"

namespace kforge {
namespace {

class JunitWriter : public FormatWriter {
 public:
  JunitWriter(const Report& report, std::ostream& out)
      : metrics_(report.metrics), out_(out), suite_(markup_escape(report.metrics.label)) {}

  void begin() override {
    const Metrics& m = metrics_;
    const uint64_t errors = m.error_tasks;
    const uint64_t failures = m.tasks - m.solved.count - errors;
    std::string text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    text += fmt::format("<testsuites name=\"kforge\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n",
                        m.tasks, failures, errors, m.seconds);
    text += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" time=\"{:.3f}\">\n", suite_,
        m.tasks, failures, errors, m.seconds);
    out_ << text;
  }

  void task(const ReportTask& task) override {
    const TaskResult& t = task.result;
    const std::string classname = suite_ + (t.category.empty() ? "" : "." + markup_escape(t.category));
    std::string text =
        fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"", classname, markup_escape(t.task_id), t.seconds);
    if (t.solved) {
      text += fmt::format(">\n      <system-out>{} of {} candidates passed; best sample {}, speedup {}</system-out>\n    </testcase>\n",
                          t.candidates.count, t.candidates.total, t.best_sample ? std::to_string(*t.best_sample) : "-",
                          format_speedup(t.best_speedup));
    } else {
      const char* element = t.only_errors ? "error" : "failure";
      const std::string type = t.failures.empty() ? "failed" : t.failures.front().error_class;
      const std::string message = t.failures.empty() ? "no candidate passed" : t.failures.front().describe();
      std::string body;
      for (const auto& f : t.failures) body += f.describe() + "\n";
      text += fmt::format(">\n      <{} type=\"{}\" message=\"{}\">{}</{}>\n    </testcase>\n", element, markup_escape(type),
                          markup_escape(message), markup_escape(body), element);
    }
    out_ << text;
  }

  void end() override { out_ << "  </testsuite>\n</testsuites>\n"; }

 private:
  const Metrics& metrics_;
  std::ostream& out_;
  const std::string suite_;
};

}  // namespace

std::unique_ptr<FormatWriter> junit_writer(const Report& report, std::ostream& out) {
  return std::make_unique<JunitWriter>(report, out);
}

}  // namespace kforge
