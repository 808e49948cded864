// Reports in every format, the HTML page in headless Chromium, CI thresholds and exit
// codes, progress display, and the report/compare commands of the real binary.
#include "report/report.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "kforge_process.hpp"
#include "run/progress.hpp"

namespace {

namespace fs = std::filesystem;
using kforge::VerdictStatus;
using kforge_test::TempDir;

bool error_class_is_compile(const std::string& error_class) { return error_class == "compile_error"; }

kforge::JobOutcome job(std::string task, int sample, std::string model, VerdictStatus status, int round,
                       std::optional<double> speedup, std::string error_class = "", std::string message = "") {
  kforge::JobOutcome j;
  j.task_id = std::move(task);
  j.sample = sample;
  j.model = std::move(model);
  j.status = status;
  j.round = round;
  j.speedup = speedup;
  j.error_class = std::move(error_class);
  j.message = std::move(message);
  j.cost = 0.01;
  kforge::Verdict compile;
  compile.role = KF_ROLE_COMPILE;
  compile.status = error_class_is_compile(j.error_class) ? VerdictStatus::Fail : VerdictStatus::Pass;
  compile.round = round;
  compile.seconds = 0.5;
  kforge::add_visit(j, compile);
  return j;
}

// Three tasks over two models and two classes; a failure message with markup and control
// characters that every format must carry safely.
kforge::Report sample_report(std::string label = "smart") {
  kforge::Dataset d;
  d.label = std::move(label);
  d.tasks["relu"] = {"relu", "relu", "Activation", "C1", "kernelbench-torch", 1};
  d.tasks["softmax"] = {"softmax", "softmax", "Normalization", "C2", "kernelbench-torch", 1};
  d.tasks["conv"] = {"conv", "conv", "Convolution", "C4", "kernelbench-torch", 2};
  d.jobs = {job("relu", 0, "glm-5.1", VerdictStatus::Pass, 0, 1.8),
            job("relu", 1, "deepseek-chat", VerdictStatus::Pass, 1, 0.7),
            job("softmax", 0, "glm-5.1", VerdictStatus::Fail, 2, std::nullopt, "numerical_mismatch",
                "max diff 3e-2 <at> out[0] \x1b[31m&\"quoted\""),
            job("softmax", 1, "deepseek-chat", VerdictStatus::Fail, 0, std::nullopt, "compile_error", "a.py:3: bad"),
            job("conv", 0, "deepseek-chat", VerdictStatus::Error, 0, std::nullopt, "harness_error", "worker died"),
            job("conv", 1, "deepseek-chat", VerdictStatus::Error, 0, std::nullopt, "timeout", "")};
  kforge::Report r = kforge::report_of(d);
  r.directory = "out";
  kforge::RunRecord run;
  run.id = 1;
  run.pipeline = "kb";
  run.pipeline_file = "/p/kb.yaml";
  run.started_at = "2026-01-01T00:00:00Z";
  run.ended_at = "2026-01-01T00:10:00Z";
  run.status = "finished";
  run.kforge_version = "0.1.0";
  run.host = "ci";
  r.runs = {run};
  return r;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

TEST(ReportFormats, Parse) {
  EXPECT_EQ(kforge::parse_report_format("md"), kforge::ReportFormat::Markdown);
  EXPECT_EQ(kforge::parse_report_format("junit"), kforge::ReportFormat::Junit);
  EXPECT_FALSE(kforge::parse_report_format("pdf"));
}

TEST(ReportText, SeedTablesWithTheirNumbers) {
  const auto report = sample_report();
  const std::string text = kforge::render_text(kforge::report_tables(report.metrics));
  for (const char* title : {"Summary", "Models", "Pass rate by complexity", "Complexity classes", "Categories",
                            "Error classes", "Fix rounds", "fast_p", "pass@k", "Model selection"}) {
    EXPECT_NE(text.find(std::string(title) + "\n"), std::string::npos) << title;
  }
  EXPECT_NE(text.find("1/3 (33.3%)"), std::string::npos) << text;  // pass rate: relu only
  // Models, best first: glm-5.1 solved relu of {relu, softmax}; deepseek-chat relu of 3.
  const std::regex glm(R"(glm-5\.1 +1/2 \(50\.0%\) +1 +2 +0 +1/2 \(50\.0%\))");
  EXPECT_TRUE(std::regex_search(text, glm)) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\nCost per pass +\$0\.0600\n)"))) << text;
}

TEST(ReportMarkdown, TablesAndEscapedCells) {
  const std::string md = kforge::render_markdown(sample_report());
  EXPECT_EQ(md.rfind("# kforge report: smart\n", 0), 0u);
  EXPECT_NE(md.find("## Pass rate by complexity"), std::string::npos);
  EXPECT_NE(md.find("| Model | C1 | C2 | C4 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| relu | Activation | C1 | 2/2 (100.0%) | 0 | 1.80x |"), std::string::npos) << md;
}

TEST(ReportJson, CarriesTheMetrics) {
  const auto report = sample_report();
  const auto j = nlohmann::json::parse(kforge::render_json(report));
  EXPECT_EQ(j["strategy"], "smart");
  EXPECT_EQ(j["summary"]["solved"]["count"], 1);
  EXPECT_EQ(j["summary"]["solved"]["total"], 3);
  EXPECT_EQ(j["models"].size(), 2u);
  EXPECT_EQ(j["fast_p"].size(), 6u);
  EXPECT_EQ(j["fast_p"][3]["p"], 1.0);
  EXPECT_EQ(j["fast_p"][3]["tasks"]["count"], 1);  // relu, 1.8x
  EXPECT_EQ(j["tasks"][1]["failures"][0]["error_class"], "numerical_mismatch");
  EXPECT_EQ(j["runs"][0]["host"], "ci");
  EXPECT_DOUBLE_EQ(j["summary"]["geomean_speedup"].get<double>(), 1.8);
}

// report.json is written a task at a time; its text is still the one dump of the whole
// document gives, with tasks and without.
TEST(ReportJson, WrittenTaskByTaskAsTheWholeDocumentsDump) {
  for (const kforge::Report& report : {sample_report(), kforge::report_of(kforge::Dataset{})}) {
    const std::string text = kforge::render_json(report);
    const auto whole = nlohmann::ordered_json::parse(text);
    EXPECT_EQ(whole.dump(2) + "\n", text);
    EXPECT_EQ(whole["tasks"].size(), report.metrics.tasks);
  }
}

TEST(ReportJunit, OneTestCasePerTaskWithFailuresAndErrors) {
  const std::string xml = kforge::render_junit(sample_report());
  EXPECT_EQ(count(xml, "<testcase "), 3u);
  EXPECT_NE(xml.find("<testsuite name=\"smart\" tests=\"3\" failures=\"1\" errors=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("classname=\"smart.Normalization\" name=\"softmax\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure type=\"numerical_mismatch\" message=\"sample 0 round 2: numerical_mismatch: max diff 3e-2 "
                     "&lt;at&gt; out[0] [31m&amp;&quot;quoted&quot;\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<error type=\"harness_error\""), std::string::npos);  // conv: every candidate erred
  EXPECT_EQ(xml.find('\x1b'), std::string::npos);  // not representable in XML 1.0
}

TEST(ReportHtml, SelfContainedWithCharts) {
  const std::string html = kforge::render_html(sample_report());
  EXPECT_GE(count(html, "<svg "), 6u);
  for (const char* chart : {"pass-by-complexity", "error-shares", "speedup-distribution", "rounds", "fast-p"}) {
    EXPECT_NE(html.find(std::string("data-chart=\"") + chart + "\""), std::string::npos) << chart;
  }
  // Nothing fetched from anywhere: no external scripts, styles, fonts or images.
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(count(html, "http://"), count(html, "http://www.w3.org/2000/svg"));  // only SVG's namespace
  EXPECT_NE(html.find("\\u003cat>"), std::string::npos);  // messages are JSON data, '<' escaped
  EXPECT_EQ(html.find("<at>"), std::string::npos);
}

TEST(ReportHtml, EmptyRunStillRenders) {
  kforge::Report empty;
  empty.metrics = kforge::compute_metrics({});
  const std::string html = kforge::render_html(empty);
  EXPECT_GE(count(html, "<svg "), 5u);
  EXPECT_NE(html.find("no data"), std::string::npos);
}

// The root element's opening tag, where the page's script leaves its marks.
std::string html_tag(const std::string& dom) {
  const auto start = dom.find("<html");
  return start == std::string::npos ? "" : dom.substr(start, dom.find('>', start) - start + 1);
}

std::string find_chromium() {
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (fs::exists(candidate)) return candidate;
  }
  return "";
}

TEST(ReportHtml, RendersInHeadlessChromiumWithoutScriptErrors) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs it)";
  TempDir dir;
  const fs::path page = dir / "report.html";
  {
    std::ofstream out(page);
    out << kforge::render_html(sample_report());
  }
  const std::string command = chromium +
                              " --headless --no-sandbox --disable-gpu --disable-background-networking "
                              "--disable-component-update --disable-sync --no-first-run --user-data-dir=" +
                              (dir / "profile").string() + " --dump-dom file://" + page.string() + " > " +
                              (dir / "dom.html").string() + " 2> " + (dir / "chromium.log").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << kforge_test::slurp(dir / "chromium.log");
  const std::string dom = kforge_test::slurp(dir / "dom.html");
  // The page's script ran to its end and saw no error (window.onerror and console.error
  // write into the root element's data-script-errors).
  const std::string root = html_tag(dom);
  EXPECT_NE(root.find("data-ready=\"yes\""), std::string::npos) << root;
  EXPECT_EQ(root.find("data-script-errors"), std::string::npos) << root;
  EXPECT_GE(count(dom, "<svg "), 6u);
  EXPECT_GE(count(dom, "<rect "), 10u);  // bars were drawn
  EXPECT_NE(dom.find("<polyline "), std::string::npos);
}

TEST(ReportHtml, ChromiumCheckCatchesAScriptError) {
  // The check above must be able to fail: a page with a broken script is caught.
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed";
  TempDir dir;
  std::string html = kforge::render_html(sample_report());
  html.insert(html.find("</body>"), "<script>undefinedFunction();</script>");
  {
    std::ofstream out(dir / "broken.html");
    out << html;
  }
  const std::string command = chromium +
                              " --headless --no-sandbox --disable-gpu --disable-background-networking "
                              "--disable-component-update --disable-sync --no-first-run --user-data-dir=" +
                              (dir / "profile").string() + " --dump-dom file://" + (dir / "broken.html").string() +
                              " > " + (dir / "dom.html").string() + " 2> /dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0);
  const std::string root = html_tag(kforge_test::slurp(dir / "dom.html"));
  EXPECT_NE(root.find("data-script-errors=\"Uncaught ReferenceError: undefinedFunction is not defined\""), std::string::npos)
      << root;
}

TEST(Compare, StrategiesSideBySide) {
  auto a = sample_report("deepseek-chat").metrics;
  auto b = sample_report("qwen-7b").metrics;
  const auto table = kforge::comparison_table({a, b});
  EXPECT_EQ(table.columns, (std::vector<std::string>{"Strategy", "Pass rate", "Evaluation time", "Generation time",
                                                     "Total cost", "Cost per pass", "fast_1", "C1", "C2", "C4"}));
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[1], (std::vector<std::string>{"qwen-7b", "1/3 (33.3%)", "3.0 s", "0.0 s", "$0.0600", "$0.0600",
                                                     "1/3 (33.3%)", "1/1 (100.0%)", "0/1 (0.0%)", "0/1 (0.0%)"}));
}

TEST(Thresholds, ParseAndCheck) {
  EXPECT_EQ(kforge::parse_fast_p_threshold("1.0:0.2"), (std::pair<double, double>{1.0, 0.2}));
  EXPECT_THROW(kforge::parse_fast_p_threshold("1.0"), std::invalid_argument);
  EXPECT_THROW(kforge::parse_fast_p_threshold("x:0.2"), std::invalid_argument);
  EXPECT_THROW(kforge::parse_fast_p_threshold("1:2"), std::invalid_argument);
  const auto report = sample_report();  // pass rate 1/3, fast_1 1/3, fast_2 0/3
  kforge::Thresholds t;
  t.min_pass_rate = 0.3;
  t.min_fast_p = {{1.0, 0.3}};
  EXPECT_TRUE(kforge::missed_thresholds(report, t).empty());
  t.min_pass_rate = 0.5;
  t.min_fast_p = {{1.0, 0.3}, {2.0, 0.1}};
  const auto missed = kforge::missed_thresholds(report, t);
  ASSERT_EQ(missed.size(), 2u);
  EXPECT_EQ(missed[0], "pass rate 1/3 (33.3%) is below --min-pass-rate 0.5");
  EXPECT_EQ(missed[1], "fast_2 0/3 (0.0%) is below --min-fast-p 2:0.1");
  // Any p, not only the fast_p table's: relu's 1.8x is above 1.75, not above 1.85.
  t.min_pass_rate.reset();
  t.min_fast_p = {{1.75, 0.3}, {1.85, 0.3}};
  EXPECT_EQ(kforge::missed_thresholds(report, t),
            std::vector<std::string>{"fast_1.85 0/3 (0.0%) is below --min-fast-p 1.85:0.3"});
}

// ---- progress

TEST(Progress, BarAndLineText) {
  kforge::ProgressCounts c;
  c.expected = 1000;
  c.already_done = 100;
  c.done = 300;
  c.passed = 150;
  c.failed = 140;
  c.errors = 10;
  c.elapsed = 30;  // 10 jobs/s; 600 left
  EXPECT_EQ(*c.eta(), 60.0);
  EXPECT_EQ(kforge::progress_bar(c, 10), "[####------] 400/1000  pass 50.0%  fail 140  err 10  10.0/s  ETA 1:00");
  EXPECT_EQ(kforge::progress_line(c),
            "progress: 400/1000 jobs (40.0%), 150 passed (50.0%), 140 failed, 10 errors, 10.0 jobs/s, elapsed 0:30, "
            "ETA 1:00");
  c.expected = 0;  // the source could not tell
  EXPECT_FALSE(c.eta());
  EXPECT_EQ(kforge::progress_line(c).rfind("progress: 400 jobs, 150 passed", 0), 0u);
  EXPECT_EQ(kforge::format_clock(3723), "1:02:03");
}

std::string run_progress(kforge::ProgressMode mode, double interval, std::chrono::milliseconds running) {
  std::FILE* out = std::tmpfile();
  {
    kforge::ProgressObserver progress(mode, out, interval);
    progress.run_started(4);
    kforge::Job job;
    job.verdicts.resize(1);
    progress.job_finished(job, kforge::JobOutcome{});
    std::this_thread::sleep_for(running);
    progress.finish();
  }
  std::rewind(out);
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, out)) > 0;) text.append(buffer, n);
  std::fclose(out);
  return text;
}

TEST(Progress, LinesModePrintsPlainLinesPeriodically) {
  const std::string text = run_progress(kforge::ProgressMode::Lines, 0.05, std::chrono::milliseconds(300));
  EXPECT_GE(count(text, "progress: 1/4 jobs (25.0%), 1 passed"), 3u) << text;  // ticks plus the last line
  EXPECT_EQ(text.find('\r'), std::string::npos);  // no bar in logs
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
}

TEST(Progress, BarModeRedrawsOneLine) {
  const std::string text = run_progress(kforge::ProgressMode::Bar, 10, std::chrono::milliseconds(600));
  EXPECT_GE(count(text, "\r\x1b[K["), 2u) << text;
  EXPECT_EQ(count(text, "\n"), 1u);  // only the last draw ends the line
  EXPECT_EQ(text.back(), '\n');
}

TEST(Progress, OffPrintsNothing) { EXPECT_EQ(run_progress(kforge::ProgressMode::Off, 0.01, std::chrono::milliseconds(50)), ""); }

// ---- the binary: run's report and exit codes, report and compare

class ReportCli : public ::testing::Test {
 protected:
  kforge_test::ProcessResult call(std::vector<std::string> args) {
    return kforge_test::run_kforge(args, dir / ("call" + std::to_string(++calls)));
  }
  // 6 tasks x 2, quick: task-0003 fails, so the pass rate is 5/6.
  std::vector<std::string> run_args(const std::string& out) {
    return {"run", std::string(KFORGE_TEST_DATA_DIR) + "/store/resume.yaml", "--out", (dir / out).string(), "--set",
            "tasks=6", "--set", "sleep=0", "--progress", "off"};
  }
  TempDir dir;
  int calls = 0;
};

TEST_F(ReportCli, RunWritesEveryReportAndMeetsItsThresholds) {
  auto args = run_args("a");
  args.insert(args.end(), {"--min-pass-rate", "0.8", "--min-fast-p", "0:0.5"});
  const auto r = call(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* file : {"kforge.db", "results.jsonl", "report.md", "report.json", "report.html", "junit.xml"}) {
    EXPECT_TRUE(fs::exists(dir / "a" / file)) << file;
  }
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\nPass rate +5/6 \(83\.3%\)\n)"))) << r.out;
  EXPECT_EQ(count(kforge_test::slurp(dir / "a" / "junit.xml"), "<testcase "), 6u);
}

TEST_F(ReportCli, MissedThresholdsExitOne) {
  auto args = run_args("b");
  args.insert(args.end(), {"--min-pass-rate", "0.9"});
  const auto r = call(args);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("threshold missed: pass rate 5/6 (83.3%) is below --min-pass-rate 0.9"), std::string::npos) << r.err;
  const auto fast = call({"report", (dir / "b").string(), "--format", "json", "--min-fast-p", "1.0:0.2"});
  EXPECT_EQ(fast.exit_code, 1) << fast.err;  // the demo stages time nothing: fast_1 is 0
}

TEST_F(ReportCli, UsageErrorsExitTwo) {
  auto args = run_args("c");
  args.insert(args.end(), {"--min-fast-p", "1.0"});
  EXPECT_EQ(call(args).exit_code, 2);
  EXPECT_EQ(call({"report", dir.path().string()}).exit_code, 2);  // no kforge.db there
  EXPECT_EQ(call({"report", dir.path().string(), "--format", "pdf"}).exit_code, 2);
  EXPECT_EQ(call({"run", "no-such-pipeline.yaml"}).exit_code, 2);
}

TEST_F(ReportCli, ReportAndCompareCommands) {
  ASSERT_EQ(call(run_args("first")).exit_code, 0);
  auto second_args = run_args("second");
  second_args.insert(second_args.end(), {"--set", "tasks=4"});
  ASSERT_EQ(call(second_args).exit_code, 0);
  fs::remove(dir / "first" / "report.html");
  const auto report = call({"report", (dir / "first").string(), "--format", "text,html"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("Summary\n"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "first" / "report.html"));
  const auto compare = call({"compare", (dir / "first").string(), (dir / "second").string(), "--format", "md"});
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_NE(compare.out.find("| Strategy | Pass rate | Evaluation time | Generation time | Total cost | Cost per pass |"),
            std::string::npos)
      << compare.out;
  EXPECT_NE(compare.out.find("| resume-test | 5/6 (83.3%) |"), std::string::npos) << compare.out;
  EXPECT_NE(compare.out.find("| resume-test | 3/4 (75.0%) |"), std::string::npos) << compare.out;
}

}  // namespace
