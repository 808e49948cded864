// The kforge_kernelbench plugin: tasks and candidates in KernelBench's formats, as they
// are. The task sources kernelbench.suite (a directory of task files with a manifest:
// KernelBench-, numpy-, MindSpore- and KernelBenchX-format) and kernelbench.tasks (the
// problems of a KernelBench checkout); the stages kernelbench.candidate_files (candidates
// from a directory of files) and kernelbench.candidates (from a KernelBench run folder).
// eval.run (plugin eval) judges them; the exporter kernelbench (`kforge export --format
// kernelbench`) writes the results back in KernelBench's shape (docs/kernelbench.md); the
// report section kernelbench.categories adds KernelBenchX's rates by category to the
// reports of runs with its tasks (docs/kernelbenchx.md). The job keys and words it shares
// with eval are kforge/eval/vocabulary.hpp's.
#include "candidates.hpp"
#include "categories.hpp"
#include "export.hpp"
#include "run_folder.hpp"
#include "tasks.hpp"

#include <kforge/bounded_file.hpp>
#include <kforge/eval/vocabulary.hpp>
#include <kforge/sdk.hpp>

#include <filesystem>
#include <iterator>
#include <optional>

namespace {

using kforge::sdk::Job;
using kforge::sdk::Param;
namespace kb = kforge::kernelbench;
namespace vocabulary = kforge::eval;

// KernelBench's problem id (the number the file name starts with), for kernelbench.candidates.
constexpr const char* kTaskProblem = "task.kernelbench_problem";

std::string read_file(const std::string& path) {
  std::string why;
  std::optional<std::string> text = kforge::read_bounded_file(path, kb::kMaxTaskFileBytes, why);
  if (!text) throw std::runtime_error("cannot read " + path + ": " + why);
  return std::move(*text);
}

std::vector<std::string> languages() { return {std::begin(vocabulary::kLanguages), std::end(vocabulary::kLanguages)}; }

struct SuiteOptions {
  std::filesystem::path path;
  std::string manifest;
  std::string profile;
  double size_scale = 1;
  double fit_memory_mb = 0;
  std::vector<std::string> include;
  std::filesystem::path with_candidates;
  int64_t limit = 0;
  std::string format;
};

class Suite : public kforge::sdk::Source {
 public:
  using Options = SuiteOptions;
  static constexpr const char* kName = "kernelbench.suite";
  static std::vector<std::string> former_names() { return {"tasks.kernelbench"}; }
  static constexpr const char* kDoc =
      "KernelBench-format task files (class Model, get_inputs(), get_init_inputs()) from a directory, as "
      "they are, with metadata from an optional manifest beside them; with format kernelbenchx, KernelBenchX/"
      "TritonBench files (a function, a '#' separator line, test code) from the directory and its category "
      "folders (the folder is the category). Sets task.id/name/path/source/level/category/complexity/"
      "complexity_score/format/sizes/size_scale/fit_memory_mb.";
  static std::vector<Param> params() {
    return {Param{"path", KF_PARAM_STRING, nullptr, true, "Directory of task files (relative to the pipeline file)."}
                .bind(&Options::path),
            Param{"manifest", KF_PARAM_STRING, "manifest.yaml", false,
                  "Metadata file in path (file, id, name, level, category, complexity, format, sizes.small/full); "
                  "optional when left at its default."}
                .bind(&Options::manifest),
            Param{"profile", KF_PARAM_STRING, "small", false, "Which manifest sizes apply: small (CPU, CI) or full (GPU)."}
                .one_of({"small", "full"})
                .bind(&Options::profile),
            Param{"size_scale", KF_PARAM_FLOAT, "1.0", false,
                  "Factor for every module-level integer size >= 16 of tasks that have no sizes for the profile "
                  "(e.g. 0.01 to run KernelBench's GPU sizes on a CPU)."}
                .above(0)
                .bind(&Options::size_scale),
            Param{"fit_memory_mb", KF_PARAM_FLOAT, "0", false,
                  "Memory budget (MB) the harness shrinks each task's sizes to, keeping the task valid, for tasks "
                  "that have no sizes for the profile (after size_scale); 0: off."}
                .at_least(0)
                .bind(&Options::fit_memory_mb),
            Param{"include", KF_PARAM_STRING_LIST, "[]", false, "Task ids or glob patterns to keep; empty: all."}.bind(
                &Options::include),
            Param{"with_candidates", KF_PARAM_STRING, "", false,
                  "Keep only tasks that have a candidate file in this directory (named as "
                  "kernelbench.candidate_files expects; relative to the pipeline file); empty: all tasks."}
                .bind(&Options::with_candidates),
            Param{"limit", KF_PARAM_INT, "0", false, "At most this many tasks (after include and with_candidates); 0: all."}
                .at_least(0)
                .bind(&Options::limit),
            Param{"format", KF_PARAM_STRING, vocabulary::kFormatKernelBenchTorch, false,
                  "Format of tasks the manifest does not describe: kernelbench-torch, kernelbench-numpy, "
                  "kernelbench-mindspore or kernelbenchx (then also the files of path's category folders)."}
                .one_of({std::begin(vocabulary::kTaskFormats), std::end(vocabulary::kTaskFormats)})
                .bind(&Options::format)};
  }

  explicit Suite(const Options& options)
      : tasks_(kb::list_tasks({options.path, options.manifest, options.profile, options.size_scale,
                               options.fit_memory_mb, options.include, options.with_candidates, options.limit,
                               options.format})) {}

  bool next(kforge::sdk::Task& task) override {
    if (next_ >= tasks_.size()) return false;
    const kb::TaskEntry& entry = tasks_[next_++];
    std::string why;
    const std::optional<std::string> source = kforge::read_bounded_file(entry.path, kb::kMaxTaskFileBytes, why);
    if (!source) throw std::runtime_error("cannot read task file " + entry.path + ": " + why);
    task.set(KF_KEY_TASK_ID, entry.id);
    task.set(KF_KEY_TASK_NAME, entry.name);
    task.set(KF_KEY_TASK_PATH, entry.path);
    task.set(KF_KEY_TASK_SOURCE, *source);
    task.set_number(KF_KEY_TASK_LEVEL, entry.level);
    task.set(KF_KEY_TASK_CATEGORY, entry.category);
    task.set(KF_KEY_TASK_COMPLEXITY, entry.complexity);
    task.set_number(vocabulary::kTaskComplexityScore, entry.complexity_score);
    task.set(KF_KEY_TASK_FORMAT, entry.format);
    task.set(vocabulary::kTaskSizes, entry.sizes.dump());
    task.set_number(vocabulary::kTaskSizeScale, entry.size_scale);
    task.set_number(vocabulary::kTaskFitMemoryMb, entry.fit_memory_mb);
    return true;
  }
  std::optional<uint64_t> count() const override { return tasks_.size(); }

 private:
  std::vector<kb::TaskEntry> tasks_;
  size_t next_ = 0;
};

class CandidateFiles : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "kernelbench.candidate_files";
  static std::vector<std::string> former_names() { return {"candidates.files"}; }
  static constexpr kf_stage_role kRole = KF_ROLE_GENERATE;
  static constexpr const char* kDoc =
      "Takes each job's candidate code from a directory: sample n of a task is the n-th of <task file>, "
      "<stem>.1.py, <stem>.2.py, ..., <tag>__<task file> (sorted by tag). Sets candidate.code, "
      "candidate.language, candidate.file and candidate.tag; fails with no_candidate when there is none.";
  struct Options {
    std::filesystem::path dir;
    std::string language;
  };
  static std::vector<Param> params() {
    return {Param{"dir", KF_PARAM_STRING, nullptr, true, "Directory of candidate files (relative to the pipeline file)."}
                .bind(&Options::dir),
            Param{"language", KF_PARAM_STRING, nullptr, true, "Language of the candidates: triton, cpp, cuda or python."}
                .one_of(languages())
                .bind(&Options::language)};
  }
  explicit CandidateFiles(const Options& options) : dir_(options.dir), language_(options.language) {
    // A missing or empty directory would fail every job with no_candidate: refused before any runs.
    std::error_code ec;
    if (!std::filesystem::is_directory(dir_, ec)) {
      throw std::invalid_argument("dir '" + dir_ + "' is not a directory" + (ec ? " (" + ec.message() + ")" : "") +
                                  ": give the directory that holds the candidate files");
    }
    bool any_file = false;
    for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
      if (entry.is_regular_file(ec)) {
        any_file = true;
        break;
      }
    }
    if (!any_file) throw std::invalid_argument("dir '" + dir_ + "' holds no candidate files");
  }
  void process(Job& job) override {
    const int sample = static_cast<int>(job.number(KF_KEY_CANDIDATE_SAMPLE).value_or(0));
    std::string why;
    const auto file = kb::candidate_for_sample(dir_, job.get_or(KF_KEY_TASK_PATH), job.get_or(KF_KEY_TASK_ID),
                                                 sample, why);
    if (!file) return job.fail(KF_ERROR_NO_CANDIDATE, why);
    // The candidate's own file: one that cannot be a program (a FIFO, 10 GB) is its failure.
    const std::optional<std::string> code = kforge::read_bounded_file(file->path, kb::kMaxTaskFileBytes, why);
    if (!code) return job.fail(KF_ERROR_NO_CANDIDATE, "cannot read candidate file " + file->path + ": " + why);
    job.set(KF_KEY_CANDIDATE_CODE, *code);
    job.set(KF_KEY_CANDIDATE_LANGUAGE, language_);
    job.set(vocabulary::kCandidateFile, file->path);
    if (!file->tag.empty()) job.set(vocabulary::kCandidateTag, file->tag);
    job.pass();
  }

 private:
  std::string dir_;
  std::string language_;
};

struct TasksOptions {
  std::filesystem::path kernelbench_dir;
  std::vector<std::string> levels;
  std::vector<std::string> problems;
  std::filesystem::path run_dir;
  double size_scale = 1;
  double fit_memory_mb = 0;
};

class Tasks : public kforge::sdk::Source {
 public:
  using Options = TasksOptions;
  static constexpr const char* kName = "kernelbench.tasks";
  static constexpr const char* kDoc =
      "The problems of a KernelBench checkout as they are: KERNELBENCH/level<L>/<P>_<Name>.py for each level and "
      "problem id asked for. Task ids are level<L>/<P>_<Name>. Sets task.id/name/path/source/level/format "
      "(kernelbench-torch)/sizes/size_scale/fit_memory_mb and task.kernelbench_problem.";
  static std::vector<Param> params() {
    return {Param{"kernelbench_dir", KF_PARAM_STRING, nullptr, true,
                  "The KernelBench folder of a checkout, the one holding level1/, level2/, ... (relative to the "
                  "pipeline file)."}
                .bind(&Options::kernelbench_dir),
            Param{"levels", KF_PARAM_STRING_LIST, "[1]", false, "Levels to evaluate, e.g. [1, 2]."}.bind(
                &Options::levels),
            Param{"problems", KF_PARAM_STRING_LIST, "[]", false,
                  "Problem ids or ranges, e.g. [1-10, 19]; empty: every problem of the levels. Each must exist in "
                  "every level asked for."}
                .bind(&Options::problems),
            Param{"run_dir", KF_PARAM_STRING, "", false,
                  "The run folder the candidates come from: its kernel files for problems not listed here are "
                  "reported as a warning (they would otherwise go unnoticed); empty: no such check."}
                .bind(&Options::run_dir),
            Param{"size_scale", KF_PARAM_FLOAT, "1.0", false,
                  "Factor for every module-level integer size >= 16 (e.g. 0.01 to run KernelBench's GPU sizes on a "
                  "CPU); 1: KernelBench's sizes."}
                .above(0)
                .bind(&Options::size_scale),
            Param{"fit_memory_mb", KF_PARAM_FLOAT, "0", false,
                  "Memory budget (MB) the harness shrinks each problem's sizes to, keeping it valid; 0: off."}
                .at_least(0)
                .bind(&Options::fit_memory_mb)};
  }

  explicit Tasks(const Options& options) : size_scale_(options.size_scale), fit_memory_mb_(options.fit_memory_mb) {
    std::vector<int> levels;
    for (const std::string& level : options.levels) {
      const std::vector<int> one = kb::parse_problem_ids({level});
      levels.insert(levels.end(), one.begin(), one.end());
    }
    if (levels.empty()) throw std::invalid_argument("levels is empty: name at least one level, e.g. [1]");
    problems_ = kb::list_problems(options.kernelbench_dir, levels, kb::parse_problem_ids(options.problems));
    const std::string run_dir = options.run_dir;
    if (!run_dir.empty()) {
      const auto stray = kb::unmatched_kernel_files(run_dir, problems_);
      if (!stray.empty()) {
        std::string names;
        for (size_t i = 0; i < stray.size() && i < 10; ++i) names += (i ? ", " : "") + stray[i];
        if (stray.size() > 10) names += ", ...";
        kforge::sdk::log(KF_LOG_WARN, "kernelbench",
                         std::to_string(stray.size()) + " kernel file(s) in " + run_dir +
                             " belong to no problem of this run (levels/problems) and are not evaluated: " + names);
      }
    }
  }

  bool next(kforge::sdk::Task& task) override {
    if (next_ >= problems_.size()) return false;
    const kb::Problem& p = problems_[next_++];
    task.set(KF_KEY_TASK_ID, p.task_id);
    task.set(KF_KEY_TASK_NAME, p.name);
    task.set(KF_KEY_TASK_PATH, p.path);
    task.set(KF_KEY_TASK_SOURCE, read_file(p.path));
    task.set_number(KF_KEY_TASK_LEVEL, p.level);
    task.set(KF_KEY_TASK_FORMAT, vocabulary::kFormatKernelBenchTorch);
    task.set(vocabulary::kTaskSizes, "{}");
    task.set_number(vocabulary::kTaskSizeScale, size_scale_);
    task.set_number(vocabulary::kTaskFitMemoryMb, fit_memory_mb_);
    task.set_number(kTaskProblem, p.id);
    return true;
  }
  std::optional<uint64_t> count() const override { return problems_.size(); }

 private:
  std::vector<kb::Problem> problems_;
  size_t next_ = 0;
  double size_scale_;
  double fit_memory_mb_;
};

class Candidates : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "kernelbench.candidates";
  static constexpr kf_stage_role kRole = KF_ROLE_GENERATE;
  static constexpr const char* kDoc =
      "Takes sample S of a kernelbench.tasks problem from a KernelBench run folder: "
      "RUN/level_<L>_problem_<P>_sample_<S>_kernel.py, as KernelBench's generate_samples.py writes it. Sets "
      "candidate.code, candidate.language and candidate.file; a sample with no file fails with no_candidate "
      "(never another sample in its place).";
  struct Options {
    std::filesystem::path run_dir;
    std::string language;
  };
  static std::vector<Param> params() {
    return {Param{"run_dir", KF_PARAM_STRING, nullptr, true, "The run folder, runs/<run> (relative to the pipeline file)."}
                .bind(&Options::run_dir),
            Param{"language", KF_PARAM_STRING, vocabulary::kLanguageCuda, false,
                  "Backend of the kernels: cuda (load_inline, KernelBench's default), triton, cpp or python."}
                .one_of(languages())
                .bind(&Options::language)};
  }
  explicit Candidates(const Options& options) : run_dir_(options.run_dir), language_(options.language) {
    std::error_code ec;
    if (!std::filesystem::is_directory(run_dir_, ec)) {
      throw std::invalid_argument("run folder '" + run_dir_ + "' does not exist");
    }
  }
  void process(Job& job) override {
    const auto level = job.number(KF_KEY_TASK_LEVEL);
    const auto problem = job.number(kTaskProblem);
    if (!level || !problem) {
      return job.error(KF_ERROR_TASK, "task " + job.get_or(KF_KEY_TASK_ID) +
                                         " has no KernelBench level and problem id: use the kernelbench.tasks source");
    }
    const int sample = static_cast<int>(job.number(KF_KEY_CANDIDATE_SAMPLE).value_or(0));
    const std::string path = kb::kernel_file(run_dir_, static_cast<int>(*level), static_cast<int>(*problem), sample);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      return job.fail(KF_ERROR_NO_CANDIDATE, "sample " + std::to_string(sample) + " of " + job.get_or(KF_KEY_TASK_ID) +
                                          " is missing from the run folder: no file " + path);
    }
    if (std::filesystem::file_size(path, ec) > kb::kMaxTaskFileBytes) {
      return job.fail(KF_ERROR_NO_CANDIDATE, "the candidate " + path + " holds more than " +
                                                 kforge::byte_size_text(kb::kMaxTaskFileBytes) + ": no kernel is that long");
    }
    std::string code;
    try {
      code = read_file(path);
    } catch (const std::exception& e) {
      return job.error(KF_ERROR_HOST, e.what());
    }
    job.set(KF_KEY_CANDIDATE_CODE, code);
    job.set(KF_KEY_CANDIDATE_LANGUAGE, language_);
    job.set(vocabulary::kCandidateFile, path);
    job.pass();
  }

 private:
  std::string run_dir_;
  std::string language_;
};

class Export : public kforge::sdk::Exporter {
 public:
  static constexpr const char* kName = "kernelbench";
  static constexpr const char* kDoc =
      "KernelBench's eval_results.json and baseline_time_torch.json (--option level=L for a run of several levels)";
  explicit Export(std::string_view options) : export_(options) {}
  void task(std::string_view task_json) override { export_.task(task_json); }
  void finish(kforge::sdk::ExportFiles& files) override {
    const auto [results, baseline] = export_.finish();
    files.write("eval_results.json", results);
    files.write("baseline_time_torch.json", baseline);
  }

 private:
  kb::KernelBenchExport export_;
};

class Categories : public kforge::sdk::ReportSection {
 public:
  static constexpr const char* kName = "kernelbench.categories";
  static constexpr const char* kDoc = "KernelBenchX rates by category: call and execution accuracy, faster, mean speedup";
  static std::vector<std::string> task_formats() { return {kforge::eval::kFormatKernelBenchX}; }
  void task(std::string_view task_json) override { rates_.task(task_json); }
  void finish(kforge::sdk::ReportTables& tables) override {
    if (auto table = rates_.table()) tables.add(*table);
  }

 private:
  kb::CategoryRates rates_;
};

}  // namespace

KFORGE_PLUGIN("kernelbench", "0.1.0", Suite, Tasks, CandidateFiles, Candidates, Export, Categories)
