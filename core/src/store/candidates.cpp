// Every verdict of a series' finished jobs held in memory, with the code, diffs and logs
// they name: `kforge show` reads one task's this way.
#include "store/store.hpp"

namespace kforge {

CandidateRecords Store::load_candidates(int64_t series, const std::string* task_id) {
  std::lock_guard lock(mutex_);
  CandidateRecords out;
  visit_tasks(
      series, true,
      [&](TaskJobs& task) {
        if (task.known) out.tasks.emplace(task.info.id, task.info);
        for (CandidateRecord& c : task.candidates) {
          for (const StageRecord& s : c.stages) {
            for (const std::string* hash : {&s.code_hash, &s.diff_hash, &s.log_hash}) {
              if (hash->empty() || out.artifacts.count(*hash) != 0) continue;
              if (auto content = artifact(*hash)) out.artifacts.emplace(*hash, std::move(*content));
            }
          }
          out.candidates.push_back(std::move(c));
        }
      },
      task_id);
  return out;
}

}  // namespace kforge
