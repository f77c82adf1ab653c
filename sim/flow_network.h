// `flow` network model: flow-level max-min fair sharing of link bandwidth along routes
// (the default). Concurrent transfers contend where their routes share links.
#pragma once

#include <deque>
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
class FlowNetworkModel final : public NetworkModel {
 public:
  FlowNetworkModel(Engine& engine, const Topology& topology, Router& router,
                   const ObserverList& observers);
  std::string_view name() const override { return "flow"; }
  void start_group(std::vector<FlowSpec> flows, int64_t repeat, std::function<void()> done) override;
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
  struct Group {
    std::vector<FlowSpec> flows;
    int64_t rounds_left = 0;
    size_t pending = 0;
    Time round_start;
    bool disturbed = false;
    std::function<void()> done;
    // For fast-forward: the links of a round and their statistics when it started.
    std::vector<LinkId> links;
    std::vector<double> own_bytes;  // bytes the round's own flows put on each link
    std::vector<double> bytes_at_start;
    std::vector<Duration> busy_at_start;
  };

  void start_round(uint32_t g);
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
  // Links of lone flows that joined the solver since the last settle.
  std::vector<LinkId> joined_links_;
  bool lone_flows_ = true;
  uint32_t stamp_ = 0;
  CompletionQueue completions_;
  std::vector<uint32_t> ready_;  // groups whose last round ended alone, awaiting decide_ready
  bool decide_pending_ = false;
  std::vector<uint32_t> link_owner_;  // scratch for decide_ready: group + 1 per link, 0 none
  std::vector<MaxMinSolver::VarId> changed_vars_;
  std::vector<MaxMinSolver::ConstraintId> changed_links_;
};

}  // namespace dtsim
