#include "run/agreement.hpp"

#include <kforge/sha256.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <vector>

#include "store/scratch.hpp"

namespace kforge {
namespace {

using Json = nlohmann::json;  // sorted keys, as Store::visit_result_facts writes them
using JobKey = std::pair<std::string, int>;
using sql::Statement;

constexpr size_t kNamed = 10;        // disagreements a message names; the rest are counted
constexpr size_t kShownChars = 160;  // of a value or a line quoted in a message
// Far beyond any line kforge writes (no log tails, no code): a flood written into the file
// is skipped past, not held in memory.
constexpr size_t kMaxLineBytes = size_t{16} << 20;

// The keys of a line that the store records, in the line's order (result_line): the
// candidate's other attributes are the line's alone and are not compared.
constexpr const char* kRecorded[] = {
    "job",      "task",   "task_index", "sample",    "round",      "status", "stage",       "error_class", "message",
    "model",    "language", "device",   "tokens_in", "tokens_out", "cost",   "environment", "stages"};

std::string canonical(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string shortened(std::string text) {
  if (text.size() > kShownChars) text = text.substr(0, kShownChars) + "...";
  return text;
}

std::string shown(const Json& value) { return shortened(canonical(value)); }

std::string job_name(const JobKey& job) { return fmt::format("job (task '{}', sample {})", job.first, job.second); }

Json recorded_part(const Json& line) {
  Json part = Json::object();
  for (const char* key : kRecorded) {
    if (auto it = line.find(key); it != line.end()) part[key] = *it;
  }
  return part;
}

// Where `line` first differs from `stored` (equal canonical texts never reach here): a
// whole line's keys in the line's order, so a forged status is named before its message.
std::string first_difference(const Json& line, const Json& stored, const std::string& where) {
  if (line.is_object() && stored.is_object()) {
    std::vector<std::string> keys(std::begin(kRecorded), std::end(kRecorded));
    if (!where.empty()) {
      std::set<std::string> inner;
      for (const auto& [key, value] : line.items()) inner.insert(key);
      for (const auto& [key, value] : stored.items()) inner.insert(key);
      keys.assign(inner.begin(), inner.end());
    }
    for (const std::string& key : keys) {
      if (!line.contains(key) && !stored.contains(key)) continue;
      const std::string inner = where.empty() ? key : where + "." + key;
      if (!line.contains(key)) {
        return fmt::format("{}: the line has none, the store says {}", inner, shown(stored[key]));
      }
      if (!stored.contains(key)) {
        return fmt::format("{}: the line says {}, the store has none", inner, shown(line[key]));
      }
      if (canonical(line[key]) != canonical(stored[key])) return first_difference(line[key], stored[key], inner);
    }
  }
  if (line.is_array() && stored.is_array()) {
    for (size_t i = 0; i < std::min(line.size(), stored.size()); ++i) {
      if (canonical(line[i]) != canonical(stored[i])) {
        return first_difference(line[i], stored[i], fmt::format("{}[{}]", where, i));
      }
    }
    if (line.size() != stored.size()) {
      return fmt::format("{}: the line has {} entries, the store {}", where, line.size(), stored.size());
    }
  }
  return fmt::format("{}: the line says {}, the store says {}", where, shown(line), shown(stored));
}

bool has_room(const ResultsCheck& check) { return check.named.size() < kNamed; }

void name(ResultsCheck& check, std::string what) {
  if (has_room(check)) {
    check.named.push_back(std::move(what));
  } else {
    ++check.unnamed;
  }
}

// The store's side: a digest per finished job, and a look-up of one job when a message
// must say what the store holds. The digests are kept in a scratch database, not in
// memory: a run of any size is checked in the same few MB.
class StoredJobs {
 public:
  StoredJobs(Store& store, int64_t series) : store_(store), series_(series) {
    // One transaction for the whole check: nothing here is kept.
    scratch_.exec("BEGIN");
    Statement insert(scratch_.db(), scratch_.name(),
                     "INSERT INTO jobs (task, sample, digest, run) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING");
    store.visit_result_facts(series, [&](const JobKey& job, int64_t run, const std::string& facts) {
      insert.bind(1, job.first).bind(2, static_cast<int64_t>(job.second)).bind(3, sha256_hex(facts)).bind(4, run).run();
      if (sqlite3_changes(scratch_.db()) == 0) {
        problems_.push_back(fmt::format("the store holds {} twice (runs {} and {})", job_name(job), find(job)->run, run));
      }
    });
  }

  // Empty when `text` (line `number`, without its newline) is the line of a job the store
  // finished, the first to agree for it, saying what the store records; otherwise why not,
  // and with `explain`, what the store says (one more look-up).
  std::string judge(const std::string& text, uint64_t number, bool explain) {
    const Json line = Json::parse(text, nullptr, false);
    if (line.is_discarded() || !line.is_object()) {
      return fmt::format("not a JSON object: {}", text.empty() ? "an empty line" : shortened(text));
    }
    const auto task = line.find("task"), sample = line.find("sample");
    if (task == line.end() || !task->is_string() || sample == line.end() || !sample->is_number_integer()) {
      return "names no job (a results line has a string \"task\" and an integer \"sample\")";
    }
    const JobKey key{task->get<std::string>(), sample->get<int>()};
    const std::optional<Job> job = find(key);
    if (!job) return fmt::format("{} is not a job the store finished in this run series", job_name(key));
    if (job->agreed_on != 0) return fmt::format("{} again (line {} is its line)", job_name(key), job->agreed_on);
    const Json part = recorded_part(line);
    const bool agrees = sha256_hex(canonical(part)) == job->digest;
    mark_.bind(1, key.first).bind(2, static_cast<int64_t>(key.second)).bind(3, static_cast<int64_t>(agrees ? number : 0)).run();
    if (agrees) return "";
    if (!explain) return fmt::format("{} disagrees with the store", job_name(key));
    const Json stored = facts(key);
    return fmt::format("{}, which the store has as {}: {}", job_name(key), verdict(stored),
                       first_difference(part, stored, ""));
  }

  // Jobs no line agreed with, in (task id, sample) order. Those no line even named are
  // named in `check` while it has room, with the store's verdict.
  std::vector<JobKey> unmatched(ResultsCheck& check) {
    std::vector<JobKey> out;
    Statement q(scratch_.db(), scratch_.name(), "SELECT task, sample, named FROM jobs WHERE agreed_on = 0 ORDER BY task, sample");
    while (q.step()) {
      const JobKey key{q.text(0), static_cast<int>(q.integer(1))};
      out.push_back(key);
      if (q.integer(2) != 0) continue;
      if (has_room(check)) {
        check.named.push_back(
            fmt::format("no line for {}, which the store finished as {}", job_name(key), verdict(facts(key))));
      } else {
        ++check.unnamed;
      }
    }
    return out;
  }

  const std::vector<std::string>& problems() const { return problems_; }

 private:
  struct Job {
    std::string digest;  // of the store's facts' canonical text
    int64_t run = 0;
    uint64_t agreed_on = 0;  // the line that agreed; 0: none yet
  };

  std::optional<Job> find(const JobKey& key) {
    find_.bind(1, key.first).bind(2, static_cast<int64_t>(key.second));
    std::optional<Job> job;
    while (find_.step()) job = Job{find_.text(0), find_.integer(1), static_cast<uint64_t>(find_.integer(2))};
    return job;
  }

  Json facts(const JobKey& key) {
    Json stored = Json::object();
    store_.visit_result_facts(
        series_, [&](const JobKey&, int64_t, const std::string& text) { stored = Json::parse(text); }, &key);
    return stored;
  }

  static std::string verdict(const Json& stored) {
    const std::string status = stored.value("status", "");
    const std::string error = stored.value("error_class", "");
    return error.empty() ? status : status + " (" + error + ")";
  }

  Store& store_;
  int64_t series_;
  sql::ScratchDb scratch_{
      "CREATE TABLE jobs (task TEXT NOT NULL, sample INTEGER NOT NULL, digest TEXT NOT NULL, run INTEGER NOT NULL, "
      "agreed_on INTEGER NOT NULL DEFAULT 0, named INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (task, sample)) "
      "WITHOUT ROWID"};
  Statement find_{scratch_.db(), scratch_.name(), "SELECT digest, run, agreed_on FROM jobs WHERE task = ?1 AND sample = ?2"};
  // Some line named the job; the line that agreed with it, if this one did.
  Statement mark_{scratch_.db(), scratch_.name(),
                  "UPDATE jobs SET named = 1, agreed_on = MAX(agreed_on, ?3) WHERE task = ?1 AND sample = ?2"};
  std::vector<std::string> problems_;
};

// The lines of a file, each without its newline, read once.
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "rb")) {
    if (file_ == nullptr && errno != ENOENT) {
      throw std::runtime_error(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
    }
  }
  ~LineReader() {
    if (file_ != nullptr) std::fclose(file_);
  }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line into `text`, at most kMaxLineBytes of it (`cut`: more was skipped);
  // `torn`: the file ends without its newline. False at the end of the file.
  bool next(std::string& text, bool& cut, bool& torn) {
    text.clear();
    cut = torn = false;
    if (file_ == nullptr) return false;
    int c = getc_unlocked(file_);
    if (c == EOF) return done();
    for (; c != EOF && c != '\n'; c = getc_unlocked(file_)) {
      if (text.size() < kMaxLineBytes) {
        text.push_back(static_cast<char>(c));
      } else {
        cut = true;
      }
    }
    torn = c == EOF;
    if (torn) done();
    return true;
  }

 private:
  bool done() const {
    if (std::ferror(file_)) throw std::runtime_error(fmt::format("cannot read '{}': {}", path_, std::strerror(errno)));
    return false;
  }
  std::string path_;
  std::FILE* file_;
};

// One pass over the file; `keep` (may be null) gets every line that agrees.
ResultsCheck scan(const std::string& path, Store& store, int64_t series, std::ostream* keep) {
  StoredJobs stored(store, series);
  ResultsCheck check;
  for (const std::string& problem : stored.problems()) name(check, problem);
  LineReader in(path);
  std::string text;
  bool cut = false, torn = false;
  while (in.next(text, cut, torn)) {
    ++check.lines;
    std::string why = torn  ? "torn: it has no newline at its end"  // a write cut off mid-line
                      : cut ? fmt::format("longer than {} MiB: not a line kforge writes", kMaxLineBytes >> 20)
                            : stored.judge(text, check.lines, has_room(check));
    if (why.empty()) {
      if (keep) *keep << text << '\n';
      continue;
    }
    ++check.disagreeing;
    name(check, fmt::format("{}:{}: {}", path, check.lines, why));
  }
  check.unmatched = stored.unmatched(check);
  return check;
}

}  // namespace

std::string ResultsCheck::describe() const {
  std::string text = fmt::format(
      "results.jsonl disagrees with the store (kforge.db): {} of its {} line{} disagree{}, {} job{} the store finished "
      "{} no line that agrees",
      disagreeing, lines, lines == 1 ? "" : "s", disagreeing == 1 ? "s" : "", unmatched.size(),
      unmatched.size() == 1 ? "" : "s", unmatched.size() == 1 ? "has" : "have");
  for (const std::string& what : named) text += "\n  " + what;
  if (unnamed > 0) text += fmt::format("\n  ... and {} more", unnamed);
  return text;
}

ResultsCheck check_results(const std::string& path, Store& store, int64_t series) {
  return scan(path, store, series, nullptr);
}

ResultsCheck reconcile_results(const std::string& path, Store& store, int64_t series) {
  const std::string fresh = path + ".reconciled";
  ResultsCheck check;
  {
    std::ofstream out(fresh, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(fmt::format("cannot write '{}': {}", fresh, std::strerror(errno)));
    check = scan(path, store, series, &out);
    out.flush();
    if (!out) throw std::runtime_error(fmt::format("cannot write '{}': {}", fresh, std::strerror(errno)));
  }
  std::filesystem::rename(fresh, path);
  return check;
}

}  // namespace kforge
