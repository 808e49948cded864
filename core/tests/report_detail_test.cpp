// What a run learned about each candidate, investigated: the store's candidate records, the
// HTML report's embedded detail data (hostile content stays data), `kforge show` (in the
// library and through the real binary), and the page in headless Chromium, driven over the
// DevTools protocol by report_browser.py: click a task, click a candidate, read its diff.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "kforge_process.hpp"
#include "report/report.hpp"
#include "report/show.hpp"
#include "support/investigation_run.hpp"

namespace {

namespace fs = std::filesystem;
using kforge_test::TempDir;

// The heading of `kforge show`'s timing table: one column per statistic eval.run records.
const char* const kTimingHeader =
    "               mean (ms)    std (ms)    min (ms) median (ms)    p90 (ms)    max (ms)      trials\n";

std::string find_program(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    for (const char* dir : {"/usr/bin/", "/usr/local/bin/", "/bin/"}) {
      if (fs::exists(std::string(dir) + name)) return std::string(dir) + name;
    }
  }
  return "";
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

class Investigation : public ::testing::Test {
 protected:
  void SetUp() override {
    kforge::Store store((dir / kforge::kStoreFileName).string());
    kforge_test::write_investigation_run(store);
  }
  kforge::CandidateRecords records() {
    kforge::Store store((dir / kforge::kStoreFileName).string(), kforge::StoreMode::ReadOnly);
    return store.load_candidates(store.latest_run()->series);
  }
  const kforge::CandidateRecord& candidate(const kforge::CandidateRecords& all, const std::string& task, int sample) {
    for (const auto& c : all.candidates) {
      if (c.task_id == task && c.sample == sample) return c;
    }
    throw std::runtime_error("no candidate " + task);
  }
  TempDir dir;
};

TEST_F(Investigation, StoreGivesEveryVerdictWithItsArtifacts) {
  const auto all = records();
  ASSERT_EQ(all.candidates.size(), 5u);
  const auto& fixed = candidate(all, "019_softmax", 0);
  EXPECT_EQ(fixed.status, "pass");
  EXPECT_EQ(fixed.round, 1);
  EXPECT_EQ(fixed.model, "glm-5.1");
  EXPECT_DOUBLE_EQ(fixed.cost.value_or(0), 0.012);
  ASSERT_EQ(fixed.stages.size(), 8u);
  EXPECT_EQ(fixed.stages[3].error_class, "numerical_mismatch");
  EXPECT_EQ(fixed.stages[3].role, "run");
  EXPECT_EQ(all.artifacts.at(fixed.stages[3].log_hash), "trial 1: max diff 0.03\ntrial 1: mismatch at [0, 17]");
  EXPECT_EQ(fixed.stages[4].stage, "fix");
  EXPECT_EQ(fixed.stages[4].round, 1);  // the fix stage runs in the round it opens
  EXPECT_EQ(all.tasks.at("019_softmax").complexity, "C2");
}

TEST_F(Investigation, RoundsHaveTheirCodeAndTheDiffThatMadeIt) {
  const auto all = records();
  const auto fixed = kforge::candidate_rounds(candidate(all, "019_softmax", 0));
  ASSERT_EQ(fixed.size(), 2u);
  EXPECT_EQ(all.artifacts.at(fixed[0].code_hash), kforge_test::kSoftmaxV0);
  EXPECT_EQ(fixed[0].diff_hash, "");
  EXPECT_EQ(all.artifacts.at(fixed[1].code_hash), kforge_test::kSoftmaxV1);
  EXPECT_EQ(all.artifacts.at(fixed[1].diff_hash), kforge_test::kSoftmaxDiff);
  EXPECT_TRUE(fixed[1].code_changed);

  // The second fix wrote nothing: round 2 keeps round 1's code, and the diff that stayed on
  // the job is not shown again.
  const auto failed = kforge::candidate_rounds(candidate(all, "019_softmax", 1));
  ASSERT_EQ(failed.size(), 3u);
  EXPECT_EQ(all.artifacts.at(failed[1].diff_hash), kforge_test::kBrokenDiff);
  EXPECT_EQ(failed[2].code_hash, failed[1].code_hash);
  EXPECT_FALSE(failed[2].code_changed);
  EXPECT_EQ(failed[2].diff_hash, "");
}

TEST_F(Investigation, MeasurementIsTheLastRunVerdictWithMetrics) {
  const auto all = records();
  const kforge::StageRecord* m = kforge::measurement_verdict(candidate(all, "019_softmax", 0));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->round, 1);
  EXPECT_EQ(m->status, "pass");
  EXPECT_EQ(kforge::measurement_verdict(candidate(all, "666_hostile", 0)), nullptr);
}

// The <script> blocks of a page, and the page without them.
std::pair<std::vector<std::string>, std::string> split_scripts(const std::string& html) {
  std::vector<std::string> blocks;
  std::string rest;
  size_t at = 0;
  for (size_t open = html.find("<script"); open != std::string::npos; open = html.find("<script", at)) {
    rest += html.substr(at, open - at);
    const size_t body = html.find('>', open) + 1;
    const size_t close = html.find("</script>", body);
    blocks.push_back(html.substr(body, close - body));
    at = close + 9;
  }
  return {blocks, rest + html.substr(at)};
}

TEST_F(Investigation, HtmlCarriesCandidatesAsInertData) {
  const kforge::Report report = kforge::load_report(dir.path().string());
  const std::string html = kforge::render_html(report);
  const auto [blocks, markup] = split_scripts(html);
  // Two scripts, the index, the call that starts the task browser, and one block per task:
  // no `</script>` in candidate content closed a block early (it would leave more, shorter
  // blocks and markup behind).
  ASSERT_EQ(blocks.size(), 2u + 1u + 1u + 3u);
  EXPECT_EQ(blocks[3], "kforgeStartTaskBrowser();");
  // Outside the data, the hostile model name is in the tables as escaped text, not a tag.
  EXPECT_EQ(markup.find("<img"), std::string::npos);
  EXPECT_EQ(markup.find("<svg onload"), std::string::npos);
  EXPECT_NE(markup.find("&lt;svg onload=&quot;window.__pwned"), std::string::npos);
  for (size_t i = 2; i < blocks.size(); ++i) EXPECT_EQ(blocks[i].find('<'), std::string::npos) << blocks[i];

  // The data reads back exactly, escapes and all.
  const auto index = nlohmann::json::parse(blocks[2]);
  ASSERT_EQ(index["tasks"].size(), 3u);
  EXPECT_EQ(index["tasks"][1]["id"], "019_softmax");
  EXPECT_EQ(index["tasks"][1]["status"], "solved");
  EXPECT_EQ(index["tasks"][2]["category"], "<b>Evil</b>");
  EXPECT_EQ(index["tasks"][2]["models"][0], kforge_test::kHostileModel);
  EXPECT_TRUE(index["environment"].is_null());
  // The timing table's columns, as kforge show has them, for the page's script.
  EXPECT_EQ(index["timing"]["parties"], nlohmann::json::parse(R"(["reference", "candidate"])"));
  ASSERT_EQ(index["timing"]["columns"].size(), 7u);
  EXPECT_EQ(index["timing"]["columns"][3], nlohmann::json::parse(R"j({"heading": "median (ms)", "suffix": "_ms"})j"));
  EXPECT_EQ(index["timing"]["columns"][6], nlohmann::json::parse(R"({"heading": "trials", "suffix": "_timing_trials"})"));
  const auto softmax = nlohmann::json::parse(blocks[4 + 1]);
  const auto& first = softmax["candidates"][0];
  EXPECT_EQ(softmax["artifacts"][first["rounds"][1]["diff"].get<std::string>()], kforge_test::kSoftmaxDiff);
  EXPECT_EQ(first["stages"][first["measurement"].get<size_t>()]["metrics"]["candidate_ms_p90"], 1.1);
  const auto hostile = nlohmann::json::parse(blocks[4 + 2]);
  const auto& evil = hostile["candidates"][0];
  EXPECT_EQ(hostile["artifacts"][evil["rounds"][0]["code"].get<std::string>()], kforge_test::kHostileCode);
  EXPECT_EQ(evil["message"], kforge_test::kHostileMessage);
}

// A page holds what a browser can open: the index within its budget (a prefix of the
// tasks), and the candidates of each listed task while their blocks stay within theirs.
TEST_F(Investigation, HtmlEmbedsWhatItsLimitsAllowAndSaysWhatItLeftOut) {
  const kforge::Report report = kforge::load_report(dir.path().string());
  const auto [all_blocks, all_markup] = split_scripts(kforge::render_html(report));
  ASSERT_EQ(all_blocks.size(), 7u);
  const auto all_index = nlohmann::json::parse(all_blocks[2]);
  EXPECT_EQ(all_index["total"], 3);
  EXPECT_EQ(all_index["listed"], 3);
  EXPECT_EQ(all_index["detailed"], 3);
  for (const auto& task : all_index["tasks"]) EXPECT_TRUE(task["detail"].get<bool>()) << task;

  // Room for the first task's block only, and for the index of two tasks.
  kforge::HtmlLimits limits;
  limits.detail_bytes = all_blocks[4].size();
  const std::string entries = all_blocks[2].substr(0, all_blocks[2].find("},{\"id\":\"666_hostile\""));
  limits.index_bytes = entries.size() - entries.find("\"tasks\":[") + 20;
  const std::string html = kforge::render_html(report, limits);
  const auto [blocks, markup] = split_scripts(html);
  ASSERT_EQ(blocks.size(), 2u + 1u + 1u + 1u) << "one task's block";
  EXPECT_EQ(blocks[4], all_blocks[4]);
  const auto index = nlohmann::json::parse(blocks[2]);
  EXPECT_EQ(index["total"], 3);
  EXPECT_EQ(index["listed"], 2);
  EXPECT_EQ(index["detailed"], 1);
  EXPECT_EQ(index["directory"], dir.path().string());
  ASSERT_EQ(index["tasks"].size(), 2u);
  EXPECT_TRUE(index["tasks"][0]["detail"].get<bool>());
  EXPECT_FALSE(index["tasks"][1]["detail"].get<bool>());
  EXPECT_NE(markup.find("<h2>Tasks (3)</h2>"), std::string::npos);

  // In the browser: the page says what it left out, and a task without its block says how
  // to see its candidates, without a script error.
  const std::string chromium = find_program({"chromium", "chromium-browser", "google-chrome"});
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs Debian's chromium)";
  TempDir scratch;
  {
    std::ofstream out(scratch / "report.html");
    out << html;
  }
  const std::string command = chromium +
                              " --headless --no-sandbox --disable-gpu --disable-background-networking "
                              "--disable-component-update --disable-sync --no-first-run --user-data-dir=" +
                              (scratch / "profile").string() + " --dump-dom 'file://" + (scratch / "report.html").string() +
                              "#task=019_softmax' > " + (scratch / "dom.html").string() + " 2> /dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0);
  const std::string dom = kforge_test::slurp(scratch / "dom.html");
  const std::string root = dom.substr(dom.find("<html"), dom.find('>', dom.find("<html")) - dom.find("<html"));
  EXPECT_EQ(root.find("data-script-errors"), std::string::npos) << root;
  EXPECT_NE(root.find("data-tasks-ready=\"yes\""), std::string::npos) << root;
  EXPECT_NE(dom.find("The table lists the first 2 of the run's 3 tasks"), std::string::npos) << dom;
  EXPECT_NE(dom.find("id=\"no-detail\""), std::string::npos) << dom;
  EXPECT_NE(dom.find("kforge show '" + dir.path().string() + "' '019_softmax'"), std::string::npos) << dom;
}

TEST_F(Investigation, ShowPrintsCodeDiffsVerdictsLogsAndTimings) {
  const std::string text = kforge::render_show(dir.path().string(), "019_softmax", 0);
  for (const char* expected :
       {"task 019_softmax (category Activation, class C2, format kernelbench-torch)\n",
        "2 candidate(s): sample 0 pass 2.00x, sample 1 fail (fix_failed)\n", "== sample 0: pass, round 1, last stage run\n",
        "model:    glm-5.1, language cpp\n", "cost:     3000 tokens in / 1200 out, $0.0120\n",
        "correctness and timing (stage run, round 1):\n", kTimingHeader,
        "  reference          2.1        0.08         1.8           2         2.2           3         100\n",
        "  candidate         1.05        0.04         0.9           1         1.1         1.5          50\n",
        "  max_abs_diff         1.000e-06\n",
        "-- round 0\n", "     1 | // softmax, round 0\n",
        "  run          run       fail   numerical_mismatch       0.25 s\n      max abs diff 0.03 at out[0][17]\n",
        "      log tail:\n      | trial 1: max diff 0.03\n      | trial 1: mismatch at [0, 17]\n",
        "-- round 1 (fix round)\n  diff:\n    --- a/candidate.cpp\n", "    -  return x;\n    +  return exp(x) / sum;\n",
        "     3 |   return exp(x) / sum;\n"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << "missing: " << expected << "\nin:\n" << text;
  }
  EXPECT_EQ(text.find("== sample 1"), std::string::npos);  // only the sample asked for

  const std::string both = kforge::render_show(dir.path().string(), "019_softmax", std::nullopt);
  EXPECT_NE(both.find("== sample 0"), std::string::npos);
  EXPECT_NE(both.find("== sample 1: fail, round 2, last stage fix: fix_failed\n"), std::string::npos) << both;
  EXPECT_NE(both.find("-- round 2 (fix round)\n  fix"), std::string::npos) << both;
  EXPECT_NE(both.find("  code: unchanged from round 1\n"), std::string::npos) << both;
}

// What the timing table shows where a statistic was not measured: a store from before the
// statistics (medians and p90s only), a candidate measured without timing, one that never
// reached a stage that measures.
TEST_F(Investigation, ShowTimingTableHasADashForWhatWasNotMeasured) {
  const std::string relu = kforge::render_show(dir.path().string(), "001_relu", std::nullopt);
  const std::string medians_only = relu.substr(0, relu.find("== sample 1"));
  const std::string untimed = relu.substr(relu.find("== sample 1"));
  for (const char* expected :
       {kTimingHeader, "  reference            -           -           -           1         1.1           -           -\n",
        "  candidate            -           -           -         0.8        0.88           -           -\n"}) {
    EXPECT_NE(medians_only.find(expected), std::string::npos) << "missing: " << expected << "\nin:\n" << medians_only;
  }
  const std::string not_measured = "  reference            -           -           -           -           -           -           -\n"
                                   "  candidate            -           -           -           -           -           -           -\n";
  EXPECT_NE(untimed.find(std::string(kTimingHeader) + not_measured), std::string::npos) << untimed;
  EXPECT_NE(untimed.find("  max_abs_diff         2.000e-06\n"), std::string::npos) << untimed;

  const std::string hostile = kforge::render_show(dir.path().string(), "666_hostile", std::nullopt);
  EXPECT_NE(hostile.find("correctness and timing: no stage measured this candidate\n" + std::string(kTimingHeader) +
                         not_measured),
            std::string::npos)
      << hostile;
}

// report.json and report.md give each task's best candidate's timing as its verdict
// recorded it: every statistic of both parties, null or '-' for what was not measured.
TEST_F(Investigation, ReportJsonAndMarkdownCarryTheBestCandidatesTiming) {
  const kforge::Report report = kforge::load_report(dir.path().string());
  const auto tasks = nlohmann::json::parse(kforge::render_json(report))["tasks"];
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_EQ(tasks[1]["best_timing"], nlohmann::json::parse(R"({
    "sample": 0,
    "reference": {"mean": 2.1, "std": 0.08, "min": 1.8, "median": 2, "p90": 2.2, "max": 3, "trials": 100},
    "candidate": {"mean": 1.05, "std": 0.04, "min": 0.9, "median": 1, "p90": 1.1, "max": 1.5, "trials": 50}})"))
      << tasks[1];
  EXPECT_TRUE(tasks[1]["best_timing"]["candidate"]["trials"].is_number_integer()) << "a count of calls";
  // 001_relu's best candidate was timed by a store before the statistics: medians and p90s.
  const auto& relu = tasks[0]["best_timing"];
  EXPECT_EQ(relu["sample"], 0);
  for (const char* party : {"reference", "candidate"}) {
    for (const char* missing : {"mean", "std", "min", "max", "trials"}) {
      EXPECT_TRUE(relu[party][missing].is_null()) << party << " " << missing << ": " << relu;
    }
  }
  EXPECT_EQ(relu["reference"]["median"], 1.0);
  EXPECT_DOUBLE_EQ(relu["reference"]["p90"].get<double>(), 1.1);
  EXPECT_EQ(relu["candidate"]["median"], 0.8);
  EXPECT_DOUBLE_EQ(relu["candidate"]["p90"].get<double>(), 0.88);
  EXPECT_TRUE(tasks[2]["best_timing"].is_null()) << "666_hostile has no correct candidate: " << tasks[2];

  const std::string md = kforge::render_markdown(report);
  for (const char* expected :
       {"| Task | Category | Class | Passed | Best sample | Best speedup | Reference median (ms) | Best median (ms) | First failure |\n",
        "| 001_relu | Activation | C1 | 2/2 (100.0%) | 0 | 1.25x | 1 | 0.8 |",
        "| 019_softmax | Activation | C2 | 1/2 (50.0%) | 0 | 2.00x | 2 | 1 |", "| C4 | 0/1 (0.0%) | - | - | - | - | sample 0"}) {
    EXPECT_NE(md.find(expected), std::string::npos) << "missing: " << expected << "\nin:\n" << md;
  }
}

TEST_F(Investigation, ShowKeepsTerminalEscapesOutOfTheTerminal) {
  const std::string text = kforge::render_show(dir.path().string(), "666_hostile", std::nullopt);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find('\x07'), std::string::npos);
  EXPECT_NE(text.find("^[]0;pwned^G^[[31mred"), std::string::npos) << text;
  EXPECT_EQ(kforge::terminal_safe("a\tb\nc\rd\x7f"), "a\tb\nc^Md^?");
}

TEST_F(Investigation, ShowSaysWhatIsThereWhenTheTaskOrSampleIsNot) {
  try {
    kforge::render_show(dir.path().string(), "019_softmx", std::nullopt);
    FAIL() << "no error for an unknown task";
  } catch (const kforge::ShowError& e) {
    EXPECT_NE(std::string(e.what()).find("tasks with close names: 019_softmax"), std::string::npos) << e.what();
  }
  try {
    kforge::render_show(dir.path().string(), "019_softmax", 5);
    FAIL() << "no error for an unknown sample";
  } catch (const kforge::ShowError& e) {
    EXPECT_NE(std::string(e.what()).find("has no sample 5 in the latest run of"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("its samples: 0, 1"), std::string::npos) << e.what();
  }
}

TEST_F(Investigation, ShowCommandReadsTheStoreWithoutChangingIt) {
  const fs::path db = dir / kforge::kStoreFileName;
  const std::string before = kforge_test::slurp(db);
  TempDir scratch;
  const auto ok = kforge_test::run_kforge({"show", dir.path().string(), "019_softmax", "1"}, scratch / "ok");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("== sample 1: fail, round 2"), std::string::npos) << ok.out;
  EXPECT_EQ(ok.out.find("== sample 0"), std::string::npos);
  EXPECT_EQ(kforge_test::slurp(db), before);

  const auto unknown = kforge_test::run_kforge({"show", dir.path().string(), "nope"}, scratch / "a");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no candidate of task 'nope'"), std::string::npos) << unknown.err;
  const auto no_sample = kforge_test::run_kforge({"show", dir.path().string(), "019_softmax", "9"}, scratch / "b");
  EXPECT_EQ(no_sample.exit_code, 2);
  const auto no_store = kforge_test::run_kforge({"show", scratch.path().string(), "019_softmax"}, scratch / "c");
  EXPECT_EQ(no_store.exit_code, 2);
  EXPECT_NE(no_store.err.find("has no kforge.db"), std::string::npos) << no_store.err;
}

TEST_F(Investigation, BrowserClicksFromTheTaskTableToACandidateAndReadsItsDiff) {
  if (find_program({"chromium", "chromium-browser", "google-chrome"}).empty()) {
    GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs Debian's chromium)";
  }
  const std::string python = find_program({"python3"});
  if (python.empty()) GTEST_SKIP() << "no python3 to drive chromium with (report_browser.py)";
  TempDir scratch;
  const auto report = kforge_test::run_kforge({"report", dir.path().string(), "--format", "html"}, scratch / "report");
  ASSERT_EQ(report.exit_code, 0) << report.err;
  // report_browser.py prints one line per check, ok or FAIL, and exits 1 on any failure.
  const std::string command = python + " " + KFORGE_TEST_SOURCE_DIR + "/report_browser.py check " +
                              (dir / "report.html").string() + " > " + (scratch / "browser.txt").string() + " 2>&1";
  const int status = std::system(command.c_str());
  const std::string output = kforge_test::slurp(scratch / "browser.txt");
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output.find("FAIL"), std::string::npos) << output;
  EXPECT_GE(count(output, "ok "), 23u) << output;
}

}  // namespace
