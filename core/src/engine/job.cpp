#include "engine/job.hpp"

namespace kforge {

std::string Task::id() const {
  auto it = strings.find(KF_KEY_TASK_ID);
  return it == strings.end() ? std::to_string(index) : it->second;
}

const char* to_string(VerdictStatus status) {
  switch (status) {
    case VerdictStatus::Pass:
      return "pass";
    case VerdictStatus::Fail:
      return "fail";
    case VerdictStatus::Error:
      return "error";
  }
  return "error";
}

bool blames_no_candidate(const std::string& error_class) {
  for (const char* known : {KF_ERROR_HARNESS, KF_ERROR_HOST, KF_ERROR_TASK, KF_ERROR_PLUGIN, KF_ERROR_STAGE_TIMEOUT}) {
    if (error_class == known) return true;
  }
  return false;
}

const char* to_string(kf_stage_role role) {
  switch (role) {
    case KF_ROLE_GENERATE:
      return "generate";
    case KF_ROLE_CHECK:
      return "check";
    case KF_ROLE_COMPILE:
      return "compile";
    case KF_ROLE_RUN:
      return "run";
    case KF_ROLE_FIX:
      return "fix";
    case KF_ROLE_OTHER:
      break;
  }
  return "other";
}

VerdictStatus parse_status(const std::string& text) {
  if (text == "pass") return VerdictStatus::Pass;
  if (text == "fail") return VerdictStatus::Fail;
  return VerdictStatus::Error;
}

VerdictStatus Job::final_status() const {
  return verdicts.empty() ? VerdictStatus::Pass : verdicts.back().status;
}

const std::string* Job::find_string(const std::string& key) const {
  if (key.starts_with("task.")) {
    auto it = task->strings.find(key);
    return it == task->strings.end() ? nullptr : &it->second;
  }
  if (key.starts_with("last.")) {
    static const std::string kStatus[] = {"pass", "fail", "error"};
    const Verdict* v = last();
    if (v == nullptr) return nullptr;
    if (key == KF_KEY_LAST_STAGE) return &v->stage;
    if (key == KF_KEY_LAST_STATUS) return &kStatus[static_cast<int>(v->status)];
    if (key == KF_KEY_LAST_ERROR_CLASS) return &v->error_class;
    if (key == KF_KEY_LAST_MESSAGE) return &v->message;
    if (key == KF_KEY_LAST_LOG_TAIL) return &v->log_tail;
    return nullptr;
  }
  auto it = strings.find(key);
  return it == strings.end() ? nullptr : &it->second;
}

std::optional<double> Job::find_number(const std::string& key) const {
  if (key == KF_KEY_CANDIDATE_SAMPLE) return sample;
  if (key == KF_KEY_CANDIDATE_ROUND) return round;
  if (key.starts_with("task.")) {
    auto it = task->numbers.find(key);
    if (it != task->numbers.end()) return it->second;
    return std::nullopt;
  }
  auto it = numbers.find(key);
  if (it != numbers.end()) return it->second;
  return std::nullopt;
}

}  // namespace kforge
