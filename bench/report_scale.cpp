// The investigable HTML report at scale: writes TASKS x K candidates into a fresh run store
// through the Store API as a run records them (generated code of ~3 KB each, 40% through a
// fix round with its diff, compile logs, timed run verdicts; four models, fifteen
// categories), one candidate at a time, then runs the kforge binary on it, each command
// its own process: report.html, the other report files, `kforge show` of one task; and
// prints each one's wall and CPU time and peak resident memory. Open the report.html it
// leaves in DIR with core/tests/report_browser.py measure to time it in the browser.
// docs/performance.md records the output.
//
//   bench_report_scale [TASKS [K [DIR]]] [--kforge PATH] [--reuse]
//
// Defaults: 10000 tasks x k=1 into a temporary directory, this build's kforge; --kforge and
// --reuse as bench_store_scale's.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <filesystem>

#include "rss.hpp"
#include "store/store.hpp"
#include "support/candidate_store.hpp"

namespace {

namespace fs = std::filesystem;
using kforge_test::StepSpec;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double file_mib(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0.0 : static_cast<double>(size) / (1 << 20);
}

// About 3 KB of C++ that differs from job to job, as LLM candidates do.
std::string code_for(int job, int round) {
  std::string code = fmt::format("// candidate {} round {}\n#include <torch/extension.h>\n\n", job, round);
  for (int i = 0; i < 40; ++i) {
    code += fmt::format("  float v{} = x[{}] * {}.0f + bias[{}];  // step {} of kernel {}\n", i, i + job % 7, round + 1,
                        i % 5, i, job);
  }
  return code;
}

std::string diff_for(int job) {
  std::string diff = fmt::format("--- a/candidate.cpp\n+++ b/candidate.cpp\n@@ -1,12 +1,12 @@\n-// candidate {} round 0\n+// candidate {} round 1\n", job, job);
  for (int i = 0; i < 10; ++i) diff += fmt::format("-  float v{} = x[{}] * 1.0f;\n+  float v{} = x[{}] * 2.0f;\n", i, i, i, i);
  return diff;
}

std::vector<StepSpec> generated(const std::string& code) {
  return {{"generate", KF_ROLE_GENERATE, kforge::VerdictStatus::Pass, "", "", "", {}, code},
          {"check", KF_ROLE_CHECK}};
}

StepSpec timed_run(int job) {
  const double reference = 1.0 + (job % 13) * 0.1;
  const double candidate = 0.5 + (job % 17) * 0.1;
  return {"run", KF_ROLE_RUN, kforge::VerdictStatus::Pass, "", "", "",
          {{"max_abs_diff", 1e-6}, {"mean_abs_diff", 1e-7}, {"trials", 5}, {"reference_ms", reference},
           {"reference_ms_p90", reference * 1.1}, {"candidate_ms", candidate}, {"candidate_ms_p90", candidate * 1.1},
           {"speedup", reference / candidate}}};
}

// Writes the candidates into a fresh store at `dir`, one at a time.
void write_store(const fs::path& dir, int tasks, int k) {
  const char* models[] = {"deepseek-chat", "deepseek-reasoner", "glm-5.1", "qwen2.5-coder-7b"};
  const char* classes[] = {"C1", "C2", "C3", "C4"};
  kforge::Store store((dir / kforge::kStoreFileName).string());
  const double start = now();
  const int64_t run = kforge_test::begin_test_run(store, "report-scale");
  for (int t = 0; t < tasks; ++t) {
    const auto task = kforge_test::make_task({fmt::format("{:05}_task", t), fmt::format("Category{}", t % 15), classes[t % 4]},
                                             static_cast<size_t>(t));
    for (int s = 0; s < k; ++s) {
      const int job = t * k + s;
      kforge_test::CandidateSpec c{task->id(), s, models[job % 4], "cpp", 2000, 800, 0.004, generated(code_for(job, 0))};
      if (job % 5 < 2) {  // 40%: a compile error, a fix round with its diff
        c.steps.push_back({"compile", KF_ROLE_COMPILE, kforge::VerdictStatus::Fail, "compile_error",
                           fmt::format("candidate.cpp:{}: expected ';'", job % 40),
                           std::string(900, 'e') + fmt::format("\nerror in job {}\n", job), {}, std::nullopt,
                           std::nullopt, true});
        c.steps.push_back({"fix", KF_ROLE_FIX, kforge::VerdictStatus::Pass, "", "", "", {}, code_for(job, 1), diff_for(job)});
        c.steps.push_back({"check", KF_ROLE_CHECK});
      }
      c.steps.push_back({"compile", KF_ROLE_COMPILE});
      if (job % 10 == 9) {
        c.steps.push_back({"run", KF_ROLE_RUN, kforge::VerdictStatus::Fail, "numerical_mismatch", "max abs diff 0.5",
                           "trial 1: max diff 0.5\n", {{"max_abs_diff", 0.5}, {"trials", 1}}});
      } else {
        c.steps.push_back(timed_run(job));
      }
      kforge_test::record_candidate(store, run, task, c, k);
    }
  }
  store.end_run(run, kforge::RunStatus::Finished);
  const uint64_t candidates = static_cast<uint64_t>(tasks) * static_cast<uint64_t>(k);
  fmt::print("report_scale: {} tasks x k={} = {} candidates, {} with a fix round\n", tasks, k, candidates,
             (candidates * 2 + 4) / 5);
  fmt::print("store written in {:.1f} s, kforge.db {:.1f} MiB\n", now() - start, file_mib(dir / kforge::kStoreFileName));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  std::string kforge = KFORGE_BENCH_KFORGE;
  bool reuse = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--kforge" && i + 1 < argc) {
      kforge = argv[++i];
    } else if (arg == "--reuse") {
      reuse = true;
    } else {
      positional.push_back(arg);
    }
  }
  const int tasks = positional.size() > 0 ? std::atoi(positional[0].c_str()) : 10000;
  const int k = positional.size() > 1 ? std::atoi(positional[1].c_str()) : 1;
  const bool temporary = positional.size() <= 2;
  const fs::path dir = temporary ? fs::temp_directory_path() / fmt::format("kforge-report-scale-{}", getpid())
                                 : fs::path(positional[2]);
  if (reuse && !fs::exists(dir / kforge::kStoreFileName)) {
    fmt::print(stderr, "--reuse: {} holds no store; run without --reuse first\n", dir.string());
    return 2;
  }
  if (!reuse) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    write_store(dir, tasks, k);
  }

  const std::string out = dir.string();
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"report --format html", {kforge, "report", out, "--format", "html"}},
      {"report --format md,json,junit", {kforge, "report", out, "--format", "md,json,junit"}},
      {"show " + fmt::format("{:05}_task", tasks / 2), {kforge, "show", out, fmt::format("{:05}_task", tasks / 2)}},
  };
  fmt::print("commands ({}), each its own process:\n", kforge);
  fmt::print("  {:<32} {:>5} {:>9} {:>9} {:>10}\n", "command", "exit", "wall s", "CPU s", "peak MiB");
  int status = 0;
  for (size_t i = 0; i < commands.size(); ++i) {
    const std::string log = (dir / fmt::format("command-{}.log", i)).string();
    const kforge::bench::ChildUsage used = kforge::bench::run_child(commands[i].second, log);
    fmt::print("  {:<32} {:>5} {:>9.2f} {:>9.2f} {:>10.1f}\n", commands[i].first, used.exit_code, used.seconds,
               used.cpu_seconds, static_cast<double>(used.peak_kib) / 1024);
    if (used.exit_code != 0) {
      fmt::print("    failed: see {}\n", log);
      status = 1;
    }
    std::fflush(stdout);  // each row as it comes: the largest runs take minutes per command
  }
  fmt::print("report.html {:.1f} MiB, report.json {:.1f} MiB, report.md {:.1f} MiB\n", file_mib(dir / "report.html"),
             file_mib(dir / "report.json"), file_mib(dir / "report.md"));
  fmt::print("report: {}\n", (dir / "report.html").string());
  if (temporary) fs::remove_all(dir);
  return status;
}
