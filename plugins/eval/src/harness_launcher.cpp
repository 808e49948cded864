#include "harness_launcher.hpp"

#include <sstream>

extern char** environ;

namespace kforge::eval {
namespace {

// Run by the step before the server: says where Slurm placed it (see the header), then
// becomes the server.
constexpr const char* kPlacementScript =
    "printf '{\"slurm_step\": {\"node\": \"%s\", \"job\": \"%s\", \"step\": \"%s\"}}\\n' "
    "\"${SLURMD_NODENAME:-}\" \"${SLURM_JOB_ID:-}\" \"${SLURM_STEP_ID:-}\"; exec \"$@\"";

// How long scancel may take to reach the controller.
constexpr double kScancelSeconds = 10;

// This process's SLURM_* variables: the allocation srun adds a step to (SLURM_JOB_ID), the
// cluster's configuration (SLURM_CONF) and what sbatch/salloc set for srun to read.
std::vector<std::string> slurm_variables() {
  std::vector<std::string> names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text = *entry;
    if (text.starts_with("SLURM_")) names.emplace_back(text.substr(0, text.find('=')));
  }
  return names;
}

}  // namespace

std::string SlurmLaunch::key() const {
  std::ostringstream key;
  key << "slurm gpus=" << gpus << " cpus=" << cpus << " partition=" << partition << " account=" << account
      << " time=" << time_limit << " constraint=" << constraint << " place=" << place_timeout_seconds << " args=";
  for (const std::string& arg : extra_args) key << arg << '\x1f';
  return key.str();
}

SpawnSpec launch_command(const std::vector<std::string>& server_argv, const std::map<std::string, std::string>& env,
                         const std::optional<SlurmLaunch>& slurm, const std::vector<std::string>& excluded) {
  SpawnSpec command;
  command.env = env;
  if (!slurm) {
    command.argv = server_argv;
    return command;
  }
  command.argv = {"srun", "--ntasks=1", "--nodes=1", "--job-name=kforge-harness",
                  "--cpus-per-task=" + std::to_string(slurm->cpus)};
  if (slurm->gpus > 0) command.argv.push_back("--gpus-per-task=" + std::to_string(slurm->gpus));
  if (!slurm->partition.empty()) command.argv.push_back("--partition=" + slurm->partition);
  if (!slurm->account.empty()) command.argv.push_back("--account=" + slurm->account);
  if (!slurm->time_limit.empty()) command.argv.push_back("--time=" + slurm->time_limit);
  if (!slurm->constraint.empty()) command.argv.push_back("--constraint=" + slurm->constraint);
  if (!excluded.empty()) {
    std::string nodes;
    for (const std::string& node : excluded) nodes += (nodes.empty() ? "" : ",") + node;
    command.argv.push_back("--exclude=" + nodes);
  }
  command.argv.insert(command.argv.end(), slurm->extra_args.begin(), slurm->extra_args.end());
  command.argv.insert(command.argv.end(), {"--", "/bin/sh", "-c", kPlacementScript, "kforge-harness-step"});
  command.argv.insert(command.argv.end(), server_argv.begin(), server_argv.end());
  command.pass = slurm_variables();
  return command;
}

std::optional<SlurmStep> placement_of(const nlohmann::json& line) {
  const auto it = line.find("slurm_step");
  if (it == line.end() || !it->is_object()) return std::nullopt;
  SlurmStep step;
  step.node = it->value("node", std::string());
  step.job = it->value("job", std::string());
  step.step = it->value("step", std::string());
  return step;
}

std::string slurm_messages(const std::string& stderr_text, size_t max_lines) {
  std::vector<std::string> lines;
  std::istringstream in(stderr_text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("srun:") || line.starts_with("slurmstepd")) lines.push_back(line);
  }
  std::string text;
  for (size_t i = lines.size() > max_lines ? lines.size() - max_lines : 0; i < lines.size(); ++i) {
    text += (text.empty() ? "" : "; ") + lines[i];
  }
  return text;
}

void cancel_slurm_step(const SlurmStep& step) {
  if (step.job.empty()) return;
  SpawnSpec scancel;
  scancel.argv = {"scancel", "--quiet", step.step.empty() ? step.job : step.id()};
  scancel.pass = slurm_variables();
  try {
    run_command(scancel, RunLimits::within(kScancelSeconds));
  } catch (const SpawnError&) {
    // No scancel here: srun's own end (it was killed) is all that can be done.
  }
}

}  // namespace kforge::eval
