// Routes: each verdict's target, bounded edges, and the checks on the route graph
// (reachability, cycles without a bound).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "engine/pipeline/loader.hpp"
#include "engine/pipeline/scalars.hpp"
#include "engine/pipeline/values.hpp"
#include "engine/registry.hpp"

namespace kforge::loader {

std::optional<std::string> Loader::route_target(const StageDraft& draft, const Entry& entry,
                                                const std::string& subject) {
  FileValues values(*this, *draft.file, entry.key);
  auto target = convert(KF_PARAM_STRING, entry.value, subject, values);
  if (!target) {
    graph_checkable_ = false;
    return std::nullopt;
  }
  const std::string& id = target->text;
  if (id == kEndTarget) return id;
  std::vector<std::string> ids;
  for (const StageDraft& d : stages_) {
    if (!d.spec.id.empty()) ids.push_back(d.spec.id);
  }
  if (contains(ids, id)) return id;
  auto guess = closest(id, ids);
  error_at(*draft.file, entry.value,
           fmt::format("{} goes to unknown stage '{}'{}", subject, id,
                       guess ? fmt::format("; did you mean '{}'?", *guess)
                             : fmt::format(" (stages: {}, or end)", comma_list(ids))));
  graph_checkable_ = false;
  return std::nullopt;
}

void Loader::read_routes(StageDraft& draft, size_t index) {
  const SourceFile& file = *draft.file;
  const std::string label =
      draft.spec.id.empty() ? fmt::format("stage #{}", index + 1) : "stage '" + draft.spec.id + "'";
  std::vector<std::string> names = kStatusRoutes;
  if (draft.kind != nullptr) {
    names.insert(names.end(), draft.kind->routes.begin(), draft.kind->routes.end());
  }
  if (draft.on) {  // a kind we do not know may have routes we do not know: keep them
    for (const Entry& e : draft.on->entries) {
      if (!contains(names, e.name)) names.push_back(e.name);
    }
  }
  const SourceLocation& stage_where = draft.id_where;

  for (const std::string& name : names) {
    RouteSpec route;
    route.on = name;
    route.where = stage_where;
    SourceLocation target_where = stage_where;
    SourceLocation then_where = stage_where;
    const Entry* entry = draft.on ? draft.on->find(name) : nullptr;
    const std::string subject = fmt::format("route '{}' of {}", name, label);
    if (entry != nullptr) {
      route.where = locate(file, entry->key);
      if (entry->value.IsMap()) {
        Mapping bounded = mapping(file, entry->value, "key", "in " + subject, kBoundedRouteKeys);
        const Entry* to = bounded.find("to");
        const Entry* rounds = bounded.find("max_rounds");
        if (to == nullptr || rounds == nullptr) {
          error_at(file, entry->value,
                   fmt::format("{}: the long form is a bounded edge and needs to: and "
                               "max_rounds:, e.g. {{to: fix, max_rounds: 2, then: end}}; "
                               "for a plain route write {}: <stage>",
                               subject, name));
          graph_checkable_ = false;
        }
        if (to != nullptr) {
          target_where = locate(file, to->value);
          if (auto t = route_target(draft, *to, subject)) route.target = *t;
        }
        if (rounds != nullptr) {
          auto value = int_field(file, *rounds, "max_rounds of " + subject, 1);
          if (value) {
            route.max_rounds = *value;
          } else {
            graph_checkable_ = false;
          }
        }
        if (const Entry* then = bounded.find("then")) {
          then_where = locate(file, then->value);
          if (auto t = route_target(draft, *then, subject + " (then)")) {
            route.exhausted_target = *t;
          }
        }
      } else if (entry->value.IsScalar()) {
        target_where = locate(file, entry->value);
        if (auto t = route_target(draft, *entry, subject)) route.target = *t;
      } else {
        error_at(file, entry->value.IsNull() ? entry->key : entry->value,
                 fmt::format("{} must name a stage id or end, or be a bounded edge "
                             "{{to: ..., max_rounds: ..., then: ...}}, got {}",
                             subject, shape_of(entry->value)));
        graph_checkable_ = false;
      }
    } else if (name == "pass") {
      route.target = index + 1 < stages_.size() ? stages_[index + 1].spec.id : kEndTarget;
    } else {
      route.target = kEndTarget;
    }
    draft.spec.routes.push_back(std::move(route));
    draft.target_where.push_back(target_where);
    draft.then_where.push_back(then_where);
    draft.written.push_back(entry != nullptr);
  }
}

void Loader::check_graph() {
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < stages_.size(); ++i) index_of[stages_[i].spec.id] = i;

  // An error verdict judged no candidate (the harness, the machine or the task failed): a
  // fix round cannot repair that, and the executor never sends one into a fix stage. Say
  // so where the pipeline asks for it, rather than ignore the route.
  auto is_fix = [&](const std::string& target) {
    if (target == kEndTarget) return false;
    const StageKind* kind = stages_[index_of.at(target)].kind;
    return kind != nullptr && kind->role == KF_ROLE_FIX;
  };
  for (const StageDraft& d : stages_) {
    for (size_t r = 0; r < d.spec.routes.size(); ++r) {
      const RouteSpec& route = d.spec.routes[r];
      if (route.on != "error" || !d.written[r]) continue;
      const bool into_fix = is_fix(route.target);
      if (into_fix || (route.max_rounds > 0 && is_fix(route.exhausted_target))) {
        const std::string& fix = into_fix ? route.target : route.exhausted_target;
        error(into_fix ? d.target_where[r] : d.then_where[r],
              fmt::format("route 'error' of stage '{}' leads into the fix stage '{}': an error verdict says the stage "
                          "could not judge the candidate (the harness, the machine or the task failed), which no fix "
                          "can repair, so such a job ends there; route error to end (the default) or to a stage "
                          "that is not a fix stage",
                          d.spec.id, fix));
      }
    }
  }

  struct Edge {
    size_t to;
    bool bounded;
    const RouteSpec* route;  // the route the edge belongs to
    SourceLocation where;
    bool written;
  };
  std::vector<std::vector<Edge>> edges(stages_.size());
  for (size_t i = 0; i < stages_.size(); ++i) {
    const StageDraft& d = stages_[i];
    for (size_t r = 0; r < d.spec.routes.size(); ++r) {
      const RouteSpec& route = d.spec.routes[r];
      const bool written = d.written[r];
      if (route.target != kEndTarget) {
        edges[i].push_back(
            {index_of.at(route.target), route.max_rounds > 0, &route, d.target_where[r], written});
      }
      // After its last round a bounded edge hands the job on unconditionally.
      if (route.max_rounds > 0 && route.exhausted_target != kEndTarget) {
        edges[i].push_back(
            {index_of.at(route.exhausted_target), false, &route, d.then_where[r], written});
      }
    }
  }

  // Reachability from the entry, over every edge.
  std::vector<bool> reached(stages_.size(), false);
  std::vector<size_t> todo = {0};
  reached[0] = true;
  while (!todo.empty()) {
    const size_t at = todo.back();
    todo.pop_back();
    for (const Edge& e : edges[at]) {
      if (!reached[e.to]) {
        reached[e.to] = true;
        todo.push_back(e.to);
      }
    }
  }
  for (size_t i = 0; i < stages_.size(); ++i) {
    if (reached[i]) continue;
    error(stages_[i].id_where,
          fmt::format("stage '{}' is unreachable: no route leads to it from the entry stage "
                      "'{}'; route a verdict to it or remove it",
                      stages_[i].spec.id, stages_[0].spec.id));
  }

  // Cycles made only of unbounded edges would run a job forever. A depth-first search
  // finds each through the edge that closes it.
  enum class Mark { New, Open, Done };
  std::vector<Mark> mark(stages_.size(), Mark::New);
  std::vector<std::pair<size_t, const Edge*>> path;  // stage, edge taken to get there
  std::set<std::string> reported;
  auto visit = [&](auto&& self, size_t at) -> void {
    mark[at] = Mark::Open;
    for (const Edge& e : edges[at]) {
      if (e.bounded) continue;
      if (mark[e.to] == Mark::Open) {
        // The cycle: from e.to along the path to `at`, then e back to e.to.
        auto start =
            std::find_if(path.begin(), path.end(), [&](const auto& p) { return p.first == e.to; });
        std::vector<std::pair<size_t, const Edge*>> cycle(start, path.end());
        cycle.emplace_back(e.to, &e);
        std::string names;
        for (const auto& [stage, edge] : cycle)
          names += (names.empty() ? "" : " -> ") + stages_[stage].spec.id;
        if (!reported.insert(names).second) continue;
        // Report at a route the user wrote, where there is one, rather than at a default.
        const Edge* where = &e;
        for (size_t c = 1; c < cycle.size(); ++c) {
          if (!where->written && cycle[c].second->written) where = cycle[c].second;
        }
        error(where->where,
              fmt::format("unbounded cycle {}: a job could go round it forever; make one of its "
                          "routes a bounded edge, e.g. {}: {{to: {}, max_rounds: 3, then: end}}",
                          names, where->route->on, stages_[where->to].spec.id));
      } else if (mark[e.to] == Mark::New) {
        path.emplace_back(e.to, &e);
        self(self, e.to);
        path.pop_back();
      }
    }
    mark[at] = Mark::Done;
  };
  for (size_t i = 0; i < stages_.size(); ++i) {
    if (mark[i] != Mark::New) continue;
    path.assign(1, {i, nullptr});
    visit(visit, i);
  }

  // The router after a stage has kMaxRouteTargets ports, one per distinct target.
  for (const StageDraft& d : stages_) {
    std::set<std::string> targets;
    for (const RouteSpec& route : d.spec.routes) {
      targets.insert(route.target);
      if (route.max_rounds > 0) targets.insert(route.exhausted_target);
    }
    if (targets.size() > kMaxRouteTargets) {
      error(d.id_where,
            fmt::format("stage '{}' routes to {} different targets ({}), but a stage can route to at most {}: "
                        "send some verdicts to the same stage",
                        d.spec.id, targets.size(), comma_list({targets.begin(), targets.end()}), kMaxRouteTargets));
    }
  }
}

std::vector<StagePlan> Loader::compile_stages() {
  std::map<std::string, int> index_of = {{kEndTarget, kEnd}};
  for (size_t i = 0; i < stages_.size(); ++i) index_of[stages_[i].spec.id] = static_cast<int>(i);
  std::vector<StagePlan> stages;
  for (StageDraft& d : stages_) {
    StagePlan stage;
    stage.id = d.spec.id;
    stage.kind = d.kind;
    stage.config = std::move(d.spec.config);
    stage.concurrency = d.spec.concurrency;
    stage.timeout_seconds = d.spec.timeout_seconds;
    stage.where = d.spec.where;
    for (const RouteSpec& route : d.spec.routes) {
      stage.routes.push_back(
          {route.on, index_of.at(route.target), route.max_rounds, index_of.at(route.exhausted_target), route.where});
    }
    stages.push_back(std::move(stage));
  }
  return stages;
}

}  // namespace kforge::loader
