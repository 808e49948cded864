// How a harness server is started: here, as a child process (launcher `local`), or as a
// Slurm job step through srun (launcher `slurm`), its JSON-lines protocol over the step's
// standard streams either way. Inside an allocation (salloc, sbatch: SLURM_JOB_ID is set)
// srun creates a step of it; outside, a job of its own per server.
//
// A step first prints one line of its own, before the server starts:
//   {"slurm_step": {"node": "gpu07", "job": "4711", "step": "3"}}
// so the client knows when Slurm placed it (the placement has a time limit of its own:
// a queue can hold a step for hours, an import of torch should not take that long) and
// where it runs, and can cancel it by its id.
#pragma once

#include "process.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kforge::eval {

// What a `slurm` server's step asks of Slurm (the eval stages' slurm_* parameters).
struct SlurmLaunch {
  int gpus = 0;                    // --gpus-per-task; 0: none asked
  int cpus = 1;                    // --cpus-per-task
  std::string partition;           // empty: Slurm's default (outside an allocation)
  std::string account;
  std::string time_limit;          // --time, in Slurm's format (minutes, HH:MM:SS, D-HH)
  std::string constraint;          // --constraint (node features)
  std::vector<std::string> extra_args;  // passed to srun as they are, after the others
  double place_timeout_seconds = 600;   // how long Slurm may take to start the step

  std::string key() const;
};

// Where Slurm placed a server's step.
struct SlurmStep {
  std::string node;
  std::string job;
  std::string step;

  std::string id() const { return job + "." + step; }  // what scancel takes
  std::string describe() const { return "node " + node + ", Slurm step " + id(); }
};

// The command that starts the server `server_argv` (python -m kforge_harness serve ...)
// with `env` set: the argv itself for a local server; for a Slurm one, srun with the
// launch's resources, the nodes in `excluded` left out, and the placement line printed
// first. A Slurm launch passes this process's SLURM_* variables (the allocation, the
// cluster's configuration) on to srun.
SpawnSpec launch_command(const std::vector<std::string>& server_argv, const std::map<std::string, std::string>& env,
                         const std::optional<SlurmLaunch>& slurm, const std::vector<std::string>& excluded);

// The placement line's content, or nullopt when `line` is not one.
std::optional<SlurmStep> placement_of(const nlohmann::json& line);

// The lines of srun's and slurmstepd's own in a server's stderr (why a step was
// cancelled, hit its time limit or lost its node), last `max_lines` of them.
std::string slurm_messages(const std::string& stderr_text, size_t max_lines = 3);

// Cancels `step` (scancel, within a few seconds); a step already gone is no error.
void cancel_slurm_step(const SlurmStep& step);

}  // namespace kforge::eval
