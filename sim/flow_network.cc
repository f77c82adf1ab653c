// Flow-level network model: latency, then max-min fair sharing; exact fast-forward of
// undisturbed repeated rounds.
#include "sim/flow_network.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <unordered_map>
#include <utility>

#include "sim/check.h"
#include "sim/clock_range.h"

namespace dtsim {

FlowNetworkModel::FlowNetworkModel(Engine& engine, const Topology& topology, Router& router,
                                   const ObserverList& observers)
    : NetworkModel(engine, topology, router, observers),
      link_users_(topology.num_links()),
      link_stamp_(topology.num_links(), 0),
      link_slot_(topology.num_links(), 0),
      link_state_(topology.num_links()),
      link_starts_(topology.num_links(), 0) {
  for (LinkId l = 0; l < topology.num_links(); ++l) {
    link_state_[l].capacity = topology.link(l).bandwidth.bytes_per_second();
    link_state_[l].latency = topology.link(l).latency;
  }
}

void FlowNetworkModel::add_link_constraints() {
  // Reserved: grown one by one, the constraints were moved to a fresh allocation at every
  // doubling, most of the cost in page faults.
  solver_.reserve_constraints(link_state_.size());
  for (LinkId l = 0; l < link_state_.size(); ++l) {
    const auto c = solver_.add_constraint(link_state_[l].capacity);
    DTSIM_CHECK(c == l, "constraint ids must equal link ids");
  }
  solver_has_links_ = true;
}

double FlowNetworkModel::bytes_for(double links, double flows, double flow_links) {
  const double per_link = LinkUsers::bytes_per_link() + 3 * sizeof(uint32_t) + sizeof(LinkState) +
                          sizeof(uint64_t) + MaxMinSolver::constraint_bytes();
  // A flow, its solver variable and id, and what its group keeps of it for the rounds to
  // come: its route, its place among the latencies and its id in the current round.
  const double per_flow = sizeof(Flow) + MaxMinSolver::variable_bytes() + sizeof(uint32_t) +
                          sizeof(Router::RouteRef) + 2 * sizeof(uint32_t);
  // A crossing: the solver's use, the link's user entry, the group's per-link figures.
  const double per_crossing = MaxMinSolver::use_bytes() + sizeof(std::pair<uint32_t, uint32_t>) +
                              sizeof(LinkId) + 2 * sizeof(double) + sizeof(Duration) +
                              sizeof(uint32_t) + sizeof(uint64_t);
  return links * per_link + flows * per_flow + flow_links * per_crossing;
}

uint32_t FlowNetworkModel::new_flow() {
  if (!free_flows_.empty()) {
    const uint32_t f = free_flows_.front();
    free_flows_.pop_front();
    const uint32_t version = flows_[f].version + 1;
    flows_[f] = Flow{};
    flows_[f].version = version;
    return f;
  }
  flows_.emplace_back();
  return static_cast<uint32_t>(flows_.size() - 1);
}

uint32_t FlowNetworkModel::new_group() {
  if (!free_groups_.empty()) {
    const uint32_t g = free_groups_.back();
    free_groups_.pop_back();
    return g;
  }
  groups_.emplace_back();
  return static_cast<uint32_t>(groups_.size() - 1);
}

void FlowNetworkModel::start_group(std::vector<FlowSpec> flows, int64_t repeat,
                                   std::function<void()> done) {
  start_recorded_group(std::move(flows), repeat, std::move(done), nullptr);
}

void FlowNetworkModel::start_recorded_group(std::vector<FlowSpec> flows, int64_t repeat,
                                            std::function<void()> done,
                                            std::unique_ptr<Recording> recording) {
  DTSIM_CHECK(repeat >= 1, "a group runs at least one round");
  const uint32_t g = new_group();
  Group& group = groups_[g];
  group.reset();
  group.flows = std::move(flows);
  group.rounds_left = repeat;
  group.done = std::move(done);
  group.recording = std::move(recording);
  start_round(g);
}

void FlowNetworkModel::start_phase(const std::shared_ptr<const CollectivePlan>& plan, size_t phase,
                                   std::function<std::vector<FlowSpec>()> flows, int64_t repeat,
                                   bool alone, std::function<void()> done) {
  // A replay reports one busy span per link, where an observer expects the phase's own.
  if (!phase_replay_ || link_stats_.observed()) {
    start_group(flows(), repeat, std::move(done));
    return;
  }
  const PhaseKey key{plan.get(), phase};
  PhaseOutcome& outcome = outcomes_[key];
  if (outcome.kept) {
    if (const auto end = alone ? replay_end(outcome) : std::nullopt) {
      replay(outcome, *end, std::move(done));
      return;
    }
    // Behind the events already due now: they may start flows on its links.
    engine_.schedule_at(engine_.now(), [this, &outcome, flows = std::move(flows), repeat,
                                        done = std::move(done)]() mutable {
      decide_replay(outcome, flows, repeat, done);
    });
    return;
  }
  std::unique_ptr<Recording> recording;
  if (!outcome.recording && outcome.closed_runs_missed < kRecordingTries) {
    outcome.plan = plan;
    outcome.recording = true;
    recording = std::make_unique<Recording>();
    recording->outcome = &outcome;
    recording->start = engine_.now();
  }
  start_recorded_group(flows(), repeat, std::move(done), std::move(recording));
}

void FlowNetworkModel::decide_replay(const PhaseOutcome& outcome,
                                     const std::function<std::vector<FlowSpec>()>& flows,
                                     int64_t repeat, std::function<void()>& done) {
  const auto end = replay_end(outcome);
  // next_completion() settles first: flows that ended at this instant leave their links'
  // load at 0 now.
  if (end && *end < std::min(next_completion(), engine_.horizon_excluding(this))) {
    replay(outcome, *end, std::move(done));
    return;
  }
  start_group(flows(), repeat, std::move(done));
}

std::optional<Time> FlowNetworkModel::replay_end(const PhaseOutcome& outcome) const {
  const bool idle = std::all_of(outcome.links.begin(), outcome.links.end(),
                                [this](LinkId l) { return link_users_.empty(l); });
  // Past the clock, the simulation says what happens (its flows stall).
  return idle ? later_within_clock(engine_.now(), outcome.duration) : std::nullopt;
}

void FlowNetworkModel::replay(const PhaseOutcome& outcome, Time end, std::function<void()> done) {
  const Time now = engine_.now();
  ++replayed_phases_;
  // Its traffic goes in when it ends (a run stopped meanwhile leaves it out), so that no
  // link reports bytes past the run's end.
  engine_.schedule_at(end, [this, &outcome, now, until = end, done = std::move(done)] {
    for (size_t k = 0; k < outcome.links.size(); ++k) {
      const LinkTraffic& t = outcome.traffic[outcome.traffic_of_link[k]];
      link_stats_.add_traffic(outcome.links[k], t.bytes, t.busy, 0, now, until, outcome.rounds);
    }
    done();
  });
}

FlowNetworkModel::LinkTraffic FlowNetworkModel::traffic_since(LinkId l, double bytes_at_start,
                                                              Duration busy_at_start, Time now) {
  link_stats_.flush(l, now);
  return {link_stats_.stats(l).bytes - bytes_at_start, link_stats_.stats(l).busy - busy_at_start};
}

void FlowNetworkModel::keep_outcome(Group& group, Time now) {
  Recording& rec = *group.recording;
  PhaseOutcome& outcome = *rec.outcome;
  outcome.recording = false;
  if (!rec.closed) {
    ++outcome.closed_runs_missed;
    return;
  }
  outcome.kept = true;
  outcome.duration = now - rec.start;
  outcome.rounds = rec.rounds;
  outcome.links = group.links;
  outcome.traffic_of_link.reserve(group.links.size());
  // Figures compared by their bits: equal figures are one entry, and nothing is rounded.
  std::unordered_map<std::pair<uint64_t, int64_t>, uint32_t, PairHash> index;
  for (size_t k = 0; k < group.links.size(); ++k) {
    const LinkTraffic t =
        traffic_since(group.links[k], rec.bytes_at_start[k], rec.busy_at_start[k], now);
    const auto [it, added] =
        index.try_emplace({std::bit_cast<uint64_t>(t.bytes), t.busy.count_ns()},
                          static_cast<uint32_t>(outcome.traffic.size()));
    if (added) outcome.traffic.push_back(t);
    outcome.traffic_of_link.push_back(it->second);
  }
  outcome.traffic.shrink_to_fit();
}

void FlowNetworkModel::plan_rounds(Group& group) {
  group.routes.resize(group.flows.size());
  group.by_latency.clear();
  for (uint32_t i = 0; i < group.flows.size(); ++i) {
    const FlowSpec& spec = group.flows[i];
    if (spec.src == spec.dst) continue;
    group.routes[i] = router_.route_ref(spec.src, spec.dst);
    const Duration latency = route_latency_within_clock(
        router_.links(group.routes[i]), [&](LinkId l) { return link_state_[l].latency; });
    group.by_latency.emplace_back(latency.count_ns(), i);
  }
  std::sort(group.by_latency.begin(), group.by_latency.end());
  group.round_flows.assign(group.flows.size(), 0);
}

size_t FlowNetworkModel::Group::latency_run_end(size_t first) const {
  size_t end = first + 1;
  while (end < by_latency.size() && by_latency[end].first == by_latency[first].first) ++end;
  return end;
}

void FlowNetworkModel::Group::reset() {
  // Past this many entries a list is released rather than kept for the slot's next group.
  // Everything else starts as a new group's: small lists are moved into a fresh Group,
  // emptied, so that a field added later cannot carry over from the slot's last group.
  constexpr size_t kKept = 64;
  Group fresh;
  const auto keep = [](auto& list, auto& into) {
    if (list.capacity() <= kKept) {
      list.clear();
      into = std::move(list);
    }
  };
  keep(routes, fresh.routes);
  keep(by_latency, fresh.by_latency);
  keep(round_flows, fresh.round_flows);
  keep(links, fresh.links);
  keep(own_bytes, fresh.own_bytes);
  keep(own_flows, fresh.own_flows);
  keep(starts_at_start, fresh.starts_at_start);
  keep(bytes_at_start, fresh.bytes_at_start);
  keep(busy_at_start, fresh.busy_at_start);
  *this = std::move(fresh);
}

void FlowNetworkModel::start_round(uint32_t g) {
  const Time now = engine_.now();
  Group& group = groups_[g];
  group.round_start = now;
  group.disturbed = false;
  group.pending = 0;
  if (group.routes.size() != group.flows.size()) plan_rounds(group);
  // A round's links and their figures at its start: for fast-forward, and for a phase's
  // recording (whose every round crosses the same links, in the same order).
  const bool collect = (fast_forward_ && group.rounds_left > 1) || group.recording != nullptr;
  const bool find_links = collect && !group.links_known;
  if (find_links) {
    group.links.clear();
    group.own_bytes.clear();
    group.own_flows.clear();
    ++stamp_;
  }
  // Flow ids in the flows' order, as every round took them before it kept its routes: ids
  // order the completions of flows that end together.
  for (uint32_t i = 0; i < group.flows.size(); ++i) {
    const FlowSpec& spec = group.flows[i];
    if (spec.src == spec.dst) continue;
    const uint32_t f = new_flow();
    Flow& flow = flows_[f];
    flow.group = g;
    flow.route = group.routes[i];
    flow.remaining = spec.bytes.as_double();
    group.round_flows[i] = f;
    if (find_links && flow.remaining > 0) {
      for (LinkId l : router_.links(flow.route)) {
        if (link_stamp_[l] != stamp_) {
          link_stamp_[l] = stamp_;
          link_slot_[l] = static_cast<uint32_t>(group.links.size());
          group.links.push_back(l);
          group.own_bytes.push_back(0);
          group.own_flows.push_back(0);
        }
        group.own_bytes[link_slot_[l]] += flow.remaining;
        ++group.own_flows[link_slot_[l]];
      }
    }
    ++group.pending;
  }
  if (find_links) group.links_known = true;
  if (collect) {
    group.bytes_at_start.clear();
    group.busy_at_start.clear();
    group.starts_at_start.clear();
    Recording* rec = group.recording.get();
    for (LinkId l : group.links) {
      link_stats_.flush(l, now);
      group.bytes_at_start.push_back(link_stats_.stats(l).bytes);
      group.busy_at_start.push_back(link_stats_.stats(l).busy);
      group.starts_at_start.push_back(link_starts_[l]);
      // A flow of another group on it now shares the round, or carried some of its window.
      if (rec != nullptr && !link_users_.empty(l)) rec->closed = false;
    }
    if (rec != nullptr && rec->rounds == 0) {
      rec->rounds = group.rounds_left;
      rec->bytes_at_start = group.bytes_at_start;
      rec->busy_at_start = group.busy_at_start;
    }
  }
  if (group.pending == 0) {
    engine_.schedule_at(now, [this, g] { on_round_done(g); });
    return;
  }
  // Flows of equal route latency activate together: one event per distinct latency.
  for (size_t b = 0; b < group.by_latency.size(); b = group.latency_run_end(b)) {
    const int64_t latency = group.by_latency[b].first;
    if (latency == 0) {
      activate_bucket(g, b);
    } else {
      if (!later_within_clock(now, Duration::ns(latency)))
        throw_past_clock("a transfer after its route's latency",
                         now.seconds() + Duration::ns(latency).seconds());
      // The round cannot end before its flows activate, so g still names it then.
      engine_.schedule_after(Duration::ns(latency), [this, g, b] { activate_bucket(g, b); });
    }
  }
}

void FlowNetworkModel::activate_bucket(uint32_t g, size_t first) {
  // activate() starts no group (a round ends in an event of its own), so the group stays put.
  const Group& group = groups_[g];
  const size_t end = group.latency_run_end(first);
  for (size_t k = first; k < end; ++k) activate(group.round_flows[group.by_latency[k].second]);
}

void FlowNetworkModel::activate(uint32_t f) {
  Flow& flow = flows_[f];
  if (flow.remaining <= 0) {
    finish_flow(f);
    return;
  }
  const auto links = router_.links(flow.route);
  bool alone = lone_flows_ && !links.empty();
  for (LinkId l : links) {
    ++link_starts_[l];
    if (link_state_[l].lone != 0) join_solver(link_state_[l].lone - 1);
    if (!link_users_.empty(l)) alone = false;
    link_users_.add(l, flow.group, [&](uint32_t other) {
      // Another group loads this link: neither group's round is self-contained now.
      groups_[other].disturbed = true;
      groups_[flow.group].disturbed = true;
    });
  }
  if (alone) {
    run_alone(f);
    return;
  }
  flow.last = engine_.now();
  enter_solver(f, solver().add_variable(links));
}

void FlowNetworkModel::enter_solver(uint32_t f, MaxMinSolver::VarId var) {
  flows_[f].var = var;
  flows_[f].in_solver = true;
  if (var_to_flow_.size() <= var) var_to_flow_.resize(var + 1);
  var_to_flow_[var] = f;
}

void FlowNetworkModel::run_alone(uint32_t f) {
  Flow& flow = flows_[f];
  const Time now = engine_.now();
  // What the solver gives a variable of weight 1 alone in its component: the least of its
  // constraints' 1 x (capacity / 1), bit for bit.
  double rate = MaxMinSolver::kUnbounded;
  for (LinkId l : router_.links(flow.route)) {
    rate = std::min(rate, link_state_[l].capacity);
    link_state_[l].lone = f + 1;
  }
  flow.lone = true;
  flow.last = now;
  flow.rate = rate;
  ++flow.version;
  schedule_completion(f, now);
}

void FlowNetworkModel::add_lone_traffic(const Flow& flow, Time until, double bytes) {
  for (LinkId l : router_.links(flow.route)) {
    link_stats_.add_traffic(l, bytes, until - flow.last, flow.rate, flow.last, until, 1);
  }
}

void FlowNetworkModel::join_solver(uint32_t f) {
  Flow& flow = flows_[f];
  const Time now = engine_.now();
  const auto links = router_.links(flow.route);
  // Joined at the instant it started, it never ran alone: its rate was never its links' load.
  if (now > flow.last) add_lone_traffic(flow, now, flow.rate * (now - flow.last).seconds());
  // From now on its links carry what the solver has on them, which the instant's settle
  // sets (the solver reports no change where the running variable keeps its rate).
  for (LinkId l : links) {
    link_state_[l].lone = 0;
    joined_links_.push_back(l);
  }
  flow.lone = false;
  // Its remaining bytes, last change and completion stay: the solver moves them only if
  // its rate changes, as it would have had it solved the flow from the start. (Finishing,
  // it takes back from its links what the rate integral since that last change overshot:
  // the part before now is in the traffic just added, the rest in the load.)
  enter_solver(f, solver().add_running_variable(links, flow.rate));
}

void FlowNetworkModel::schedule_completion(uint32_t f, Time now) {
  const Flow& flow = flows_[f];
  if (flow.rate <= 0) return;
  const double ns = std::ceil(std::max(0.0, flow.remaining) / flow.rate * 1e9);
  // Past ~292 years of simulated time a flow never finishes: the run reports it stalled.
  if (ns < 9e18 - static_cast<double>(now.count_ns())) {
    completions_.push(now + Duration::ns(static_cast<int64_t>(ns)), f, flow.version);
  }
}

void FlowNetworkModel::settle() {
  if (!solver_.dirty()) return;
  const Time now = engine_.now();
  changed_vars_.clear();
  changed_links_.clear();
  solver_.solve(&changed_vars_, &changed_links_);
  for (MaxMinSolver::VarId v : changed_vars_) {
    const uint32_t f = var_to_flow_[v];
    Flow& flow = flows_[f];
    flow.remaining -= flow.rate * (now - flow.last).seconds();
    flow.last = now;
    flow.rate = solver_.rate(v);
    ++flow.version;
    schedule_completion(f, now);
  }
  // A lone flow on a changed link (a solved flow left it at this instant) is not part of
  // its load.
  for (MaxMinSolver::ConstraintId c : changed_links_)
    link_stats_.set_load(c, solver_.usage(c), now);
  for (LinkId l : joined_links_) link_stats_.set_load(l, solver_.usage(l), now);
  joined_links_.clear();
}

void FlowNetworkModel::finish(Time end) {
  // A flow that started at this very instant loaded its links too (their peak), as it would
  // have in the solver. Counted once: the flows stop being lone.
  for (Flow& flow : flows_) {
    if (!flow.lone) continue;
    add_lone_traffic(flow, end, flow.rate * (end - flow.last).seconds());
    flow.lone = false;
  }
  NetworkModel::finish(end);
}

Time FlowNetworkModel::next_completion() {
  settle();
  return completions_.next([this](uint32_t f, uint32_t v) { return is_current(f, v); });
}

void FlowNetworkModel::complete_due(Time now) {
  completions_.pop_due(
      now, [this](uint32_t f, uint32_t v) { return is_current(f, v); },
      [this](uint32_t f) { finish_flow(f); });
}

void FlowNetworkModel::finish_flow(uint32_t f) {
  Flow& flow = flows_[f];
  if (flow.in_solver || flow.lone) {
    // A lone flow carried exactly its bytes. For a solved one, what the rate integral
    // credited beyond the flow's size is taken back, so that links carry exactly the bytes
    // that were sent.
    if (flow.lone) add_lone_traffic(flow, engine_.now(), flow.remaining);
    const double overshoot =
        flow.lone ? 0.0 : flow.rate * (engine_.now() - flow.last).seconds() - flow.remaining;
    if (flow.in_solver) solver_.remove_variable(flow.var);
    for (LinkId l : router_.links(flow.route)) {
      if (overshoot != 0) link_stats_.adjust_bytes(l, -overshoot);
      if (flow.lone) link_state_[l].lone = 0;
      link_users_.remove(l, flow.group);
    }
    flow.in_solver = false;
    flow.lone = false;
  }
  ++flow.version;
  free_flows_.push_back(f);
  const uint32_t g = flow.group;
  if (--groups_[g].pending == 0) {
    engine_.schedule_at(engine_.now(), [this, g] { on_round_done(g); });
  }
}

// A round replays exactly only if nothing else touched its links: no other group's flow
// is on them now (it would share the next rounds), no flow but its own started on them
// since it began (another flow came and went on a link while the round's were not on it,
// however few its bytes), and each link carried exactly the round's own bytes.
bool FlowNetworkModel::round_was_alone(const Group& group, Time now) {
  for (size_t i = 0; i < group.links.size(); ++i) {
    const LinkId l = group.links[i];
    if (!link_users_.empty(l)) return false;
    if (link_starts_[l] - group.starts_at_start[i] != group.own_flows[i]) return false;
    link_stats_.flush(l, now);
    const double carried = link_stats_.stats(l).bytes - group.bytes_at_start[i];
    if (std::abs(carried - group.own_bytes[i]) > 1e-9 * group.own_bytes[i] + 1) return false;
  }
  return true;
}

void FlowNetworkModel::on_round_done(uint32_t g) {
  const Time now = engine_.now();
  Group& group = groups_[g];
  --group.rounds_left;
  Recording* rec = group.recording.get();
  const bool may_skip = fast_forward_ && group.rounds_left > 0;
  const bool alone = (may_skip || (rec != nullptr && rec->closed)) && !group.disturbed &&
                     round_was_alone(group, now);
  if (rec != nullptr && !alone) rec->closed = false;
  if (may_skip && alone) {
    // Decide after every round that ends at this instant: the event goes behind the
    // round-done events already queued for it.
    ready_.push_back(g);
    if (!decide_pending_) {
      decide_pending_ = true;
      engine_.schedule_at(now, [this] { decide_ready(); });
    }
    return;
  }
  finish_or_continue(g);
}

void FlowNetworkModel::finish_or_continue(uint32_t g) {
  if (groups_[g].rounds_left == 0) {
    if (groups_[g].recording) {
      keep_outcome(groups_[g], engine_.now());
      groups_[g].recording.reset();
    }
    auto done = std::move(groups_[g].done);
    free_groups_.push_back(g);
    done();
    return;
  }
  start_round(g);
}

void FlowNetworkModel::decide_ready() {
  decide_pending_ = false;
  const Time now = engine_.now();
  std::vector<uint32_t> batch;
  batch.swap(ready_);
  // Settle first so that the links' loads drop to zero at `now` and their statistics
  // hold exactly one round's traffic. The batch's groups have no flows and no pending
  // events, so the horizon is set by everything else.
  const Time horizon = std::min(next_completion(), engine_.horizon_excluding(this));
  if (link_owner_.size() != topology_.num_links()) link_owner_.assign(topology_.num_links(), 0);
  std::vector<bool> skip_group(batch.size(), true);
  for (size_t i = 0; i < batch.size(); ++i) {
    // Skipping together is exact only for groups that cannot meet: disjoint links, and no
    // flow started on them since their round ended.
    for (LinkId l : groups_[batch[i]].links) {
      const uint32_t owner = link_owner_[l];
      if (!link_users_.empty(l) || (owner != 0 && owner != batch[i] + 1)) skip_group[i] = false;
      link_owner_[l] = batch[i] + 1;
    }
  }
  for (uint32_t g : batch) {
    for (LinkId l : groups_[g].links) link_owner_[l] = 0;
  }
  // A group that cannot skip starts its next round now, on links another group of the
  // batch shares: then nobody skips. Otherwise no group may skip past the instant the
  // first of them would finish: its `done` may start anything. Until then each group only
  // ever loads its own links, which no other group of the batch uses.
  Time limit = horizon;
  for (size_t i = 0; i < batch.size(); ++i) {
    const Group& group = groups_[batch[i]];
    if (!skip_group[i]) limit = now;
    // Rounds alone on their links take at least as long as this one did: all of them
    // passing the clock is certain.
    const Duration round = now - group.round_start;
    const auto last = later_within_clock(now, round, group.rounds_left);
    if (!last) {
      throw_past_clock("a group of " + std::to_string(group.flows.size()) + " transfer(s) over " +
                           std::to_string(group.links.size()) + " link(s), " +
                           std::to_string(group.rounds_left) + " more round(s) of " +
                           format_seconds(round.seconds()) + " s each,",
                       now.seconds() + round.seconds() * static_cast<double>(group.rounds_left));
    }
    limit = std::min(limit, *last);
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    const uint32_t g = batch[i];
    Group& group = groups_[g];
    const Duration round = now - group.round_start;
    int64_t skip = group.rounds_left;
    if (round.count_ns() > 0 && !limit.is_infinite()) {
      skip = std::min(skip, (limit - now).count_ns() / round.count_ns());
    } else if (limit == now) {
      skip = 0;
    }
    if (skip <= 0) {
      finish_or_continue(g);
      continue;
    }
    const Time end = now + round * skip;
    for (size_t k = 0; k < group.links.size(); ++k) {
      const LinkId l = group.links[k];
      const LinkTraffic t = traffic_since(l, group.bytes_at_start[k], group.busy_at_start[k], now);
      link_stats_.add_traffic(l, t.bytes * static_cast<double>(skip), t.busy * skip, 0, now, end,
                              skip);
    }
    group.rounds_left -= skip;
    fast_forwarded_rounds_ += skip;
    engine_.schedule_at(end, [this, g] { finish_or_continue(g); });
  }
}

}  // namespace dtsim
