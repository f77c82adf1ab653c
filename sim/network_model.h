// The network-model interface and its registry: `analytical` (alpha-beta, no contention)
// and `flow` (max-min fair sharing along routes; the default).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine.h"
#include "sim/link_stats.h"
#include "sim/maxmin_counts.h"
#include "sim/observer.h"
#include "sim/resource_model.h"
#include "sim/router.h"
#include "sim/topology.h"

namespace dtsim {

struct FlowSpec {
  VertexId src = 0;
  VertexId dst = 0;
  Bytes bytes;
};

// A network model moves groups of flows. A group is one collective phase (or a single
// send/recv): its flows start together, the round ends when the last one arrives, and
// `repeat` rounds run back to back. `done` runs once, after the last round.
class NetworkModel : public ResourceModel {
 public:
  NetworkModel(Engine& engine, const Topology& topology, Router& router,
               const ObserverList& observers)
      : engine_(engine), topology_(topology), router_(router), link_stats_(topology, observers) {}

  virtual std::string_view name() const = 0;
  virtual void start_group(std::vector<FlowSpec> flows, int64_t repeat,
                           std::function<void()> done) = 0;
  // Phase `phase` of a collective's plan, whose flows `flows()` makes: a call alike in
  // everything runs the same plan, so a model that prices a phase in closed form prices it
  // once per plan (the analytical model), and one that simulates it may replay what an
  // earlier run of the phase did (the flow model); the others run start_group. `flows` may
  // be kept and called later (it holds what it needs), or not at all. `alone`: the caller
  // knows that no other transfer can start until the whole call ends.
  virtual void start_phase(const std::shared_ptr<const struct CollectivePlan>& plan, size_t phase,
                           std::function<std::vector<FlowSpec>()> flows, int64_t repeat, bool alone,
                           std::function<void()> done) {
    (void)plan;
    (void)phase;
    (void)alone;
    start_group(flows(), repeat, std::move(done));
  }

  // Whether start_plan may run a collective's whole plan, its phases back to back, as one
  // step: a model that works plans out in closed form may (the analytical model, while
  // nothing observes its links phase by phase); otherwise the caller runs the phases.
  virtual bool runs_whole_plans() const { return false; }
  // `flows(i)` makes phase i's flows; `done` runs after the last phase.
  virtual void start_plan(const std::shared_ptr<const struct CollectivePlan>& plan,
                          const std::function<std::vector<FlowSpec>(size_t)>& flows,
                          std::function<void()> done) {
    (void)plan;
    (void)flows;
    (void)done;
    throw std::logic_error("this network model runs a plan phase by phase");
  }

  // Closes link statistics at the end of the run.
  virtual void finish(Time end) { link_stats_.finish(end); }
  const LinkStatsTable& link_stats() const { return link_stats_; }
  // Rounds that were fast-forwarded rather than simulated flow by flow (for reports).
  int64_t fast_forwarded_rounds() const { return fast_forwarded_rounds_; }
  // Collective phases replayed from an earlier run of the same phase rather than
  // simulated (the flow model's PHASE REPLAY; for reports).
  int64_t replayed_phases() const { return replayed_phases_; }
  // How its max-min solves were settled, for a model that shares bandwidth by max-min.
  virtual std::optional<MaxMinSolveCounts> max_min_counts() const { return std::nullopt; }
  // Whether repeated rounds may be fast-forwarded (models that have no such shortcut
  // ignore it: the analytical model works out rounds in closed form either way).
  void set_fast_forward(bool on) { fast_forward_ = on; }
  // Whether a collective phase may replay an earlier run of the same phase (models that
  // simulate no phase twice ignore it).
  void set_phase_replay(bool on) { phase_replay_ = on; }
  bool phase_replay() const { return phase_replay_; }

 protected:
  Engine& engine_;
  const Topology& topology_;
  Router& router_;
  LinkStatsTable link_stats_;
  int64_t fast_forwarded_rounds_ = 0;
  int64_t replayed_phases_ = 0;
  bool fast_forward_ = true;
  bool phase_replay_ = true;
};

struct NetworkModelInfo {
  std::string_view name;
  std::string_view description;
};
std::vector<NetworkModelInfo> network_models();
// nullptr when the name is unknown.
std::unique_ptr<NetworkModel> make_network_model(std::string_view name, Engine& engine,
                                                 const Topology& topology, Router& router,
                                                 const ObserverList& observers);

}  // namespace dtsim
