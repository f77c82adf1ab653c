// `flow` network model: flow-level max-min fair sharing of link bandwidth along routes
// (the default). Concurrent transfers contend where their routes share links.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "sim/completion_queue.h"
#include "sim/link_users.h"
#include "sim/maxmin_solver.h"
#include "sim/network_model.h"

namespace dtsim {

// Each flow first waits for its route's latency, then joins the max-min sharing of every
// link on its route and finishes when its last byte is through (SimGrid's LV08 split of
// latency and bandwidth, without its corrective factors).
//
// LONE FLOWS. A flow that starts on links no other flow uses gets, from max-min sharing,
// the capacity of its narrowest link: it runs at that rate outside the solver, with its
// completion worked out directly, until another flow starts on one of its links; it then
// joins the solver at the rate it has (MaxMinSolver::add_running_variable), which is where
// solving it all along would have left it. Rates, completions and link traffic are the
// same either way (tests compare them with the shortcut off); a ring's steps on dedicated
// links, the common case, never touch the solver. Nor do they touch the links' statistics
// until they end: a lone flow alone carries its links from its start to its end at its
// rate, so it adds that traffic in one step when it ends (or joins the solver, or the run
// stops), once per link instead of a load change at each end. A link's `load` in the
// statistics is what the solver has on it; lone flows are never part of it. (A trace then
// shows two lone flows that meet end to start on a link as two busy spans, not one, and a
// lone flow that another joins as its span alone and the solver's after it.)
//
// FAST-FORWARD. A group with repeat = k runs identical rounds. If, during a round, no
// flow of another group shared a link with it, the round's duration T depends only on the
// group itself (max-min allocations decompose over connected components). The next
// rounds would then replay it exactly, so the model skips as many whole rounds as fit
// before anything else can happen (the engine's next event or any model's next
// completion), adding their traffic to the link statistics in one step. This is exact,
// and it is what makes a 4,096-GPU ring all-reduce (8,190 rounds) cost one round.
// Groups whose rounds end alone at the same instant (data-parallel rings on separate
// rails, say) are decided together, after every round that ends then: each skips what
// fits before anything outside the batch can happen, provided their links are disjoint.
//
// PHASE REPLAY. A collective call alike in everything runs the same plan, so its phases
// move the same flows over the same links (a data-parallel step reduces a dozen buckets
// over one group). A phase that ran closed, its links idle when it started and loaded by
// nothing but its own flows until it ended, took a time and left traffic on each link
// that depend on the phase alone (flows sharing no link with others are a component of
// their own, and ends are worked out from time differences only). The model keeps them.
// When the phase starts again with its links idle, and nothing can load them before it
// would end, the full simulation would run it closed again: it is replayed instead, its
// traffic added to its links and its end when it ended before, with no flow simulated.
// Nothing can load them when the runtime knows that no transfer but the call's own can
// start until the call ends (`alone`: every stream with a transfer left waits on the
// call: a data-parallel step's buckets, a collective benchmark's iterations); or, decided
// behind the events already due at that instant, when nothing at all can happen before it
// would end (the engine's next event and every model's next completion, this one's
// included, come strictly later). Otherwise it is simulated as usual. Exact in the same
// sense as fast-forward (tests compare end times and link traffic with replay off), and
// not taken while observers watch the links' busy spans: a replay reports one span per
// link.
class FlowNetworkModel final : public NetworkModel {
 public:
  FlowNetworkModel(Engine& engine, const Topology& topology, Router& router,
                   const ObserverList& observers);
  std::string_view name() const override { return "flow"; }
  void start_group(std::vector<FlowSpec> flows, int64_t repeat, std::function<void()> done) override;
  void start_phase(const std::shared_ptr<const CollectivePlan>& plan, size_t phase,
                   std::function<std::vector<FlowSpec>()> flows, int64_t repeat, bool alone,
                   std::function<void()> done) override;
  // Whether lone flows bypass the solver (on by default; tests turn it off to compare).
  void set_lone_flows(bool on) { lone_flows_ = on; }
  // Whether the solver settles local changes without solving (on by default; tests turn
  // it off to compare).
  void set_solver_local_changes(bool on) { solver_.set_local_changes(on); }
  Time next_completion() override;
  void complete_due(Time now) override;
  // Lone flows still running when the run stops add their traffic so far.
  void finish(Time end) override;
  std::optional<MaxMinSolveCounts> max_min_counts() const override { return solver_.counts(); }

  // What the model holds for a topology of `links` links with at most `flows` flows at
  // once over `flow_links` link crossings in all: its per-link indexes and the solver's
  // constraints, and each flow's record, variable and uses.
  static double bytes_for(double links, double flows, double flow_links);
  // What PHASE REPLAY keeps for a phase of `crossings` link crossings: its node, and per
  // link its id and the index of its figure, counted per crossing (a phase crosses no more
  // links than that). The distinct figures themselves are few (a phase's links carry a
  // handful of different loads) and left out.
  static double phase_outcome_bytes_for(double crossings) {
    return 64 + sizeof(PhaseOutcome) + crossings * (sizeof(LinkId) + sizeof(uint32_t));
  }

 private:
  struct Flow {
    uint32_t group = 0;
    Router::RouteRef route;
    double remaining = 0;  // bytes left as of `last`
    double rate = 0;       // bytes per second
    Time last;
    MaxMinSolver::VarId var = 0;
    uint32_t version = 0;
    bool in_solver = false;
    bool lone = false;  // running outside the solver, alone on its links
  };
  // What a closed run of a collective phase did, for PHASE REPLAY: how long it took, and
  // what it left on each link it crossed. Links that carried the same bytes for the same
  // busy time (most of a phase's) share one figure.
  struct PhaseKey {
    const CollectivePlan* plan = nullptr;
    size_t phase = 0;
    bool operator==(const PhaseKey&) const = default;
  };
  struct PhaseKeyHash {
    size_t operator()(const PhaseKey& k) const {
      return std::hash<const void*>()(k.plan) ^ (k.phase * 0x9E3779B97F4A7C15ull);
    }
  };
  struct PairHash {
    size_t operator()(const std::pair<uint64_t, int64_t>& p) const {
      const uint64_t h = (p.first ^ static_cast<uint64_t>(p.second) * 0xC2B2AE3D27D4EB4Full) *
                         0x9E3779B97F4A7C15ull;
      return static_cast<size_t>(h ^ (h >> 32));
    }
  };
  struct LinkTraffic {
    double bytes = 0;
    Duration busy;
  };
  // A phase whose runs were never closed is given up after this many: recording costs
  // each round its links' figures (a pipeline's phases share links with every other).
  static constexpr int kRecordingTries = 3;
  struct PhaseOutcome {
    std::shared_ptr<const CollectivePlan> plan;  // so that its address names it for the run
    bool kept = false;                           // a closed run was recorded
    bool recording = false;  // a group runs the phase and records it (one at a time)
    int closed_runs_missed = 0;
    Duration duration;
    int64_t rounds = 0;
    std::vector<LinkId> links;
    std::vector<uint32_t> traffic_of_link;  // beside links: an index into traffic
    std::vector<LinkTraffic> traffic;
  };
  // A group that runs a phase with no outcome kept yet records one: the phase's links'
  // figures when it started (its every round crosses the same links), and whether every
  // round so far ran closed.
  struct Recording {
    PhaseOutcome* outcome = nullptr;  // a node of outcomes_, which never moves
    Time start;
    int64_t rounds = 0;  // set by the first round
    bool closed = true;
    std::vector<double> bytes_at_start;  // beside the group's links
    std::vector<Duration> busy_at_start;
  };
  struct Group {
    std::vector<FlowSpec> flows;
    // What every round repeats, worked out by the first (routes never change in a run):
    // each flow's route, beside flows, and (its route's latency, its index into flows),
    // ascending: each run of one latency activates its flows in one event.
    std::vector<Router::RouteRef> routes;
    std::vector<std::pair<int64_t, uint32_t>> by_latency;
    // Where the run of by_latency's entries with the latency of entry `first` ends.
    size_t latency_run_end(size_t first) const;
    std::vector<uint32_t> round_flows;  // beside flows: the current round's flow ids
    bool links_known = false;           // links, own_bytes and own_flows hold every round's
    int64_t rounds_left = 0;
    size_t pending = 0;
    Time round_start;
    bool disturbed = false;
    std::function<void()> done;
    std::unique_ptr<Recording> recording;  // null unless the group records its phase
    // For fast-forward: the links of a round and their statistics when it started.
    std::vector<LinkId> links;
    std::vector<double> own_bytes;  // bytes the round's own flows put on each link
    std::vector<uint32_t> own_flows;        // the round's flows that start on each link
    std::vector<uint64_t> starts_at_start;  // link_starts_ of each link
    std::vector<double> bytes_at_start;
    std::vector<Duration> busy_at_start;
    // Empties the group for its next use. A group slot is taken again and again (every
    // pipeline send is a group), so small lists keep their capacity; a large one (a
    // data-parallel phase's) goes, so that every slot does not end up holding one.
    void reset();
  };

  void start_recorded_group(std::vector<FlowSpec> flows, int64_t repeat, std::function<void()> done,
                            std::unique_ptr<Recording> recording);
  void start_round(uint32_t g);
  // Works out what the group's every round repeats (Group::routes, by_latency).
  void plan_rounds(Group& group);
  // Activates the round's flows of one latency: the run of by_latency from `first`.
  void activate_bucket(uint32_t g, size_t first);
  // When a replay of the kept run would end: none while a link of it is in use, or past
  // the clock.
  std::optional<Time> replay_end(const PhaseOutcome& outcome) const;
  // Ends the phase at `end`, adding the kept run's traffic to its links.
  void replay(const PhaseOutcome& outcome, Time end, std::function<void()> done);
  // What link l carried since its statistics were `bytes_at_start` and `busy_at_start`.
  LinkTraffic traffic_since(LinkId l, double bytes_at_start, Duration busy_at_start, Time now);
  // PHASE REPLAY: replays the kept outcome if nothing can disturb it, else simulates.
  void decide_replay(const PhaseOutcome& outcome,
                     const std::function<std::vector<FlowSpec>()>& flows, int64_t repeat,
                     std::function<void()>& done);
  // The group recorded a closed run of its phase: its outcome is kept.
  void keep_outcome(Group& group, Time now);
  void activate(uint32_t f);
  // Runs flow f, alone on its links, at its narrowest link's capacity.
  void run_alone(uint32_t f);
  // Adds what lone flow f carried on each of its links from its start (flow.last) to
  // `until`: `bytes`, that busy time (0 if it started then), its rate towards the peak.
  void add_lone_traffic(const Flow& flow, Time until, double bytes);
  // A lone flow meets another: it joins the solver at its rate.
  void join_solver(uint32_t f);
  // Flow f is solved as `var` from now on.
  void enter_solver(uint32_t f, MaxMinSolver::VarId var);
  void finish_flow(uint32_t f);
  void on_round_done(uint32_t g);
  // Fast-forwards every group in ready_ as far as the activity outside them allows.
  void decide_ready();
  void finish_or_continue(uint32_t g);
  bool round_was_alone(const Group& group, Time now);
  void settle();
  // Queues flow f's completion at its current rate (none at rate 0: it stalls).
  void schedule_completion(uint32_t f, Time now);
  bool is_current(uint32_t f, uint32_t version) const {
    return (flows_[f].in_solver || flows_[f].lone) && flows_[f].version == version;
  }
  uint32_t new_flow();
  uint32_t new_group();

  // The solver, with a constraint per link (id = link id) added when a flow first needs
  // it: a run whose flows are all lone (a ring on dedicated links) never builds them, 150
  // bytes a link of fresh pages, twice (the memory estimate's model and the run's).
  MaxMinSolver& solver() {
    if (!solver_has_links_) add_link_constraints();
    return solver_;
  }
  void add_link_constraints();
  MaxMinSolver solver_;
  bool solver_has_links_ = false;
  std::vector<Flow> flows_;
  // First freed, first reused: flows that end together (in id order) come back in id
  // order, so a round started from them pushes its completions in heap order (no sifting).
  std::deque<uint32_t> free_flows_;
  std::vector<Group> groups_;
  std::vector<uint32_t> free_groups_;
  std::vector<uint32_t> var_to_flow_;
  LinkUsers link_users_;  // per link, the groups whose flows are active on it
  std::vector<uint32_t> link_stamp_;
  std::vector<uint32_t> link_slot_;  // index of a link in the group being set up
  // What a flow's start reads of each link it crosses, side by side in one record, rather
  // than in the topology's link and the solver's constraint of 150 bytes.
  struct LinkState {
    double capacity = 0;  // the solver's, which never changes in this model
    Duration latency;
    uint32_t lone = 0;  // the lone flow on it + 1, 0 none
  };
  std::vector<LinkState> link_state_;
  // Flows that ever started on each link: a round whose links saw only its own flows start
  // met nothing, even a flow that came and went while its own were not on the link.
  std::vector<uint64_t> link_starts_;
  // Links of lone flows that joined the solver since the last settle.
  std::vector<LinkId> joined_links_;
  bool lone_flows_ = true;
  uint32_t stamp_ = 0;
  CompletionQueue completions_;
  std::vector<uint32_t> ready_;  // groups whose last round ended alone, awaiting decide_ready
  bool decide_pending_ = false;
  std::vector<uint32_t> link_owner_;  // scratch for decide_ready: group + 1 per link, 0 none
  // PHASE REPLAY: by plan and phase, what a closed run of the phase did.
  std::unordered_map<PhaseKey, PhaseOutcome, PhaseKeyHash> outcomes_;
  std::vector<MaxMinSolver::VarId> changed_vars_;
  std::vector<MaxMinSolver::ConstraintId> changed_links_;
};

}  // namespace dtsim
