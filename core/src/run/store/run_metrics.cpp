// What exports read beyond the report's dataset: the run stage's measurements per job.
#include "run/store/statements.hpp"
#include "run/store/store.hpp"

namespace kforge {

using sql::Statement;

std::map<std::pair<std::string, int>, std::string> Store::load_run_metrics(int64_t series) {
  std::lock_guard lock(mutex_);
  std::map<std::pair<std::string, int>, std::string> metrics;
  // Roles came with schema 2; a version-1 store's verdicts cannot be told apart by role.
  if (schema_version_ < 2) return metrics;
  // The job's own run (a resumed series has jobs from several), its final round, and the
  // last run-role verdict there: ordered by id, a later verdict overwrites an earlier one.
  Statement q(db_, path_,
              "SELECT a.task_id, a.sample, a.metrics FROM attempts a "
              "JOIN jobs j ON j.run_id = a.run_id AND j.task_id = a.task_id AND j.sample = a.sample "
              "JOIN runs r ON r.id = j.run_id "
              "WHERE r.series = ?1 AND a.role = 'run' AND a.round = j.round ORDER BY a.id");
  q.bind(1, series);
  while (q.step()) metrics[{q.text(0), static_cast<int>(q.integer(1))}] = q.text(2);
  return metrics;
}

}  // namespace kforge
