// Incremental weighted max-min fair sharing of capacities among variables (flows).
//
// PROBLEM. Constraints c (links) have capacities C_c. Variables v (flows) each use a set
// of constraints, have a weight w_v > 0 and an optional upper bound b_v. An allocation
// x_v is max-min fair when it is feasible (for every c: sum of x_v over v using c <= C_c;
// x_v <= b_v) and no x_v / w_v can be raised without lowering some x_u / w_u that is
// already no larger.
//
// ALGORITHM. Progressive filling (Bertsekas & Gallager, "Data Networks", 6.5.2): raise
// every unfixed variable's x_v / w_v together; the first constraint to saturate, at
// level r_c = remaining_c / (sum of unfixed weights on c), fixes all its unfixed variables
// at x_v = w_v * r_c; a bound b_v fixes v alone at level b_v / w_v. Repeat until every
// variable is fixed. Levels are kept in an indexed min-heap (one entry per unsaturated
// constraint and per unfixed bounded variable); fixing a variable only raises the levels
// of its other constraints, which are updated in place once per step. A component of V
// variables, C constraints and E (variable, constraint) incidences costs
// O((V + E) log(V + C)).
//
// INCREMENTALITY. The allocation of a variable depends only on the connected component
// of the variable-constraint graph that holds it. Adding or removing variables and
// changing capacities marks constraints dirty; solve() recomputes only the components
// that contain a dirty constraint, and reports which variables and constraints changed.
// This is what keeps a 4,096-flow collective step cheap when one flow joins or leaves.
//
// LOCAL CHANGES. Each variable remembers its bottleneck: the constraint whose saturation
// fixed it (or its bound). An allocation is max-min fair exactly when every variable has a
// bottleneck: its bound, or a saturated constraint on which no variable has a higher
// x / w (Bertsekas & Gallager, 6.5.2). Two common changes keep that true without solving:
// - Removals that free only unclaimed capacity: if no remaining variable has its
//   bottleneck on a constraint that lost a variable, every bottleneck is untouched and the
//   allocation stays as it is; only those constraints' usage changes. (NVLink flows end
//   beside network flows that the NIC limits: the freed NVLink capacity is no use to them.)
// - A variable added where there is room: it takes the spare capacity of its narrowest
//   constraint (or its bound), which touches no saturated constraint, so every other
//   bottleneck holds; the narrowest constraint becomes its bottleneck if no variable on it
//   has a higher x / w. (A pipeline send over links that other flows do not fill.)
// Otherwise only the variables a change can move are solved (AFFECTED SET), and failing
// that the changed components are solved as above. Either way the allocation is the
// unique max-min fair one; the shortcuts only skip the work, and tests compare them with
// solving every time.
//
// AFFECTED SET. A component can hold thousands of flows (the data-parallel rings that share
// spine links) of which a change moves a few. The variables that can move first are the
// new ones and those whose bottleneck lost a variable; the filling runs on that set alone,
// every other variable frozen at its rate (its usage taken out of the capacities). The
// result is max-min fair if every variable still has a bottleneck, which is checked where
// it can have changed, on the constraints the set crosses: a frozen variable standing
// above a set variable's bottleneck level there, or frozen on a bottleneck that the set
// left unsaturated or rose above, joins the set, and the set is solved again. A set that
// needs more than 8 rounds or grows past 4,096 variables is given up for the component's
// solve. Rates computed with some variables frozen can differ from the component's solve
// in their last bits, so the check allows a relative 1e-10.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "sim/check.h"
#include "sim/maxmin_counts.h"

namespace dtsim {

class MaxMinSolver {
 public:
  using VarId = uint32_t;
  using ConstraintId = uint32_t;
  static constexpr double kUnbounded = std::numeric_limits<double>::infinity();

  // Capacity must be finite and >= 0 (0 is allowed: its variables get rate 0).
  ConstraintId add_constraint(double capacity);
  // Room for `n` constraints in all, so that adding them one by one never moves them.
  void reserve_constraints(size_t n) { cons_.reserve(n); }
  void set_capacity(ConstraintId c, double capacity);

  // Constraints may repeat in `constraints`; a repeated constraint counts once. Weight must
  // be finite and > 0, bound >= 0. A variable without constraints needs a finite bound
  // (its rate is the bound). Ids of removed variables are reused.
  VarId add_variable(std::span<const ConstraintId> constraints, double weight = 1.0,
                     double bound = kUnbounded);
  // A variable that already runs at `rate` outside the solver (a flow that was alone on
  // its links, at the rate the solver would have given it, weight 1, no bound): its
  // constraints' usage counts it, and solve() reports it only if its rate changes, as if
  // it had been solved here all along.
  VarId add_running_variable(std::span<const ConstraintId> constraints, double rate);
  void remove_variable(VarId v);

  // Recomputes the components touched since the last call. Appends to the vectors (when
  // not null) the variables whose rate changed and the constraints whose usage changed.
  // A variable added since the last solve always counts as changed. A change within a
  // relative 1e-12 is not one: such a rate keeps its previous value, so rate() always
  // equals what was last reported. The order is deterministic (not sorted).
  void solve(std::vector<VarId>* changed_variables = nullptr,
             std::vector<ConstraintId>* changed_constraints = nullptr);

  // Whether solve() takes the LOCAL CHANGES shortcuts (on by default; tests turn them off
  // to compare).
  void set_local_changes(bool on) { local_changes_ = on; }
  // Solves that the shortcuts settled without solving a component.
  [[nodiscard]] uint64_t solves_without_filling() const { return counts_.without_filling; }
  // Solves settled by solving the affected set alone.
  [[nodiscard]] uint64_t affected_set_solves() const { return counts_.affected_sets; }
  [[nodiscard]] const MaxMinSolveCounts& counts() const { return counts_; }

  // Rates are 0 until the first solve() after add_variable.
  // Inline: the flow model reads them for every flow and link it touches.
  [[nodiscard]] double rate(VarId v) const {
    DTSIM_CHECK(v < vars_.size() && vars_[v].alive, "unknown variable");
    return vars_[v].rate;
  }
  // The sum of the rates of the variables using c.
  [[nodiscard]] double usage(ConstraintId c) const {
    DTSIM_CHECK(c < cons_.size(), "unknown constraint");
    return cons_[c].usage;
  }
  [[nodiscard]] double capacity(ConstraintId c) const {
    DTSIM_CHECK(c < cons_.size(), "unknown constraint");
    return cons_[c].capacity;
  }
  [[nodiscard]] size_t num_variables() const;  // variables currently present
  [[nodiscard]] size_t num_constraints() const;
  [[nodiscard]] bool dirty() const;

  // Bytes of a constraint's record, of a variable's, and of one use of a constraint by a
  // variable (both sides' index entries): what a memory estimate multiplies.
  static constexpr size_t constraint_bytes();
  static constexpr size_t variable_bytes();
  static constexpr size_t use_bytes();

 private:
  // One (variable, constraint) incidence, seen from each side. `slot` / `pos` is the
  // index of the mirror entry, so either side is removed in O(1) by swap-remove.
  struct User {
    VarId var;
    uint32_t slot;  // index in vars_[var].uses
  };
  struct Use {
    ConstraintId con;
    uint32_t pos;  // index in cons_[con].users
  };
  static constexpr uint32_t kNotQueued = std::numeric_limits<uint32_t>::max();
  struct Constraint {
    double capacity = 0.0;
    double usage = 0.0;
    std::vector<User> users;
    bool dirty = false;
    bool resized = false;  // its capacity changed since the last solve
    // Scratch of the progressive filling, valid while `seen` == the current pass.
    uint64_t seen = 0;
    uint64_t touched = 0;  // == batch_ once queued for a level update
    uint64_t alone = 0;    // == pass_ when its one variable was fixed without the filling
    uint64_t reported = 0;  // == epoch_ once appended to the changed constraints
    double remaining = 0.0;
    double unfixed_weight = 0.0;
    uint32_t unfixed = 0;
    uint32_t heap_pos = kNotQueued;
    // AFFECTED SET scratch: the frozen variables' usage, their highest level and their
    // lowest among those with this bottleneck; the set's usage, its highest level and the
    // level of its variables with this bottleneck.
    double frozen_usage = 0.0;
    double frozen_top = 0.0;
    double frozen_claim = kUnbounded;
    double set_usage = 0.0;
    double set_top = 0.0;
    double set_claim = kUnbounded;
  };
  static constexpr ConstraintId kByBound = std::numeric_limits<ConstraintId>::max();
  struct Variable {
    double weight = 1.0;
    double bound = kUnbounded;
    double rate = 0.0;
    std::vector<Use> uses;
    bool alive = false;
    bool solved = false;  // false until the first solve() after add_variable
    uint64_t seen = 0;   // == pass_ while a member of the filling's variables
    uint64_t fixed = 0;  // == pass_ once fixed in the current filling
    uint64_t in_set = 0;  // == epoch_ once in the current solve's affected set
    double new_rate = 0.0;
    uint32_t heap_pos = kNotQueued;  // entry of its bound, if finite
    // The constraint whose saturation fixed it in its last solve, or kByBound.
    ConstraintId bottleneck = kByBound;
    uint64_t placed = 0;  // == epoch_ once placed in spare capacity by the current solve
  };
  // A candidate saturation level: of constraint `id` (kind 0) or of the bound of variable
  // `id` (kind 1). Ties break on (kind, id), so results never depend on heap internals.
  struct Level {
    double level;
    uint64_t key;  // kind << 32 | id
    bool before(const Level& o) const { return level != o.level ? level < o.level : key < o.key; }
  };

  // LOCAL CHANGES: takes out of the dirty constraints those that only lost variables and
  // that no remaining variable has as its bottleneck, updating their usage; then places
  // the added variables that fit in spare capacity, taking them out of the dirty ones.
  void settle_unclaimed(std::vector<ConstraintId>* changed_constraints);
  void place_in_spare(std::vector<ConstraintId>* changed_constraints);
  bool fits_in_spare(VarId v);
  // AFFECTED SET: true when the solve was settled by solving the affected set alone.
  bool solve_affected_set(std::vector<VarId>* changed_variables,
                          std::vector<ConstraintId>* changed_constraints);
  void join_set(VarId v);
  // Marks the set and the constraints it crosses as the filling's members.
  void take_set_as_members();
  // Frozen variables that lost their bottleneck to the set's new rates, into violators_.
  void find_violators();
  // A constraint's usage summed over its users (the same sum wherever it is updated, so
  // that a shortcut's usage equals a solve's to the bit).
  void update_usage(ConstraintId c, std::vector<ConstraintId>* changed_constraints);
  // Appends c to the changed constraints once per solve.
  void note_changed(ConstraintId c, std::vector<ConstraintId>* changed_constraints);
  void collect_components();
  // Progressive filling of the members (variables and constraints stamped with pass_);
  // non-member users of a member constraint keep their rates and take their usage out of
  // its capacity.
  void fill();
  bool fix_if_alone(VarId v);
  void fix_variable(VarId v, double rate, ConstraintId bottleneck);
  void report(std::vector<VarId>* changed_variables,
              std::vector<ConstraintId>* changed_constraints);
  // Indexed binary min-heap of Levels; every entry knows its position, so a constraint's
  // level is updated in place rather than pushed again.
  uint32_t& heap_pos(uint64_t key);
  void heap_place(size_t i, const Level& l);
  void heap_push(const Level& l);
  void heap_erase(uint32_t pos);
  void heap_sift_up(size_t i);
  void heap_sift_down(size_t i);

  std::vector<Constraint> cons_;
  std::vector<Variable> vars_;
  std::vector<VarId> free_vars_;
  size_t num_alive_ = 0;
  bool local_changes_ = true;
  MaxMinSolveCounts counts_;
  std::vector<VarId> set_;        // the current solve's affected set
  std::vector<VarId> violators_;  // frozen variables found to lose their bottleneck
  std::vector<VarId> placed_;  // placed in spare capacity by the current solve
  // Seeds of the next solve: constraints marked dirty, variables added.
  std::vector<ConstraintId> dirty_cons_;
  std::vector<VarId> dirty_vars_;
  // Stamps in cons_/vars_ compare against epoch_ (one per solve), pass_ (one per filling
  // and per deduplicated constraint list) and batch_, so nothing is cleared between
  // solves.
  uint64_t epoch_ = 0;
  uint64_t pass_ = 0;
  uint64_t batch_ = 0;  // one per saturation step
  // Per-solve work lists, kept to reuse their memory.
  std::vector<ConstraintId> comp_cons_;
  std::vector<VarId> comp_vars_;
  std::vector<ConstraintId> touched_;  // constraints whose level changed in this step
  std::vector<Level> heap_;
};

constexpr size_t MaxMinSolver::constraint_bytes() { return sizeof(Constraint); }
constexpr size_t MaxMinSolver::variable_bytes() { return sizeof(Variable); }
constexpr size_t MaxMinSolver::use_bytes() { return sizeof(User) + sizeof(Use); }

}  // namespace dtsim
