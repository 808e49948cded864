// The investigable HTML report at scale: writes TASKS x K candidates into a fresh run store
// through the Store API as a run records them (generated code of ~3 KB each, 40% through a
// fix round with its diff, compile logs, timed run verdicts; four models, fifteen
// categories), then times building the report from the store. Open the report.html it
// leaves in DIR with core/tests/report_browser.py measure to time it in the browser.
// docs/performance.md records the output.
//
//   bench_report_scale [TASKS [K [DIR]]]    defaults: 10000 1, a temporary directory
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <cstdlib>
#include <filesystem>

#include "report/report.hpp"
#include "support/candidate_store.hpp"

namespace {

namespace fs = std::filesystem;
using kforge_test::StepSpec;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
// CPU seconds of this process: on a busy machine the wall clock mostly measures the wait for a core.
double cpu() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

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

}  // namespace

int main(int argc, char** argv) {
  const int tasks = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int k = argc > 2 ? std::atoi(argv[2]) : 1;
  const bool temporary = argc <= 3;
  const fs::path dir = temporary ? fs::temp_directory_path() / fmt::format("kforge-report-scale-{}", getpid()) : fs::path(argv[3]);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const char* models[] = {"deepseek-chat", "deepseek-reasoner", "glm-5.1", "qwen2.5-coder-7b"};
  const char* classes[] = {"C1", "C2", "C3", "C4"};

  std::vector<kforge_test::TaskSpec> task_specs;
  std::vector<kforge_test::CandidateSpec> candidates;
  for (int t = 0; t < tasks; ++t) {
    task_specs.push_back({fmt::format("{:05}_task", t), fmt::format("Category{}", t % 15), classes[t % 4]});
    for (int s = 0; s < k; ++s) {
      const int job = t * k + s;
      kforge_test::CandidateSpec c{task_specs.back().id, s, models[job % 4], "cpp", 2000, 800, 0.004, generated(code_for(job, 0))};
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
      candidates.push_back(std::move(c));
    }
  }

  double write_seconds = 0;
  {
    kforge::Store store((dir / kforge::kStoreFileName).string());
    const double start = now();
    kforge_test::write_run(store, task_specs, candidates, "report-scale", k);
    write_seconds = now() - start;
  }
  const double load_start = now();
  const double load_cpu_start = cpu();
  const kforge::Report report = kforge::load_report(dir.string());
  const double load_seconds = now() - load_start;
  const double load_cpu = cpu() - load_cpu_start;
  const double html_start = now();
  const double html_cpu_start = cpu();
  kforge::write_report_files(report, dir.string(), {kforge::ReportFormat::Html});
  const double html_seconds = now() - html_start;
  const double html_cpu = cpu() - html_cpu_start;

  fmt::print("report_scale: {} tasks x k={} = {} candidates, {} with a fix round\n", tasks, k, candidates.size(),
             (candidates.size() * 2 + 4) / 5);
  fmt::print("store written in {:.1f} s, kforge.db {:.1f} MiB\n", write_seconds,
             static_cast<double>(fs::file_size(dir / kforge::kStoreFileName)) / (1 << 20));
  fmt::print("load_report (metrics and every verdict with its artifacts): {:.2f} s wall, {:.2f} s CPU\n", load_seconds,
             load_cpu);
  fmt::print("render and write report.html: {:.2f} s wall, {:.2f} s CPU, {:.1f} MiB\n", html_seconds, html_cpu,
             static_cast<double>(fs::file_size(dir / "report.html")) / (1 << 20));
  fmt::print("report: {}\n", (dir / "report.html").string());
  return 0;
}
