#include "harness_client.hpp"

#include "process.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <thread>

namespace kforge::eval {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// The harness needs this long beyond a child's own limit to fork, compare and answer;
// the margin leaves the stage enough of its time to hear the harness' timeout verdict:
// 2 s, or a fifth of a shorter stage's time (a 1 s stage still runs its child for 0.8 s).
// The engine gives a stage a little beyond its timeout to answer before abandoning it.
constexpr double kAnswerGraceSeconds = 30;
constexpr double kStageMarginSeconds = 2;
constexpr double kStageMarginShare = 0.2;
constexpr double kLeastChildSeconds = 0.1;

// How often a waiting caller looks at the run's cancellation flag.
constexpr auto kCancelPoll = std::chrono::milliseconds(200);

// What a reader keeps of the server's stderr for error messages.
constexpr size_t kStderrTailBytes = 6000;
// How long a closing server may take to exit after EOF. Nobody waits for its answers any
// more (whoever did has given up), so children still running are orphans: it is killed,
// and its children with it (they die with their parent), after this grace.
constexpr double kShutdownSeconds = 2;
// A Slurm server's srun, told to stop (SIGTERM), withdraws its pending job or ends its step
// through the controller; killed if it has not exited after this.
constexpr double kSlurmStopSeconds = 10;

Clock::time_point deadline_after(double seconds) {
  if (!std::isfinite(seconds) || seconds > 1e7) seconds = 1e7;
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(std::max(0.0, seconds)));
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

void append_tail(std::string& tail, std::string_view text, size_t limit) {
  tail.append(text);
  if (tail.size() > limit) tail.erase(0, tail.size() - limit);
}

// The first bytes of a line for a message: printable ASCII as it is, any other byte as
// \xNN, so that the message is valid text whatever the line held.
std::string line_excerpt(std::string_view line, size_t limit = 300) {
  std::string out;
  for (size_t i = 0; i < line.size() && i < limit; ++i) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  if (line.size() > limit) out += "...";
  return out;
}

}  // namespace

// The id of an answer line that is not valid JSON as a whole: the server writes every
// answer as {"id": ..., ...} with the id first (protocol.response), and the id is this
// client's own (digits, in a string), so the prefix up to it still names the request.
// nullopt when the line does not start so.
std::optional<std::string> leading_answer_id(std::string_view line) {
  size_t at = 0;
  auto skip_space = [&] {
    while (at < line.size() && (line[at] == ' ' || line[at] == '\t' || line[at] == '\r')) ++at;
  };
  auto expect = [&](std::string_view token) {
    skip_space();
    if (line.substr(at, token.size()) != token) return false;
    at += token.size();
    return true;
  };
  if (!expect("{") || !expect("\"id\"") || !expect(":")) return std::nullopt;
  skip_space();
  const bool quoted = at < line.size() && line[at] == '"';
  if (quoted) ++at;
  const size_t start = at;
  while (at < line.size() && line[at] >= '0' && line[at] <= '9') ++at;
  if (at == start || at - start > 20) return std::nullopt;
  const std::string id(line.substr(start, at - start));
  if (quoted && (at >= line.size() || line[at] != '"')) return std::nullopt;
  if (quoted) ++at;
  skip_space();
  if (at >= line.size() || (line[at] != ',' && line[at] != '}')) return std::nullopt;
  return id;
}

namespace {

}  // namespace

CallBudget CallBudget::of(double child_timeout_seconds, double stage_seconds_left, std::function<bool()> cancelled) {
  CallBudget budget;
  budget.child_timeout_seconds = child_timeout_seconds;
  budget.cancelled = std::move(cancelled);
  if (std::isfinite(stage_seconds_left)) budget.stage_deadline = deadline_after(stage_seconds_left);
  return budget;
}

double CallBudget::stage_seconds_left() const {
  if (stage_deadline == Clock::time_point::max()) return std::numeric_limits<double>::infinity();
  return std::chrono::duration<double>(stage_deadline - Clock::now()).count();
}

std::optional<RequestBudget> request_budget(double child_timeout_seconds, double stage_seconds_left, int children) {
  RequestBudget budget;
  if (!std::isfinite(stage_seconds_left)) {
    budget.child_timeout_seconds = child_timeout_seconds;
    budget.wait_seconds = children * child_timeout_seconds + kAnswerGraceSeconds;
    return budget;
  }
  const double margin = std::min(kStageMarginSeconds, kStageMarginShare * stage_seconds_left);
  budget.child_timeout_seconds = std::min(child_timeout_seconds, stage_seconds_left - margin);
  if (budget.child_timeout_seconds < kLeastChildSeconds) return std::nullopt;
  budget.wait_seconds = std::min(children * budget.child_timeout_seconds + kAnswerGraceSeconds, stage_seconds_left);
  return budget;
}

std::string HarnessServerSpec::key() const {
  return python + '\n' + harness_dir + '\n' + arena_allocator + '\n' + device + '\n' + mode + '\n' + std::to_string(max_children) + '\n' +
         std::to_string(reference_store_mb) + '\n' + (slurm ? slurm->key() : std::string("local")) + '\n' +
         std::to_string(member);
}

HarnessResponse HarnessResponse::harness_error(std::string message, std::string log_tail) {
  HarnessResponse r;
  r.status = "error";
  r.error_class = "harness_error";
  r.message = std::move(message);
  r.log_tail = std::move(log_tail);
  return r;
}

HarnessResponse HarnessResponse::from_json(const json& body) {
  HarnessResponse r;
  auto text = [&](const char* key) {
    auto it = body.find(key);
    return it != body.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  r.status = text("status");
  r.error_class = text("error_class");
  r.message = text("message");
  r.log_tail = text("log_tail");
  if (auto it = body.find("findings"); it != body.end() && it->is_array()) r.findings = *it;
  if (auto it = body.find("extracted"); it != body.end() && it->is_object()) r.extracted = *it;
  if (auto it = body.find("metrics"); it != body.end() && it->is_object()) r.metrics = *it;
  if (auto it = body.find("task_sizes"); it != body.end() && it->is_object()) r.task_sizes = *it;
  if (auto it = body.find("flags"); it != body.end() && it->is_array()) {
    for (const json& flag : *it) {
      if (flag.is_string()) r.flags.push_back(flag.get<std::string>());
    }
  }
  if (r.status != "pass" && r.status != "fail" && r.status != "error") {
    return harness_error("the harness answered with status '" + r.status +
                         "' (expected pass, fail or error): " + body.dump().substr(0, 500));
  }
  return r;
}

// One run of the server process: from spawn to death. A dead one is replaced, never revived.
// A Slurm server's process is srun: its step prints where Slurm placed it before the
// server starts, and it is stopped through srun (SIGTERM: srun withdraws a pending job,
// or ends its step) before it is killed.
class HarnessServer::Process {
 public:
  enum class State { Starting, Ready, NotReady, Dead };

  Process(const HarnessServerSpec& spec, std::vector<std::string> excluded_nodes, std::function<void()> notify)
      : spec_(spec), excluded_nodes_(std::move(excluded_nodes)), notify_(std::move(notify)) {}

  ~Process() {
    if (reader_.joinable()) reader_.join();
  }

  // Spawns the server and its reader thread. Throws SpawnError.
  void start() {
    const std::vector<std::string> server = {spec_.python, "-m", "kforge_harness", "serve", "--device", spec_.device,
                                             "--mode", spec_.mode, "--max-children", std::to_string(spec_.max_children),
                                             "--reference-store-mb", std::to_string(spec_.reference_store_mb)};
    std::map<std::string, std::string> env = {{"PYTHONPATH", spec_.harness_dir}, {"PYTHONUNBUFFERED", "1"}};
    // Where a CUDA candidate child loads its arena's allocator from (handover/arena.py).
    if (!spec_.arena_allocator.empty()) env["KFORGE_ARENA_ALLOCATOR"] = spec_.arena_allocator;
    const SpawnSpec command = launch_command(server, env, spec_.slurm, excluded_nodes_);
    command_text_ = command_text(command);
    child_ = spawn_process(command, ChildStdin::Pipe, ChildStderr::Separate);
    reader_ = std::thread([this] { read_loop(); });
  }

  State state() const {
    std::lock_guard lock(mutex_);
    return state_;
  }
  std::string failure() const {
    std::lock_guard lock(mutex_);
    return failure_;
  }
  bool sticky_failure() const {
    std::lock_guard lock(mutex_);
    return sticky_;
  }
  pid_t pid() const { return child_.pid; }
  json ready_info() const {
    std::lock_guard lock(mutex_);
    return ready_;
  }
  std::optional<SlurmStep> step() const {
    std::lock_guard lock(mutex_);
    return step_;
  }

  // Registers the request and writes it; nullopt (with `error`) when the server is gone.
  // `on_need` hears the request's need line, if one comes (PROTOCOL.md).
  std::optional<std::future<HarnessResponse>> submit(const std::string& id, const std::string& line,
                                                     NeedListener on_need, std::string& error) {
    std::future<HarnessResponse> answer;
    {
      std::lock_guard lock(mutex_);
      if (state_ != State::Ready) {
        error = failure_.empty() ? "the harness server is not running" : failure_;
        return std::nullopt;
      }
      answer = pending_[id].get_future();
      if (on_need) need_listeners_[id] = std::move(on_need);
    }
    std::lock_guard write_lock(write_mutex_);
    size_t sent = 0;
    while (sent < line.size()) {
      const ssize_t n = ::send(child_.stdin_fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error = std::string("cannot send the request to the harness server (pid ") +
                std::to_string(child_.pid) + "): " + std::strerror(errno);
        forget(id);
        return std::nullopt;
      }
      sent += static_cast<size_t>(n);
    }
    return answer;
  }

  void forget(const std::string& id) {
    std::lock_guard lock(mutex_);
    pending_.erase(id);
    need_listeners_.erase(id);
  }

  // EOF on stdin: the server finishes the requests it has and exits.
  void close_input() {
    std::lock_guard write_lock(write_mutex_);
    if (child_.stdin_fd >= 0) ::shutdown(child_.stdin_fd, SHUT_WR);
  }

  // EOF, then killed if it lingers: nobody waits for its answers any more.
  void shut_down() {
    close_input();
    std::unique_lock lock(mutex_);
    const bool ended =
        ended_.wait_until(lock, deadline_after(spec_.slurm ? kSlurmStopSeconds : kShutdownSeconds), [&] { return finished_; });
    lock.unlock();
    if (!ended) kill_process_group(child_.pid);
    if (reader_.joinable()) reader_.join();
  }

 private:
  enum class Timeout { None, Placement, Start };

  void read_loop() {
    // A Slurm step's time to be placed is limited apart from the server's time to start.
    auto start_deadline = deadline_after(spec_.slurm ? spec_.slurm->place_timeout_seconds : spec_.start_timeout_seconds);
    bool placement_seen = !spec_.slurm;
    Timeout timed_out = Timeout::None;
    std::optional<Clock::time_point> kill_at;  // a Slurm server told to stop is killed if it lingers
    std::string out_buffer;
    bool out_open = true, err_open = true;
    int wait_status = 0;
    bool reaped = false;
    char chunk[65536];
    while (out_open && !reaped) {
      if (!placement_seen && step()) {
        placement_seen = true;
        start_deadline = deadline_after(spec_.start_timeout_seconds);
      }
      if (state() == State::Starting && Clock::now() > start_deadline && timed_out == Timeout::None) {
        timed_out = placement_seen ? Timeout::Start : Timeout::Placement;
        kill_at = stop();
      }
      if (kill_at && Clock::now() > *kill_at) kill_process_group(child_.pid);
      pollfd fds[2] = {{child_.stdout_fd, POLLIN, 0}, {err_open ? child_.stderr_fd : -1, POLLIN, 0}};
      const int ready = ::poll(fds, 2, 250);
      if (ready < 0 && errno != EINTR) break;
      if (ready > 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
        const ssize_t n = ::read(child_.stderr_fd, chunk, sizeof chunk);
        if (n > 0) {
          std::lock_guard lock(mutex_);
          append_tail(stderr_tail_, std::string_view(chunk, static_cast<size_t>(n)), kStderrTailBytes);
        } else if (n == 0 || errno != EINTR) {
          err_open = false;
        }
      }
      if (ready > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
        const ssize_t n = ::read(child_.stdout_fd, chunk, sizeof chunk);
        if (n > 0) {
          out_buffer.append(chunk, static_cast<size_t>(n));
          size_t newline;
          while ((newline = out_buffer.find('\n')) != std::string::npos) {
            handle_line(out_buffer.substr(0, newline));
            out_buffer.erase(0, newline + 1);
          }
        } else if (n == 0 || errno != EINTR) {
          out_open = false;
        }
      }
      // A server whose forked children still hold its stdout open is dead all the same.
      if (::waitpid(child_.pid, &wait_status, WNOHANG) == child_.pid) reaped = true;
    }
    // Whatever happened, no part of this server may outlive it.
    if (!reaped && spec_.slurm) {
      const auto until = stop();
      while (Clock::now() < until && !reaped) {
        if (::waitpid(child_.pid, &wait_status, WNOHANG) == child_.pid) {
          reaped = true;
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      }
    }
    kill_process_group(child_.pid);
    if (!reaped) {
      while (::waitpid(child_.pid, &wait_status, 0) < 0 && errno == EINTR) {
      }
    }
    // srun that did not end on its own may leave its step behind (inside an allocation, a
    // step outlives a killed srun).
    if (const auto placed = step(); placed && !(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0)) {
      cancel_slurm_step(*placed);
    }
    // The server is gone, but its last lines may still sit in the pipes (and its forked
    // children, in process groups of their own, may hold them open): take what is there
    // without waiting for EOF.
    if (out_open) {
      drain(child_.stdout_fd, [&](std::string_view text) { out_buffer.append(text); });
      size_t newline;
      while ((newline = out_buffer.find('\n')) != std::string::npos) {
        handle_line(out_buffer.substr(0, newline));
        out_buffer.erase(0, newline + 1);
      }
    }
    if (err_open) {
      drain(child_.stderr_fd, [&](std::string_view text) {
        std::lock_guard lock(mutex_);
        append_tail(stderr_tail_, text, kStderrTailBytes);
      });
    }
    ::close(child_.stdout_fd);
    ::close(child_.stderr_fd);
    {
      std::lock_guard write_lock(write_mutex_);
      ::close(child_.stdin_fd);
      child_.stdin_fd = -1;
    }
    finish(wait_status, timed_out);
  }

  // Tells the server to stop now and returns when it must be killed if it has not: a local
  // one is killed at once; srun gets SIGTERM (a pending job withdrawn, a running step ended)
  // and a few seconds.
  Clock::time_point stop() {
    if (!spec_.slurm) {
      kill_process_group(child_.pid);
      return Clock::now();
    }
    ::kill(-child_.pid, SIGTERM);
    return deadline_after(kSlurmStopSeconds);
  }

  static void drain(int fd, const std::function<void(std::string_view)>& take) {
    char chunk[65536];
    pollfd pfd{fd, POLLIN, 0};
    while (::poll(&pfd, 1, 50) > 0 && (pfd.revents & POLLIN)) {
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n <= 0) break;
      take(std::string_view(chunk, static_cast<size_t>(n)));
    }
  }

  void handle_line(const std::string& line) {
    json body = json::parse(line, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      unreadable_line(line);
      return;
    }
    if (body.contains("ready")) {
      handle_ready(body);
      return;
    }
    if (spec_.slurm) {
      if (auto placed = placement_of(body)) {
        std::lock_guard lock(mutex_);
        if (!step_) step_ = std::move(placed);
        return;
      }
    }
    std::string id;
    if (auto it = body.find("id"); it != body.end()) id = it->is_string() ? it->get<std::string>() : it->dump();
    if (!body.contains("status")) {
      // A need line, told to whoever waits for the answer; nothing else comes without
      // a status.
      const auto need = body.find("need_mb");
      NeedListener listener;
      {
        std::lock_guard lock(mutex_);
        if (auto it = need_listeners_.find(id); it != need_listeners_.end()) listener = it->second;
      }
      if (!listener || need == body.end() || !need->is_number() || need->get<double>() < 0) return;
      Need told{need->get<double>(), std::nullopt};
      if (const auto memory = body.find("device_memory_mb");
          memory != body.end() && memory->is_number() && memory->get<double>() > 0) {
        told.device_memory_mb = memory->get<double>();
      }
      listener(told);
      return;
    }
    std::promise<HarnessResponse> waiter;
    {
      std::lock_guard lock(mutex_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return;  // its caller gave up waiting
      waiter = std::move(it->second);
      pending_.erase(it);
      need_listeners_.erase(id);
    }
    waiter.set_value(HarnessResponse::from_json(body));
  }

  // A line on the server's stdout that is not a JSON object. Before the server is ready
  // it is noise from its start (kept for the error message). After, the request it
  // answers is told at once, with why its answer could not be read; a line that names no
  // request means the stream cannot be trusted to pair answers with requests: the server
  // is killed, every request in flight told why, and the next request starts a fresh one.
  // Waiting out the requests' budgets would only turn the server's fault into timeouts.
  void unreadable_line(const std::string& line) {
    std::string why;
    try {
      [[maybe_unused]] const json parsed = json::parse(line);
      why = "it is JSON but not an object";
    } catch (const json::exception& e) {
      why = line_excerpt(e.what(), 500);
    }
    std::promise<HarnessResponse> waiter;
    std::string tail;
    const std::optional<std::string> id = leading_answer_id(line);
    {
      std::lock_guard lock(mutex_);
      append_tail(stderr_tail_, "[stdout] " + line_excerpt(line, 2000) + "\n", kStderrTailBytes);
      if (state_ != State::Ready) return;
      tail = stderr_tail_;
      if (!id) {
        if (!protocol_failure_.empty()) return;  // killed already
        protocol_failure_ = "the harness server (pid " + std::to_string(child_.pid) + ", " + spec_.device +
                            ") wrote a line that is not a JSON answer and names no request (" + why +
                            "; it begins: " + line_excerpt(line) +
                            "), so its answers can no longer be paired with requests: it was killed, the "
                            "requests in flight are lost, and the server restarts for the next one";
      } else {
        auto it = pending_.find(*id);
        if (it == pending_.end()) return;  // its caller gave up waiting
        waiter = std::move(it->second);
        pending_.erase(it);
      }
    }
    if (!id) {
      kill_process_group(child_.pid);  // the reader sees the end and fails what is pending
      return;
    }
    waiter.set_value(HarnessResponse::harness_error(
        "the harness server's answer to this request is not valid JSON, so its verdict could not be read (" +
            why + "; it begins: " + line_excerpt(line) + "). The harness must write every answer as valid JSON "
            "(protocol.encode); this is the harness's fault, not the candidate's",
        tail));
  }

  void handle_ready(const json& body) {
    {
      std::lock_guard lock(mutex_);
      if (state_ != State::Starting) return;
      if (body.value("ready", false)) {
        state_ = State::Ready;
        ready_ = body;
      } else {
        state_ = State::NotReady;
        sticky_ = true;
        const auto error = body.find("error");
        failure_ = "the harness server for " + where() + " is not ready: " +
                   (error != body.end() && error->is_string() ? error->get<std::string>() : body.dump()) +
                   " (" + command_text_ + ")";
      }
    }
    notify_();
  }

  void finish(int wait_status, Timeout timed_out) {
    std::map<std::string, std::promise<HarnessResponse>> orphans;
    std::string message, tail, node;
    {
      std::lock_guard lock(mutex_);
      tail = stderr_tail_;
      std::string slurm_said = spec_.slurm ? slurm_messages(stderr_tail_) : std::string();
      if (!slurm_said.empty()) slurm_said = "; " + slurm_said;
      if (step_) node = step_->node;
      if (state_ == State::Starting) {
        state_ = State::NotReady;
        if (timed_out == Timeout::Placement) {
          // Another try would wait in the same queue: this server is given up for the run.
          sticky_ = true;
          failure_ = "Slurm did not place the harness server for " + where() + " within " +
                     seconds_text(spec_.slurm->place_timeout_seconds) + " s; its request was withdrawn" + slurm_said +
                     ". The run goes on with the servers that were placed; to get this one, raise "
                     "slurm_place_timeout, ask less of each server (gpus_per_server, cpus_per_server, "
                     "slurm_constraint) or check the partition (sinfo, squeue --start). (" + command_text_ + ")";
        } else if (timed_out == Timeout::Start) {
          failure_ = "the harness server for " + where() + " did not say it was ready within " +
                     seconds_text(spec_.start_timeout_seconds) + " s and was stopped (" + command_text_ + ")";
        } else if (spec_.slurm && step_) {
          // Placed, then gone before it was ready: the node's trouble, not the setup's.
          failure_ = "the harness server for " + where() + " exited before it was ready (" +
                     describe_wait_status(wait_status) + slurm_said + "; " + command_text_ + ")";
        } else {
          sticky_ = true;
          failure_ = spec_.slurm ? "srun could not start the harness server's step for " + where() + " (" +
                                       describe_wait_status(wait_status) + slurm_said + "; " + command_text_ + ")"
                                 : "the harness server for " + where() + " exited before it was ready (" +
                                       describe_wait_status(wait_status) + "; " + command_text_ + ")";
        }
        if (!tail.empty()) failure_ += "; its stderr ends with:\n" + tail;
      } else if (state_ == State::Ready) {
        state_ = State::Dead;
        failure_ = !protocol_failure_.empty()
                       ? protocol_failure_
                       : "the harness server (pid " + std::to_string(child_.pid) + ", " + where() +
                             ") died: " + describe_wait_status(wait_status) + slurm_said +
                             "; the request was lost and the server restarts for the next one";
      }
      message = failure_;
      orphans.swap(pending_);
      need_listeners_.clear();
      finished_ = true;
    }
    for (auto& [id, waiter] : orphans) {
      HarnessResponse lost = HarnessResponse::harness_error(message, tail);
      lost.server_lost = true;
      lost.node = node;
      waiter.set_value(std::move(lost));
    }
    ended_.notify_all();
    notify_();
  }

  // The device, and for a Slurm server where it runs: "cuda:0 on node gpu07, Slurm step 4711.3".
  std::string where() const {  // mutex_ held or not needed
    std::string text = spec_.device;
    if (spec_.slurm) {
      text += " (server " + std::to_string(spec_.member + 1) + " of a Slurm pool";
      text += step_ ? ", on " + step_->describe() + ")" : ")";
    }
    return text;
  }

  static std::string command_text(const SpawnSpec& command) {
    std::string text;
    for (const auto& [key, value] : command.env) text += key + "=" + value + " ";
    for (const std::string& arg : command.argv) {
      const bool plain = arg.find_first_of(" '\"$;") == std::string::npos;
      text += (plain ? arg : "'" + arg + "'") + " ";
    }
    if (!text.empty()) text.pop_back();
    return text;
  }

  const HarnessServerSpec spec_;
  const std::vector<std::string> excluded_nodes_;
  const std::function<void()> notify_;
  std::string command_text_;
  ChildProcess child_;
  std::thread reader_;
  mutable std::mutex mutex_;
  std::condition_variable ended_;
  std::mutex write_mutex_;
  State state_ = State::Starting;
  bool sticky_ = false;
  bool finished_ = false;
  std::string failure_;
  std::string protocol_failure_;  // set (by the reader) when an unreadable line named no request
  std::string stderr_tail_;
  json ready_;
  std::optional<SlurmStep> step_;
  std::map<std::string, std::promise<HarnessResponse>> pending_;
  std::map<std::string, NeedListener> need_listeners_;  // by request id
};

HarnessServer::HarnessServer(HarnessServerSpec spec)
    : spec_(std::move(spec)), free_slots_(std::max(1, spec_.max_children)) {}

HarnessServer::~HarnessServer() {
  std::shared_ptr<Process> last;
  std::vector<std::shared_ptr<Process>> retired;
  {
    std::lock_guard lock(mutex_);
    last = std::move(process_);
    retired.swap(retired_);
  }
  if (last) last->shut_down();
  // Replaced ones may still be finishing their requests: nobody waits for them now.
  for (const auto& process : retired) process->shut_down();
}

pid_t HarnessServer::pid() const {
  std::lock_guard lock(mutex_);
  return process_ && process_->state() == Process::State::Ready ? process_->pid() : -1;
}

json HarnessServer::ready_info() const {
  std::lock_guard lock(mutex_);
  return process_ && process_->state() == Process::State::Ready ? process_->ready_info() : json();
}

json HarnessServer::started_ready_info(Clock::time_point deadline) {
  std::string error;
  const std::shared_ptr<Process> process = running_process(deadline, error);
  if (!process) throw std::runtime_error(error);
  return process->ready_info();
}

HarnessServer::Availability HarnessServer::availability() const {
  std::lock_guard lock(mutex_);
  if (!not_ready_error_.empty()) return Availability::Failed;
  if (!process_) return Availability::Stopped;
  switch (process_->state()) {
    case Process::State::Ready:
      return Availability::Ready;
    case Process::State::Starting:
      return Availability::Starting;
    case Process::State::NotReady:
      return process_->sticky_failure() ? Availability::Failed : Availability::Stopped;
    case Process::State::Dead:
      break;
  }
  return Availability::Stopped;
}

std::string HarnessServer::failure() const {
  std::lock_guard lock(mutex_);
  if (!not_ready_error_.empty()) return not_ready_error_;
  return process_ ? process_->failure() : std::string();
}

void HarnessServer::start() {
  std::lock_guard lock(mutex_);
  if (!not_ready_error_.empty()) return;
  if (process_) {
    const Process::State state = process_->state();
    if (state == Process::State::Ready || state == Process::State::Starting) return;
    if (state == Process::State::NotReady && process_->sticky_failure()) {
      not_ready_error_ = process_->failure();
      return;
    }
    retired_.push_back(std::move(process_));
  }
  std::string error;
  spawn_locked(error);
}

void HarnessServer::leave_out(std::vector<std::string> nodes) {
  std::lock_guard lock(mutex_);
  excluded_nodes_ = std::move(nodes);
  if (!process_) return;
  const std::optional<SlurmStep> placed = process_->step();
  if (!placed || std::find(excluded_nodes_.begin(), excluded_nodes_.end(), placed->node) == excluded_nodes_.end()) return;
  process_->close_input();
  retired_.push_back(std::move(process_));
}

std::optional<SlurmStep> HarnessServer::step() const {
  std::lock_guard lock(mutex_);
  return process_ ? process_->step() : std::nullopt;
}

bool HarnessServer::take_slot(const CallBudget& budget) {
  std::unique_lock lock(mutex_);
  while (free_slots_ == 0) {
    if (Clock::now() >= budget.stage_deadline || (budget.cancelled && budget.cancelled())) return false;
    changed_.wait_until(lock, std::min(budget.stage_deadline, Clock::now() + kCancelPoll));
  }
  --free_slots_;
  return true;
}

void HarnessServer::give_slot() {
  {
    std::lock_guard lock(mutex_);
    ++free_slots_;
  }
  changed_.notify_all();
}

bool HarnessServer::spawn_locked(std::string& error) {
  auto fresh = std::make_shared<Process>(spec_, excluded_nodes_, [this] {
    { std::lock_guard notify_lock(mutex_); }
    changed_.notify_all();
  });
  try {
    fresh->start();
  } catch (const SpawnError& e) {
    not_ready_error_ = std::string("cannot start the harness server: ") + e.what();
    error = not_ready_error_;
    return false;
  }
  process_ = std::move(fresh);
  return true;
}

std::shared_ptr<HarnessServer::Process> HarnessServer::running_process(Clock::time_point deadline, std::string& error,
                                                                       bool* lost) {
  std::unique_lock lock(mutex_);
  while (true) {
    if (!not_ready_error_.empty()) {
      error = not_ready_error_;
      if (lost) *lost = true;
      return nullptr;
    }
    if (process_) {
      const Process::State state = process_->state();
      if (state == Process::State::Ready) return process_;
      if (state == Process::State::NotReady) {
        error = process_->failure();
        if (process_->sticky_failure()) not_ready_error_ = error;
        retired_.push_back(std::move(process_));
        if (lost) *lost = true;
        return nullptr;
      }
      if (state == Process::State::Dead) {
        retired_.push_back(std::move(process_));
        continue;  // start a fresh one below
      }
      // Starting: whoever started it is waiting too; the reader enforces the start limit.
      if (changed_.wait_until(lock, deadline) == std::cv_status::timeout &&
          process_ && process_->state() == Process::State::Starting) {
        error = "the stage timeout passed while the harness server for " + spec_.device + " was starting (" +
                (spec_.slurm ? "Slurm may not have placed its step yet; " : "") + "it may take up to " +
                seconds_text(spec_.start_timeout_seconds) + " s)";
        return nullptr;
      }
      continue;
    }
    spawn_locked(error);  // a failure is sticky: the loop returns it
  }
}

HarnessResponse HarnessServer::call(json request, const CallBudget& budget, NeedListener on_need) {
  ++load_;
  struct LoadGuard {
    std::atomic<int>& load;
    ~LoadGuard() { --load; }
  } load_guard{load_};

  if (!take_slot(budget)) {
    if (budget.cancelled && budget.cancelled()) return HarnessResponse::harness_error("the run is being cancelled");
    return HarnessResponse::harness_error("the stage timeout passed while waiting for a free slot on the harness "
                                          "server for " + spec_.device + " (" + std::to_string(spec_.max_children) +
                                          " requests at a time; lower the stage's concurrency or raise max_children)");
  }
  struct SlotGuard {
    HarnessServer& server;
    ~SlotGuard() { server.give_slot(); }
  } slot_guard{*this};

  std::string error;
  bool lost = false;
  std::shared_ptr<Process> process = running_process(budget.stage_deadline, error, &lost);
  if (!process) {
    HarnessResponse unavailable = HarnessResponse::harness_error(error);
    unavailable.server_lost = lost;
    return unavailable;
  }

  // The child's limit is set now, after any waiting, from the time the stage has left.
  const std::string action = request.value("action", std::string());
  const int children = action == "run" || action == "compile" ? 2 : 1;  // reference worker, candidate
  const auto timing = request_budget(budget.child_timeout_seconds, budget.stage_seconds_left(), children);
  if (!timing) {
    HarnessResponse late = HarnessResponse::harness_error("the stage timeout left no time to run the request");
    late.error_class = "timeout";
    return late;
  }
  const std::string id = std::to_string(next_id_++);
  request["id"] = id;
  request["limits"]["timeout_s"] = timing->child_timeout_seconds;
  const std::string line = request.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  auto answer = process->submit(id, line, std::move(on_need), error);
  if (!answer) return HarnessResponse::harness_error(error);
  const auto answer_deadline = deadline_after(timing->wait_seconds);
  while (answer->wait_until(std::min(answer_deadline, Clock::now() + kCancelPoll)) != std::future_status::ready) {
    if (budget.cancelled && budget.cancelled()) {
      process->forget(id);  // the child runs on until its own limit; the server's end kills it
      return HarnessResponse::harness_error("the run is being cancelled");
    }
    if (Clock::now() < answer_deadline) continue;
    process->forget(id);
    return HarnessResponse::harness_error("no answer from the harness server (pid " + std::to_string(process->pid()) +
                                          ", " + spec_.device + ") within " + seconds_text(timing->wait_seconds) +
                                          " s");
  }
  HarnessResponse response = answer->get();
  if (const auto placed = process->step()) response.node = placed->node;
  return response;
}

std::shared_ptr<HarnessServer> shared_harness_server(const HarnessServerSpec& spec) {
  static std::mutex registry_mutex;
  static std::map<std::string, std::weak_ptr<HarnessServer>> registry;
  std::lock_guard lock(registry_mutex);
  std::weak_ptr<HarnessServer>& slot = registry[spec.key()];
  if (auto existing = slot.lock()) return existing;
  auto server = std::make_shared<HarnessServer>(spec);
  slot = server;
  return server;
}

}  // namespace kforge::eval
