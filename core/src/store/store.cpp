#include "store/store.hpp"

#include <kforge/sha256.hpp>

#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "store/json_text.hpp"
#include "store/schema.hpp"
#include "store/statements.hpp"
#include "store/store_files.hpp"

namespace kforge {
namespace {

using json = nlohmann::ordered_json;
using sql::exec_sql;
using sql::now_iso;
using sql::Statement;
using sql::Transaction;

constexpr int kBusyTimeoutMs = 10000;

// How a reader opens the database. SQLite reads a WAL database through a -shm file it
// creates beside it; in a directory it cannot write (a read-only mount, an archive) it
// cannot, so there the file is opened as immutable: nothing can be writing it (no run can
// write that directory either), and with no -wal file left, the file holds every commit.
std::string read_only_uri(const std::string& path) {
  std::string uri = "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      uri += c;
    }
  }
  uri += "?mode=ro";
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const bool writable_dir = ::access(dir.empty() ? "." : dir.c_str(), W_OK) == 0;
  std::error_code ec;
  const bool wal_left = std::filesystem::file_size(path + "-wal", ec) > 0 && !ec;
  if (!writable_dir && !wal_left) uri += "&immutable=1";
  return uri;
}

// The latest schema: what a ReadWrite store migrates to.
int current_schema() { return schema_migrations().back().to; }

}  // namespace

Store::Store(const std::string& path, StoreMode mode) : path_(path) {
  const bool read_only = mode == StoreMode::ReadOnly;
  if (read_only && !std::filesystem::exists(path)) {
    throw StoreError(fmt::format("no run store at '{}': is this a kforge output directory (run `kforge run ... --out DIR`)?", path));
  }
  const int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
                    SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
  if (sqlite3_open_v2(read_only ? read_only_uri(path).c_str() : path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(fmt::format("cannot open the run store '{}': {}; check that the output directory exists and is {}{}",
                                 path, message, read_only ? "readable" : "writable",
                                 read_only ? " (a store a killed run left with a -wal file cannot be read in a read-only "
                                             "directory: copy the directory somewhere writable)"
                                           : ""));
  }
  try {
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    if (read_only) {
      schema_version_ = sql::user_version(db_, path_);
      if (schema_version_ == 0) {
        throw StoreError(fmt::format("'{}' is not a kforge run store (it has no kforge schema)", path_));
      }
      if (schema_version_ > current_schema()) {
        throw StoreError(fmt::format("run store '{}' has schema version {}, newer than this kforge knows ({}): use a "
                                     "newer kforge",
                                     path_, schema_version_, current_schema()));
      }
    } else {
      exec_sql(db_, path_, "PRAGMA journal_mode = WAL");
      exec_sql(db_, path_, "PRAGMA synchronous = NORMAL");
      migrate(db_, schema_migrations(), path_);
      schema_version_ = current_schema();
      statements_ = std::make_unique<Statements>(db_, path_);
      if (::access(path_.c_str(), F_OK) != 0) {
        throw StoreError(fmt::format("the run store '{}' vanished as it was opened", path_));
      }
      files_ = std::make_unique<StoreFiles>(path_);
    }
  } catch (...) {
    statements_.reset();
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

void Store::check_still_there() {
  if (!files_) return;
  const std::string what = files_->changes();
  if (what.empty()) return;
  tampered_ = true;
  if (files_->database_unchanged()) {
    throw StoreError(fmt::format(
        "{} while the run was writing it. The run stops; what it committed goes into the database (the log is "
        "still open to it), which stays whole: `--resume` continues",
        what));
  }
  throw StoreError(fmt::format(
      "{} while the run was writing it: the run's records there can no longer be trusted, and writing on would mix "
      "them with someone else's. The run stops, and its write-ahead log is not applied to what is there now. Run "
      "again into an output directory nothing else touches",
      what));
}

void Store::check_untouched() {
  std::lock_guard lock(mutex_);
  check_still_there();
}

Store::OwnWrite::OwnWrite(Store& store, bool check) : store_(store) {
  if (check) store_.check_still_there();
}

Store::OwnWrite::~OwnWrite() {
  if (store_.files_ && !store_.tampered_) store_.files_->record();
}

Store::Statements& Store::writes() {
  if (!statements_) throw StoreError(fmt::format("run store '{}' is open read-only", path_));
  return *statements_;
}

Store::~Store() {
  statements_.reset();
  if (db_ == nullptr) return;
  if (files_ && (tampered_ || !files_->changes().empty())) {
    // Someone else changed the files. Only the log gone: this run's commits are in the log
    // SQLite still holds open, and go into the database, which is still this run's. Else
    // the log belongs to a database that is no longer at the path (or no longer as this
    // run left it): it is not checkpointed into what is there, and not left for the next
    // opener to apply to it (that made a replacement malformed).
    if (files_->database_unchanged()) {
      sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
    }
    sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    const bool log_ours = files_->log_is_ours();
    sqlite3_close(db_);
    if (log_ours) ::unlink(files_->log_path().c_str());
    return;
  }
  sqlite3_close(db_);
}

std::optional<RunRecord> Store::latest_run() {
  std::lock_guard lock(mutex_);
  Statement q(db_, path_, "SELECT series FROM runs ORDER BY id DESC LIMIT 1");
  std::optional<int64_t> series;
  while (q.step()) series = q.integer(0);
  if (!series) return std::nullopt;
  return read_series(*series).back();
}

std::vector<RunRecord> Store::series_runs(int64_t series) {
  std::lock_guard lock(mutex_);
  return read_series(series);
}

std::vector<RunRecord> Store::read_series(int64_t series) {
  // Schema 1 has no secret seeds.
  const std::string seed = schema_version_ >= 2 ? "secret_seed" : "NULL";
  Statement q(db_, path_,
              ("SELECT id, series, pipeline, strategy, pipeline_file, config, config_hash, kforge_version, host, "
               "devices, expected_jobs, started_at, ended_at, status, " + seed + " FROM runs WHERE series = ?1 ORDER BY id")
                  .c_str());
  q.bind(1, series);
  std::vector<RunRecord> runs;
  while (q.step()) {
    RunRecord r;
    r.id = q.integer(0);
    r.series = q.integer(1);
    r.pipeline = q.text(2);
    r.label = q.text(3);
    r.pipeline_file = q.text(4);
    r.config = q.text(5);
    r.config_hash = q.text(6);
    r.kforge_version = q.text(7);
    r.host = q.text(8);
    r.devices = q.text(9);
    r.expected_jobs = static_cast<uint64_t>(q.integer(10));
    r.started_at = q.text(11);
    r.ended_at = q.text(12);
    r.status = q.text(13);
    if (!q.is_null(14)) r.secret_seed = std::stoull(q.text(14), nullptr, 16);
    runs.push_back(std::move(r));
  }
  return runs;
}

int64_t Store::begin_run(RunRecord run) {
  std::lock_guard lock(mutex_);
  const OwnWrite own(*this);
  Statements& w = writes();
  Transaction tx(w.begin, w.commit, w.rollback);
  Statement insert(db_, path_,
                   "INSERT INTO runs (series, pipeline, strategy, pipeline_file, config, config_hash, kforge_version, "
                   "host, devices, expected_jobs, started_at, status, secret_seed) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
  const std::string seed = run.secret_seed ? fmt::format("{:016x}", *run.secret_seed) : "";
  insert.bind(1, run.series)
      .bind(2, run.pipeline)
      .bind(3, run.label)
      .bind(4, run.pipeline_file)
      .bind(5, run.config)
      .bind(6, run.config_hash)
      .bind(7, run.kforge_version)
      .bind(8, run.host)
      .bind(9, run.devices)
      .bind(10, static_cast<int64_t>(run.expected_jobs))
      .bind(11, run.started_at.empty() ? now_iso() : run.started_at)
      .bind(12, std::string(to_string(RunStatus::Running)))
      .bind(13, run.secret_seed ? &seed : nullptr);
  insert.run();
  const int64_t id = sqlite3_last_insert_rowid(db_);
  if (run.series == 0) {
    Statement own(db_, path_, "UPDATE runs SET series = id WHERE id = ?1");
    own.bind(1, id).run();
  }
  tx.commit();
  return id;
}

void Store::set_expected_jobs(int64_t run, uint64_t jobs) {
  std::lock_guard lock(mutex_);
  const OwnWrite own(*this);
  writes();
  Statement update(db_, path_, "UPDATE runs SET expected_jobs = ?2 WHERE id = ?1");
  update.bind(1, run).bind(2, static_cast<int64_t>(jobs)).run();
}

void Store::end_run(int64_t run, RunStatus status) {
  std::lock_guard lock(mutex_);
  const OwnWrite own(*this, /*check=*/false);
  writes();
  Statement update(db_, path_, "UPDATE runs SET status = ?2, ended_at = ?3 WHERE id = ?1");
  update.bind(1, run).bind(2, std::string(to_string(status))).bind(3, now_iso()).run();
}

void Store::put_artifact(const std::string& hash, const char* kind, const std::string& content) {
  statements_->artifact.bind(1, hash)
      .bind(2, std::string(kind))
      .bind(3, static_cast<int64_t>(content.size()))
      .bind_blob(4, content)
      .run();
}

void Store::upsert_task(const Task& task) {
  auto text = [&](const char* key) {
    auto it = task.strings.find(key);
    return it == task.strings.end() ? std::string() : it->second;
  };
  auto level = task.numbers.find(KF_KEY_TASK_LEVEL);
  auto source = task.strings.find(KF_KEY_TASK_SOURCE);
  Statement& s = statements_->task;
  s.bind(1, task.id())
      .bind(2, static_cast<int64_t>(task.index))
      .bind(3, text(KF_KEY_TASK_NAME))
      .bind(4, level == task.numbers.end() ? std::nullopt : std::optional<double>(level->second))
      .bind(5, text(KF_KEY_TASK_CATEGORY))
      .bind(6, text(KF_KEY_TASK_COMPLEXITY))
      .bind(7, text(KF_KEY_TASK_FORMAT))
      .bind(8, text(KF_KEY_TASK_PATH));
  if (source != task.strings.end()) {
    s.bind(9, sha256_hex(source->second));
  } else {
    s.bind_null(9);
  }
  s.run();
}

void Store::record_attempt(int64_t run, const Job& job, const Verdict& v) {
  // Hash outside the lock: it is the costly part and needs nothing shared.
  const std::string* code = job.find_string(KF_KEY_CANDIDATE_CODE);
  const std::string* diff = job.find_string(KF_KEY_CANDIDATE_DIFF);
  if (code != nullptr && code->empty()) code = nullptr;
  if (diff != nullptr && diff->empty()) diff = nullptr;
  const std::string code_hash = code ? sha256_hex(*code) : "";
  const std::string diff_hash = diff ? sha256_hex(*diff) : "";
  const std::string log_hash = v.log_tail.empty() ? "" : sha256_hex(v.log_tail);
  json metrics = json::object();
  for (const auto& [name, value] : v.metrics) metrics[name] = value;
  const std::string metrics_text = json_text(metrics);

  std::lock_guard lock(mutex_);
  const OwnWrite own(*this);
  Statements& w = writes();
  Transaction tx(w.begin, w.commit, w.rollback);
  if (code) put_artifact(code_hash, "code", *code);
  if (diff) put_artifact(diff_hash, "diff", *diff);
  if (!log_hash.empty()) put_artifact(log_hash, "log", v.log_tail);
  Statement& s = w.attempt;
  s.bind(1, run)
      .bind(2, job.task->id())
      .bind(3, static_cast<int64_t>(job.sample))
      .bind(4, static_cast<int64_t>(v.round))
      .bind(5, static_cast<int64_t>(job.verdicts.size()))
      .bind(6, v.stage)
      .bind(7, v.kind)
      .bind(8, std::string(to_string(v.status)))
      .bind(9, v.route)
      .bind(10, v.error_class)
      .bind(11, v.message)
      .bind(12, log_hash.empty() ? nullptr : &log_hash)
      .bind(13, metrics_text)
      .bind(14, job.find_string(KF_KEY_CANDIDATE_MODEL))
      .bind(15, job.find_number(KF_KEY_CANDIDATE_TOKENS_IN))
      .bind(16, job.find_number(KF_KEY_CANDIDATE_TOKENS_OUT))
      .bind(17, job.find_number(KF_KEY_CANDIDATE_COST))
      .bind(18, v.seconds)
      .bind(19, static_cast<int64_t>(v.cached ? 1 : 0))
      .bind(20, code ? &code_hash : nullptr)
      .bind(21, diff ? &diff_hash : nullptr)
      .bind(22, now_iso())
      .bind(23, std::string(to_string(v.role)))
      .bind(24, static_cast<int64_t>(v.measured ? 1 : 0));
  s.run();
  tx.commit();
}

void Store::record_job(int64_t run, const JobOutcome& o) {
  const std::string code_hash = o.code.empty() ? "" : sha256_hex(o.code);
  // What the candidate did not say stays NULL, as in the attempts.
  auto text = [&](const char* key) -> const std::string* {
    auto it = o.candidate_text.find(key);
    return it == o.candidate_text.end() ? nullptr : &it->second;
  };
  auto number = [&](const char* key) -> std::optional<double> {
    auto it = o.candidate_numbers.find(key);
    return it == o.candidate_numbers.end() ? std::nullopt : std::optional<double>(it->second);
  };
  json rounds = json::array();
  for (size_t r = 0; r < o.compiled_in_round.size(); ++r) {
    if (o.compiled_in_round[r] != 0) rounds.push_back(r);
  }
  const std::string compiled_rounds = json_text(rounds);
  const std::string environment_hash = o.environment.empty() ? "" : sha256_hex(o.environment);

  std::lock_guard lock(mutex_);
  const OwnWrite own(*this);
  Statements& w = writes();
  Transaction tx(w.begin, w.commit, w.rollback);
  if (o.task != nullptr && o.task_id != last_task_) {
    upsert_task(*o.task);
    last_task_ = o.task_id;
  }
  if (!o.code.empty()) put_artifact(code_hash, "code", o.code);
  if (!o.environment.empty()) put_artifact(environment_hash, "environment", o.environment);
  Statement& s = w.job;
  s.bind(1, run)
      .bind(2, o.task_id)
      .bind(3, static_cast<int64_t>(o.sample))
      .bind(4, static_cast<int64_t>(o.job_index))
      .bind(5, std::string(to_string(o.status)))
      .bind(6, static_cast<int64_t>(o.round))
      .bind(7, o.stage)
      .bind(8, o.error_class)
      .bind(9, o.message)
      .bind(10, text(KF_KEY_CANDIDATE_MODEL))
      .bind(11, text(KF_KEY_CANDIDATE_LANGUAGE))
      .bind(12, number(KF_KEY_CANDIDATE_TOKENS_IN))
      .bind(13, number(KF_KEY_CANDIDATE_TOKENS_OUT))
      .bind(14, number(KF_KEY_CANDIDATE_COST))
      .bind(15, o.speedup)
      .bind(16, o.code.empty() ? nullptr : &code_hash)
      .bind(17, static_cast<int64_t>(o.attempts))
      .bind(18, o.seconds)
      .bind(19, now_iso())
      .bind(20, text(KF_KEY_CANDIDATE_DEVICE))
      .bind(21, o.compile_evidence ? &compiled_rounds : nullptr)
      .bind(22, o.eval_seconds)
      .bind(23, o.gen_seconds)
      .bind(24, static_cast<int64_t>(o.cached_attempts))
      .bind(25, o.environment.empty() ? nullptr : &environment_hash);
  s.run();
  tx.commit();
}

int Store::mark_abandoned_runs() {
  std::lock_guard lock(mutex_);
  const OwnWrite own(*this);
  writes();
  Statement update(db_, path_, "UPDATE runs SET status = ?1, ended_at = ?2 WHERE status = ?3");
  update.bind(1, std::string(to_string(RunStatus::Interrupted)))
      .bind(2, now_iso())
      .bind(3, std::string(to_string(RunStatus::Running)))
      .run();
  return sqlite3_changes(db_);
}

void Store::forget_jobs(int64_t series, const std::set<std::pair<std::string, int>>& jobs) {
  std::lock_guard lock(mutex_);
  const OwnWrite own(*this);
  Statements& w = writes();
  Transaction tx(w.begin, w.commit, w.rollback);
  Statement remove(db_, path_,
                   "DELETE FROM jobs WHERE task_id = ?2 AND sample = ?3 AND run_id IN "
                   "(SELECT id FROM runs WHERE series = ?1)");
  for (const auto& [task, sample] : jobs) remove.bind(1, series).bind(2, task).bind(3, static_cast<int64_t>(sample)).run();
  tx.commit();
}

std::map<std::string, uint64_t> Store::count_jobs(int64_t run) {
  std::lock_guard lock(mutex_);
  Statement q(db_, path_, "SELECT status, COUNT(*) FROM jobs WHERE run_id = ?1 GROUP BY status");
  q.bind(1, run);
  std::map<std::string, uint64_t> counts;
  while (q.step()) counts[q.text(0)] = static_cast<uint64_t>(q.integer(1));
  return counts;
}

bool Store::finished(int64_t series, const std::string& task_id, int sample) {
  std::lock_guard lock(mutex_);
  Statement& q = writes().finished;
  q.bind(1, series).bind(2, task_id).bind(3, static_cast<int64_t>(sample));
  bool found = false;
  while (q.step()) found = true;
  return found;
}

uint64_t Store::count_finished(int64_t series) {
  std::lock_guard lock(mutex_);
  Statement q(db_, path_, "SELECT COUNT(*) FROM jobs JOIN runs ON runs.id = jobs.run_id WHERE runs.series = ?1");
  q.bind(1, series);
  uint64_t count = 0;
  while (q.step()) count = static_cast<uint64_t>(q.integer(0));
  return count;
}

std::unique_ptr<Store> open_store_read_only(const std::string& out_dir) {
  return std::make_unique<Store>((std::filesystem::path(out_dir) / kStoreFileName).string(), StoreMode::ReadOnly);
}

}  // namespace kforge
