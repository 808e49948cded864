#include "tasks.hpp"
#include "test_files.hpp"

#include <gtest/gtest.h>

#include <set>

namespace kforge::kernelbench {
namespace {

using testing::examples_dir;
using testing::harness_dir;
using testing::fresh_temp_dir;
using testing::write_file;

const TaskEntry& find(const std::vector<TaskEntry>& tasks, const std::string& id) {
  for (const TaskEntry& task : tasks) {
    if (task.id == id) return task;
  }
  throw std::invalid_argument("no task " + id);
}

TEST(ListTasks, ReadsTheBundledSuiteInManifestOrder) {
  TaskListOptions options;
  options.dir = examples_dir();
  const auto tasks = list_tasks(options);
  ASSERT_GE(tasks.size(), 40u);
  EXPECT_EQ(tasks.front().id, "001_relu");
  std::set<std::string> categories, classes;
  for (size_t i = 0; i < tasks.size(); ++i) {
    categories.insert(tasks[i].category);
    classes.insert(tasks[i].complexity);
    EXPECT_EQ(tasks[i].path.front(), '/') << tasks[i].id;
    if (i > 0) {
      EXPECT_LT(tasks[i - 1].path, tasks[i].path);  // this manifest lists files in order
    }
  }
  EXPECT_GE(categories.size(), 10u);
  EXPECT_EQ(classes, (std::set<std::string>{"C1", "C2", "C3", "C4"}));
}

TEST(ListTasks, TakesMetadataAndProfileSizesFromTheManifest) {
  TaskListOptions options;
  options.dir = examples_dir();
  options.size_scale = 0.5;  // ignored for tasks with sizes for the profile
  const TaskEntry relu = find(list_tasks(options), "001_relu");
  EXPECT_EQ(relu.name, "relu");
  EXPECT_EQ(relu.level, 1);
  EXPECT_EQ(relu.category, "Activation");
  EXPECT_EQ(relu.complexity, "C1");
  EXPECT_EQ(relu.format, "kernelbench-torch");
  EXPECT_EQ(relu.sizes, (nlohmann::json{{"batch_size", 16}, {"dim", 4096}}));
  EXPECT_DOUBLE_EQ(relu.size_scale, 1.0);
  EXPECT_GT(relu.complexity_score, 0);

  options.profile = "full";
  EXPECT_EQ(find(list_tasks(options), "001_relu").sizes, (nlohmann::json{{"batch_size", 4096}, {"dim", 65536}}));
  EXPECT_EQ(find(list_tasks(options), "058_numpy_relu").format, "kernelbench-numpy");
  EXPECT_EQ(find(list_tasks(options), "065_mindspore_layer_norm").format, "kernelbench-mindspore");
}

TEST(ListTasks, FitMemoryAppliesOnlyToTasksWithoutProfileSizes) {
  const std::string dir = fresh_temp_dir("fit-memory");
  write_file(dir + "/a.py", "class Model:\n    pass\nn = 4096\n");
  write_file(dir + "/b.py", "class Model:\n    pass\nn = 4096\n");
  write_file(dir + "/manifest.yaml",
             "tasks:\n  - file: a.py\n    sizes:\n      small: {n: 16}\n  - file: b.py\n    sizes:\n      full: {n: 4096}\n");
  TaskListOptions options;
  options.dir = dir;
  options.fit_memory_mb = 256;
  const auto tasks = list_tasks(options);
  EXPECT_DOUBLE_EQ(find(tasks, "a").fit_memory_mb, 0);  // the profile's sizes win
  EXPECT_DOUBLE_EQ(find(tasks, "b").fit_memory_mb, 256);
  options.profile = "full";
  EXPECT_DOUBLE_EQ(find(list_tasks(options), "a").fit_memory_mb, 256);
  EXPECT_DOUBLE_EQ(find(list_tasks(options), "b").fit_memory_mb, 0);
  options.fit_memory_mb = -1;
  EXPECT_THROW(list_tasks(options), TaskListError);
  EXPECT_DOUBLE_EQ(find(list_tasks(TaskListOptions{dir}), "b").fit_memory_mb, 0);  // off by default
}

TEST(ListTasks, IncludeAndLimitSelectTasks) {
  TaskListOptions options;
  options.dir = examples_dir();
  options.include = {"00[1-3]_*", "032_square_matmul"};
  auto tasks = list_tasks(options);
  ASSERT_EQ(tasks.size(), 4u);
  EXPECT_EQ(tasks[3].id, "032_square_matmul");
  options.limit = 2;
  EXPECT_EQ(list_tasks(options).size(), 2u);
}

TEST(ListTasks, WithCandidatesKeepsTasksThatHaveACandidateFile) {
  TaskListOptions options;
  options.dir = examples_dir();
  options.with_candidates_in = examples_dir() + "/candidates/broken";
  std::set<std::string> ids;
  for (const TaskEntry& task : list_tasks(options)) ids.insert(task.id);
  EXPECT_TRUE(ids.count("001_relu"));
  EXPECT_TRUE(ids.count("027_standardized_row_mean"));
  EXPECT_FALSE(ids.count("003_sigmoid"));
  options.with_candidates_in = "/no/such/candidates";
  EXPECT_THROW(list_tasks(options), TaskListError);
}

TEST(ListTasks, WithoutManifestReadsPyFilesInNaturalOrderAndScoresThem) {
  const std::string dir = fresh_temp_dir("level2");
  const std::string level_dir = dir + "/level2";
  write_file(level_dir + "/10_Conv.py",
             "import torch\nclass Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             "        self.conv = torch.nn.Conv2d(3, 8, 3)\n    def forward(self, x):\n        return self.conv(x)\n");
  write_file(level_dir + "/2_ReLU.py",
             "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n");
  write_file(level_dir + "/notes.txt", "not a task");
  TaskListOptions options;
  options.dir = level_dir;
  options.size_scale = 0.01;
  const auto tasks = list_tasks(options);
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].id, "2_ReLU");
  EXPECT_EQ(tasks[0].name, "ReLU");
  EXPECT_EQ(tasks[0].level, 2);
  EXPECT_EQ(tasks[0].complexity, "C1");
  EXPECT_EQ(tasks[0].category, "Activation");
  EXPECT_DOUBLE_EQ(tasks[0].size_scale, 0.01);
  EXPECT_TRUE(tasks[0].sizes.empty());
  EXPECT_EQ(tasks[1].id, "10_Conv");
  EXPECT_EQ(tasks[1].complexity, "C4");
  EXPECT_EQ(tasks[1].category, "Convolution");
}

TEST(ListTasks, KernelBenchXReadsCategoryFoldersAndTakesTheCategoryFromTheFolder) {
  TaskListOptions options;
  options.dir = harness_dir() + "/tests/data/tasks/kbx";
  options.format = eval::kFormatKernelBenchX;
  const auto tasks = list_tasks(options);
  std::vector<std::string> ids;
  for (const TaskEntry& task : tasks) {
    ids.push_back(task.id);
    EXPECT_EQ(task.format, "kernelbenchx");
    EXPECT_DOUBLE_EQ(task.size_scale, 1.0);
  }
  // Natural order of category/file.
  EXPECT_EQ(ids, (std::vector<std::string>{"describe_dtype", "leaky_relu", "scale_shift_fp16", "fill_rows_",
                                           "addmm_relu", "row_sum"}));
  EXPECT_EQ(find(tasks, "fill_rows_").category, "Index");
  EXPECT_EQ(find(tasks, "leaky_relu").category, "Activation");
  EXPECT_EQ(find(tasks, "row_sum").category, "Reduce");
  EXPECT_EQ(find(tasks, "addmm_relu").category, "MatrixMultiply");

  // Other formats read only the directory's own files.
  options.format = "kernelbench-torch";
  EXPECT_TRUE(list_tasks(options).empty());

  // Sizes do not apply: the test code runs as written.
  options.format = eval::kFormatKernelBenchX;
  options.size_scale = 0.5;
  EXPECT_THROW(list_tasks(options), TaskListError);
}

TEST(ListTasks, KernelBenchXTaskIdsMustBeUnique) {
  const std::string dir = fresh_temp_dir("kbx-dup");
  const std::string task = "def f(x):\n    return x\n" + std::string(146, '#') + "\ntest_results = {}\n";
  write_file(dir + "/Math/f.py", task);
  write_file(dir + "/Fusion/f.py", task);
  TaskListOptions options;
  options.dir = dir;
  options.format = eval::kFormatKernelBenchX;
  try {
    list_tasks(options);
    FAIL() << "expected TaskListError";
  } catch (const TaskListError& e) {
    EXPECT_NE(std::string(e.what()).find("two task files are named f.py"), std::string::npos) << e.what();
  }
  // A manifest names the format per task; a kernelbenchx task takes no sizes.
  write_file(dir + "/manifest.yaml", "tasks:\n  - file: Math/f.py\n    format: kernelbenchx\n    sizes: {small: {n: 1}}\n");
  options.format = "kernelbench-torch";
  EXPECT_THROW(list_tasks(options), TaskListError);
  write_file(dir + "/manifest.yaml", "tasks:\n  - file: Math/f.py\n    format: kernelbenchx\n");
  const auto tasks = list_tasks(options);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].format, "kernelbenchx");
  EXPECT_EQ(tasks[0].category, "Math");
}

TEST(ListTasks, ManifestErrorsNameFileAndLine) {
  const std::string dir = fresh_temp_dir("bad-manifest");
  write_file(dir + "/a.py", "class Model:\n    pass\n");
  write_file(dir + "/manifest.yaml", "tasks:\n  - file: a.py\n    complexity: C7\n");
  TaskListOptions options;
  options.dir = dir;
  try {
    list_tasks(options);
    FAIL() << "expected TaskListError";
  } catch (const TaskListError& e) {
    EXPECT_NE(std::string(e.what()).find("manifest.yaml:3:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("C7"), std::string::npos) << e.what();
  }
  write_file(dir + "/manifest.yaml", "tasks:\n  - file: a.py\n    colour: red\n");
  EXPECT_THROW(list_tasks(options), TaskListError);
  write_file(dir + "/manifest.yaml", "tasks:\n  - file: missing.py\n");
  EXPECT_THROW(list_tasks(options), TaskListError);
  options.manifest = "other.yaml";
  EXPECT_THROW(list_tasks(options), TaskListError);  // named explicitly, so it must exist
}

TEST(ListTasks, RejectsBadOptions) {
  TaskListOptions options;
  options.dir = examples_dir();
  options.profile = "huge";
  EXPECT_THROW(list_tasks(options), TaskListError);
  options.profile = "small";
  options.dir = "/no/such/dir";
  EXPECT_THROW(list_tasks(options), TaskListError);
}

TEST(NaturalLess, ComparesDigitRunsAsNumbers) {
  EXPECT_TRUE(natural_less("2_a.py", "10_a.py"));
  EXPECT_FALSE(natural_less("10_a.py", "2_a.py"));
  EXPECT_TRUE(natural_less("a.py", "b.py"));
  EXPECT_TRUE(natural_less("007_x", "8_x"));
  EXPECT_FALSE(natural_less("x", "x"));
}

}  // namespace
}  // namespace kforge::kernelbench
