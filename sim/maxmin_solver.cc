// Incremental weighted max-min fair sharing: component search plus progressive filling.
#include "sim/maxmin_solver.h"

#include <algorithm>
#include <cmath>

#include "sim/check.h"

namespace dtsim {
namespace {

constexpr uint64_t kConstraintKind = 0;
constexpr uint64_t kBoundKind = 1;
constexpr double kChangeTolerance = 1e-12;
// AFFECTED SET: how far a level or a usage may stray, relatively, before a frozen
// variable counts as having lost its bottleneck (rates of one level computed in two
// fillings differ in their last bits). A set that needs more rounds, or grows past a few
// thousand variables, is nearly always its whole component (a tree phase's flows held by
// one shared link): solving the component once costs less than more rounds.
constexpr double kBottleneckTolerance = 1e-10;
constexpr int kAffectedSetRounds = 8;
constexpr size_t kAffectedSetLimit = 4096;

bool differs(double a, double b) {
  return std::abs(a - b) > kChangeTolerance * std::max(std::abs(a), std::abs(b));
}

}  // namespace

MaxMinSolver::ConstraintId MaxMinSolver::add_constraint(double capacity) {
  DTSIM_CHECK(std::isfinite(capacity) && capacity >= 0.0,
              "constraint capacity must be finite and non-negative");
  DTSIM_CHECK(cons_.size() < std::numeric_limits<ConstraintId>::max(), "too many constraints");
  cons_.emplace_back();
  cons_.back().capacity = capacity;
  return static_cast<ConstraintId>(cons_.size() - 1);
}

void MaxMinSolver::set_capacity(ConstraintId c, double capacity) {
  DTSIM_CHECK(c < cons_.size(), "unknown constraint");
  DTSIM_CHECK(std::isfinite(capacity) && capacity >= 0.0,
              "constraint capacity must be finite and non-negative");
  Constraint& con = cons_[c];
  if (con.capacity == capacity) return;
  con.capacity = capacity;
  con.resized = true;
  if (!con.dirty) {
    con.dirty = true;
    dirty_cons_.push_back(c);
  }
}

MaxMinSolver::VarId MaxMinSolver::add_variable(std::span<const ConstraintId> constraints,
                                               double weight, double bound) {
  DTSIM_CHECK(std::isfinite(weight) && weight > 0.0, "variable weight must be finite and > 0");
  DTSIM_CHECK(bound >= 0.0, "variable bound must be >= 0");  // also rejects NaN
  DTSIM_CHECK(!constraints.empty() || std::isfinite(bound),
              "a variable without constraints needs a finite bound");
  VarId v;
  if (!free_vars_.empty()) {
    v = free_vars_.back();
    free_vars_.pop_back();
  } else {
    DTSIM_CHECK(vars_.size() < std::numeric_limits<VarId>::max(), "too many variables");
    v = static_cast<VarId>(vars_.size());
    vars_.emplace_back();
  }
  Variable& var = vars_[v];
  var.weight = weight;
  var.bound = bound;
  var.rate = 0.0;
  var.alive = true;
  var.solved = false;
  var.bottleneck = kByBound;
  var.uses.clear();  // keeps the capacity of a recycled slot
  // A fresh stamp value deduplicates the list without clearing anything.
  const uint64_t mark = ++pass_;
  for (const ConstraintId c : constraints) {
    DTSIM_CHECK(c < cons_.size(), "unknown constraint");
    Constraint& con = cons_[c];
    if (con.seen == mark) continue;
    con.seen = mark;
    var.uses.push_back(Use{c, static_cast<uint32_t>(con.users.size())});
    con.users.push_back(User{v, static_cast<uint32_t>(var.uses.size() - 1)});
  }
  ++num_alive_;
  dirty_vars_.push_back(v);
  return v;
}

MaxMinSolver::VarId MaxMinSolver::add_running_variable(std::span<const ConstraintId> constraints,
                                                       double rate) {
  DTSIM_CHECK(!constraints.empty(), "a running variable crosses its constraints");
  const VarId v = add_variable(constraints);
  Variable& var = vars_[v];
  var.rate = rate;
  var.solved = true;
  // It was alone: its constraints carry it and nothing else, and the narrowest (the first,
  // as the filling breaks ties) is its bottleneck.
  double narrowest = kUnbounded;
  for (const Use& use : var.uses) {
    Constraint& con = cons_[use.con];
    con.usage = rate;
    if (con.capacity < narrowest) {
      narrowest = con.capacity;
      var.bottleneck = use.con;
    }
  }
  return v;
}

void MaxMinSolver::remove_variable(VarId v) {
  DTSIM_CHECK(v < vars_.size() && vars_[v].alive, "unknown variable");
  Variable& var = vars_[v];
  for (const Use& use : var.uses) {
    Constraint& con = cons_[use.con];
    const User moved = con.users.back();
    con.users[use.pos] = moved;
    vars_[moved.var].uses[moved.slot].pos = use.pos;
    con.users.pop_back();
    if (!con.dirty) {
      con.dirty = true;
      dirty_cons_.push_back(use.con);
    }
  }
  var.uses.clear();
  var.alive = false;
  var.rate = 0.0;
  --num_alive_;
  free_vars_.push_back(v);
}

void MaxMinSolver::solve(std::vector<VarId>* changed_variables,
                         std::vector<ConstraintId>* changed_constraints) {
  if (!dirty()) return;
  ++counts_.solves;
  ++epoch_;
  placed_.clear();
  if (local_changes_) {
    settle_unclaimed(changed_constraints);
    place_in_spare(changed_constraints);
  }
  if (dirty()) {
    if (!(local_changes_ && solve_affected_set(changed_variables, changed_constraints))) {
      collect_components();
      ++counts_.components;
      counts_.component_variables += comp_vars_.size();
      fill();
      report(changed_variables, changed_constraints);
    }
  } else {
    ++counts_.without_filling;
  }
  // A placed variable that a component's solve took up again was reported there.
  for (const VarId v : placed_) {
    Variable& var = vars_[v];
    if (var.solved) continue;
    var.solved = true;
    if (changed_variables != nullptr) changed_variables->push_back(v);
  }
}

void MaxMinSolver::update_usage(ConstraintId c, std::vector<ConstraintId>* changed_constraints) {
  Constraint& con = cons_[c];
  double usage = 0.0;
  for (const User& u : con.users) usage += vars_[u.var].rate;
  const bool changed = differs(usage, con.usage);
  con.usage = usage;
  if (changed) note_changed(c, changed_constraints);
}

void MaxMinSolver::note_changed(ConstraintId c, std::vector<ConstraintId>* changed_constraints) {
  Constraint& con = cons_[c];
  if (changed_constraints == nullptr || con.reported == epoch_) return;
  con.reported = epoch_;
  changed_constraints->push_back(c);
}

void MaxMinSolver::settle_unclaimed(std::vector<ConstraintId>* changed_constraints) {
  size_t kept = 0;
  for (const ConstraintId c : dirty_cons_) {
    Constraint& con = cons_[c];
    // A variable added since the last solve has no bottleneck yet and is placed or solved
    // after this; until then its rate is 0.
    const bool claimed =
        con.resized || std::any_of(con.users.begin(), con.users.end(), [&](const User& u) {
          return vars_[u.var].bottleneck == c;
        });
    if (claimed) {
      dirty_cons_[kept++] = c;
      continue;
    }
    con.dirty = false;
    update_usage(c, changed_constraints);
  }
  dirty_cons_.resize(kept);
}

void MaxMinSolver::place_in_spare(std::vector<ConstraintId>* changed_constraints) {
  size_t kept = 0;
  for (const VarId v : dirty_vars_) {
    Variable& var = vars_[v];
    // A running variable came in at its max-min rate, alone; it holds unless a new one
    // crosses its bottleneck, which then does not fit and solves the component.
    if (!var.alive || var.solved || var.placed == epoch_) continue;
    if (!fits_in_spare(v)) {
      dirty_vars_[kept++] = v;
      continue;
    }
    placed_.push_back(v);
    for (const Use& use : var.uses) update_usage(use.con, changed_constraints);
  }
  dirty_vars_.resize(kept);
}

// Progressive filling would fix v at its narrowest spare capacity: nothing saturated is
// crossed, and no variable on that constraint stands higher than v would.
bool MaxMinSolver::fits_in_spare(VarId v) {
  Variable& var = vars_[v];
  double rate = var.bound;
  ConstraintId narrowest = kByBound;
  for (const Use& use : var.uses) {
    const Constraint& con = cons_[use.con];
    if (con.dirty) return false;  // its usage is stale until its component is solved
    const double spare = std::max(0.0, con.capacity - con.usage);
    if (spare < rate) {
      rate = spare;
      narrowest = use.con;
    }
  }
  if (narrowest != kByBound) {
    // No room: v could only stand at 0, which the others there rarely do; solve instead.
    if (!(rate > 0.0)) return false;
    const double level = rate / var.weight;
    for (const User& u : cons_[narrowest].users) {
      const Variable& other = vars_[u.var];
      if (u.var == v || !(other.solved || other.placed == epoch_)) continue;
      const double other_level = other.rate / other.weight;
      if (other_level > level && differs(other_level, level)) return false;
    }
  }
  var.rate = rate;
  var.bottleneck = narrowest;
  var.placed = epoch_;
  return true;
}

// Breadth-first search over the bipartite graph from every seed. The work lists double as
// the BFS queues; stamps make "seen" O(1) without clearing arrays between solves.
void MaxMinSolver::collect_components() {
  ++pass_;
  comp_cons_.clear();
  comp_vars_.clear();
  auto reach_constraint = [this](ConstraintId c) {
    Constraint& con = cons_[c];
    if (con.seen == pass_) return;
    con.seen = pass_;
    comp_cons_.push_back(c);
  };
  auto reach_variable = [this](VarId v) {
    Variable& var = vars_[v];
    if (!var.alive || var.seen == pass_) return;
    var.seen = pass_;
    comp_vars_.push_back(v);
  };
  for (const ConstraintId c : dirty_cons_) {
    cons_[c].dirty = false;
    cons_[c].resized = false;
    reach_constraint(c);
  }
  for (const VarId v : dirty_vars_) reach_variable(v);
  dirty_cons_.clear();
  dirty_vars_.clear();

  size_t next_con = 0;
  size_t next_var = 0;
  while (next_con < comp_cons_.size() || next_var < comp_vars_.size()) {
    for (; next_con < comp_cons_.size(); ++next_con) {
      for (const User& u : cons_[comp_cons_[next_con]].users) reach_variable(u.var);
    }
    for (; next_var < comp_vars_.size(); ++next_var) {
      for (const Use& use : vars_[comp_vars_[next_var]].uses) reach_constraint(use.con);
    }
  }
}

uint32_t& MaxMinSolver::heap_pos(uint64_t key) {
  const auto id = static_cast<uint32_t>(key);
  return (key >> 32) == kConstraintKind ? cons_[id].heap_pos : vars_[id].heap_pos;
}

void MaxMinSolver::heap_place(size_t i, const Level& l) {
  heap_[i] = l;
  heap_pos(l.key) = static_cast<uint32_t>(i);
}

void MaxMinSolver::heap_sift_up(size_t i) {
  const Level l = heap_[i];
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (!l.before(heap_[parent])) break;
    heap_place(i, heap_[parent]);
    i = parent;
  }
  heap_place(i, l);
}

void MaxMinSolver::heap_sift_down(size_t i) {
  const Level l = heap_[i];
  const size_t n = heap_.size();
  while (true) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_[child + 1].before(heap_[child])) ++child;
    if (!heap_[child].before(l)) break;
    heap_place(i, heap_[child]);
    i = child;
  }
  heap_place(i, l);
}

void MaxMinSolver::heap_push(const Level& l) {
  heap_.push_back(l);
  heap_sift_up(heap_.size() - 1);
}

void MaxMinSolver::heap_erase(uint32_t pos) {
  heap_pos(heap_[pos].key) = kNotQueued;
  const Level last = heap_.back();
  heap_.pop_back();
  if (pos == heap_.size()) return;
  heap_place(pos, last);
  if (pos > 0 && last.before(heap_[(pos - 1) / 2])) {
    heap_sift_up(pos);
  } else {
    heap_sift_down(pos);
  }
}

// Fixes v and takes its rate and weight out of every constraint it crosses; those whose
// level moved are queued in touched_. A saturating constraint has unfixed == 0 already
// and is left alone.
void MaxMinSolver::fix_variable(VarId v, double rate, ConstraintId bottleneck) {
  Variable& var = vars_[v];
  var.fixed = pass_;
  var.new_rate = rate;
  var.bottleneck = bottleneck;
  if (var.heap_pos != kNotQueued) heap_erase(var.heap_pos);
  for (const Use& use : var.uses) {
    Constraint& con = cons_[use.con];
    if (con.unfixed == 0) continue;
    if (--con.unfixed == 0) {
      heap_erase(con.heap_pos);
      continue;
    }
    con.remaining = std::max(0.0, con.remaining - rate);
    con.unfixed_weight -= var.weight;
    if (!(con.unfixed_weight > 0.0)) {
      // Cancellation between weights of very different sizes: recompute exactly.
      con.unfixed_weight = 0.0;
      for (const User& u : con.users) {
        const Variable& other = vars_[u.var];
        if (other.seen == pass_ && other.fixed != pass_) con.unfixed_weight += other.weight;
      }
    }
    if (con.touched != batch_) {
      con.touched = batch_;
      touched_.push_back(use.con);
    }
  }
}

// A variable whose every constraint is its own is a component alone: the filling would pop
// its lowest level (a constraint's before its bound at equal levels) and fix it there.
// Worked out directly, to the bit: uncontended flows (a ring's steps on dedicated links)
// are the common case, and a heap round trip per constraint cost most of a round.
bool MaxMinSolver::fix_if_alone(VarId v) {
  Variable& var = vars_[v];
  double level = kUnbounded;
  ConstraintId narrowest = kByBound;
  for (const Use& use : var.uses) {
    const Constraint& con = cons_[use.con];
    if (con.users.size() != 1) return false;
    if (con.capacity / var.weight < level) {
      level = con.capacity / var.weight;
      narrowest = use.con;
    }
  }
  var.fixed = pass_;
  var.new_rate =
      var.bound / var.weight < level ? var.bound : std::min(var.weight * level, var.bound);
  var.bottleneck = var.new_rate == var.bound ? kByBound : narrowest;
  for (const Use& use : var.uses) cons_[use.con].alone = pass_;
  return true;
}

void MaxMinSolver::fill() {
  heap_.clear();
  size_t unfixed_vars = comp_vars_.size();
  for (const VarId v : comp_vars_) {
    if (fix_if_alone(v)) --unfixed_vars;
  }
  for (const ConstraintId c : comp_cons_) {
    Constraint& con = cons_[c];
    con.heap_pos = kNotQueued;
    con.frozen_usage = 0.0;
    con.frozen_top = 0.0;
    con.frozen_claim = kUnbounded;
    if (con.alone == pass_) {
      con.unfixed = 0;
      continue;
    }
    con.unfixed = 0;
    con.unfixed_weight = 0.0;
    for (const User& u : con.users) {
      const Variable& var = vars_[u.var];
      if (var.seen == pass_) {
        ++con.unfixed;
        con.unfixed_weight += var.weight;
        continue;
      }
      const double level = var.rate / var.weight;
      con.frozen_usage += var.rate;
      con.frozen_top = std::max(con.frozen_top, level);
      if (var.bottleneck == c) con.frozen_claim = std::min(con.frozen_claim, level);
    }
    con.remaining = con.frozen_usage > 0.0 ? std::max(0.0, con.capacity - con.frozen_usage)
                                           : con.capacity;
    if (con.unfixed > 0) {
      heap_push(Level{con.remaining / con.unfixed_weight, (kConstraintKind << 32) | c});
    }
  }
  for (const VarId v : comp_vars_) {
    Variable& var = vars_[v];
    var.heap_pos = kNotQueued;
    if (var.fixed != pass_ && std::isfinite(var.bound)) {
      heap_push(Level{var.bound / var.weight, (kBoundKind << 32) | v});
    }
  }

  double floor = 0.0;  // the level of the last step
  while (unfixed_vars > 0) {
    DTSIM_CHECK(!heap_.empty(), "progressive filling left a variable unfixed");
    const Level top = heap_.front();
    heap_erase(0);
    floor = std::max(floor, top.level);
    ++batch_;
    const auto id = static_cast<uint32_t>(top.key);
    if ((top.key >> 32) == kBoundKind) {
      fix_variable(id, vars_[id].bound, kByBound);
      --unfixed_vars;
    } else {
      Constraint& con = cons_[id];
      con.unfixed = 0;  // saturated: fix_variable must leave it alone
      for (const User& u : con.users) {
        const Variable& var = vars_[u.var];
        if (var.seen != pass_ || var.fixed == pass_) continue;
        // min: a bound within rounding of the level may not have popped yet.
        const double rate = var.weight * top.level;
        if (rate < var.bound) {
          fix_variable(u.var, rate, id);
        } else {
          fix_variable(u.var, var.bound, kByBound);
        }
        --unfixed_vars;
      }
    }
    // Mathematically these levels only rise and stay >= floor; rounding can put one a hair
    // below, and the clamp keeps the filling monotone (the excess is within rounding).
    for (const ConstraintId c : touched_) {
      const Constraint& con = cons_[c];
      if (con.heap_pos == kNotQueued) continue;
      heap_[con.heap_pos].level = std::max(con.remaining / con.unfixed_weight, floor);
      heap_sift_down(con.heap_pos);
      heap_sift_up(con.heap_pos);
    }
    touched_.clear();
  }
  DTSIM_CHECK(heap_.empty(), "progressive filling left a level queued");
}

bool MaxMinSolver::solve_affected_set(std::vector<VarId>* changed_variables,
                                      std::vector<ConstraintId>* changed_constraints) {
  set_.clear();
  for (const ConstraintId c : dirty_cons_) {
    const Constraint& con = cons_[c];
    // A smaller capacity may no longer hold its frozen variables.
    if (con.resized) return false;
    for (const User& u : con.users) {
      if (vars_[u.var].bottleneck == c) join_set(u.var);
    }
  }
  for (const VarId v : dirty_vars_) {
    const Variable& var = vars_[v];
    if (var.alive && !var.solved && var.placed != epoch_) join_set(v);
  }
  for (int round = 0; round < kAffectedSetRounds && set_.size() <= kAffectedSetLimit; ++round) {
    take_set_as_members();
    fill();
    find_violators();
    if (violators_.empty()) {
      // Every dirty constraint is crossed by the set (by the variables it bottlenecks), so
      // report() updates its usage.
      for (const ConstraintId c : dirty_cons_) cons_[c].dirty = false;
      dirty_cons_.clear();
      dirty_vars_.clear();
      report(changed_variables, changed_constraints);
      ++counts_.affected_sets;
      return true;
    }
    for (const VarId v : violators_) join_set(v);
  }
  ++counts_.affected_sets_given_up;
  return false;
}

void MaxMinSolver::join_set(VarId v) {
  Variable& var = vars_[v];
  if (var.in_set == epoch_) return;
  var.in_set = epoch_;
  set_.push_back(v);
}

void MaxMinSolver::take_set_as_members() {
  ++pass_;
  comp_vars_.assign(set_.begin(), set_.end());
  comp_cons_.clear();
  for (const VarId v : set_) {
    Variable& var = vars_[v];
    var.seen = pass_;
    for (const Use& use : var.uses) {
      Constraint& con = cons_[use.con];
      if (con.seen == pass_) continue;
      con.seen = pass_;
      comp_cons_.push_back(use.con);
    }
  }
}

// A frozen variable keeps its bottleneck unless, on a constraint the set crosses, it
// stands above the level at which that constraint now fixes a set variable, or that
// constraint is its bottleneck and is no longer full or has a set variable above it.
// Constraints outside the set's reach kept their users and rates, so their claims hold.
void MaxMinSolver::find_violators() {
  violators_.clear();
  for (const ConstraintId c : comp_cons_) {
    Constraint& con = cons_[c];
    con.set_usage = 0.0;
    con.set_top = 0.0;
    con.set_claim = kUnbounded;
  }
  for (const VarId v : comp_vars_) {
    const Variable& var = vars_[v];
    const double level = var.new_rate / var.weight;
    for (const Use& use : var.uses) {
      Constraint& con = cons_[use.con];
      con.set_usage += var.new_rate;
      con.set_top = std::max(con.set_top, level);
      if (var.bottleneck == use.con) con.set_claim = std::min(con.set_claim, level);
    }
  }
  constexpr double kUp = 1.0 + kBottleneckTolerance;
  constexpr double kDown = 1.0 - kBottleneckTolerance;
  for (const ConstraintId c : comp_cons_) {
    const Constraint& con = cons_[c];
    const bool full = con.frozen_usage + con.set_usage >= con.capacity * kDown;
    const double above = con.set_claim * kUp;  // a frozen level above this violates
    const double below = full ? con.set_top * kDown : kUnbounded;  // a claim below this
    if (!(con.frozen_top > above) && !(con.frozen_claim < below)) continue;
    for (const User& u : con.users) {
      const Variable& var = vars_[u.var];
      if (var.seen == pass_) continue;
      const double level = var.rate / var.weight;
      if (level > above || (var.bottleneck == c && level < below)) violators_.push_back(u.var);
    }
  }
}

void MaxMinSolver::report(std::vector<VarId>* changed_variables,
                          std::vector<ConstraintId>* changed_constraints) {
  for (const VarId v : comp_vars_) {
    Variable& var = vars_[v];
    if (var.solved && !differs(var.new_rate, var.rate)) continue;
    var.solved = true;
    var.rate = var.new_rate;
    if (changed_variables != nullptr) changed_variables->push_back(v);
  }
  for (const ConstraintId c : comp_cons_) update_usage(c, changed_constraints);
}

size_t MaxMinSolver::num_variables() const { return num_alive_; }

size_t MaxMinSolver::num_constraints() const { return cons_.size(); }

bool MaxMinSolver::dirty() const { return !dirty_cons_.empty() || !dirty_vars_.empty(); }

}  // namespace dtsim
