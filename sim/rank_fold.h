// Ranks that run alike, and whether every interaction between ranks maps onto one rank of
// each class: the classes and the check that a run simulating one rank per class stands on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/task_graph.h"
#include "sim/topology.h"

namespace dtsim {

// Ranks are alike when the graph stores them as instances of one template (they run the
// same tasks but for their peers and calls) on devices of one spec and one speed. Each
// class stands on its lowest rank, its representative; the others are its shadows. The
// mapping rank -> representative is consistent with the graph when every call and
// message between ranks maps onto the representatives' own:
//
// - a call is *simulated* when each member's representative holds a task of that very
//   call (a data-parallel call over the replicas of a stage when the replicas fold; a
//   replica's tensor-parallel call when its tensor ranks do), and a *mirror* of call m when
//   no member's does: each member's representative holds, at the member's position, a task
//   of m, members[i] maps to m's members[i] for every i, and the two are priced alike (op,
//   algorithm, bytes, options, calls, type);
// - a message is the representatives' own, or a mirror: the send's and the recv's images
//   (the tasks at the same positions on their representatives) are a message pair;
// - a peer copy's peer maps onto the representative's.
//
// Anything else (a call with some members' representatives in it and others' not, a
// message to another replica's rank) leaves the fold inconsistent, and a run folds nothing.
// The classes err on the side of apart: ranks whose records the graph copied for each
// (set_duration with a duration its template lacks, as repricing a task-graph file does)
// stand alone even where the copies are equal, and a template that no split of its ranks
// by their place in one call makes consistent folds nothing.
// The graph alone cannot say that a mirror costs what its source does on the network (a
// replica's tensor-parallel call on another node's links): the run that folds compares
// the prices.
struct RankFold {
  std::vector<int> representative;  // by rank; a rank alone in its class stands for itself
  int classes = 0;
  int largest_class = 0;
  // By call: itself when simulated, the call it mirrors otherwise.
  std::vector<uint32_t> call_source;
  int64_t mirror_calls = 0;
  int64_t messages = 0;  // send/recv pairs
  int64_t mirror_messages = 0;
  // Why ranks fall into no class with others, when the graph keeps them apart (crowded CPU
  // kernels share a CPU with their neighbours); empty otherwise.
  std::string unclassed;
  // Empty when the mapping is consistent; otherwise the first interaction that does not
  // map, in a sentence naming the ranks and tasks.
  std::string inconsistent;
  bool consistent() const { return inconsistent.empty(); }
  // Simulating one rank of each class would run fewer ranks than the graph has.
  bool folds() const { return consistent() && classes < static_cast<int>(representative.size()); }
};

// Meant for a graph valid on `cluster` (TaskGraph::validate: every call's members hold its
// tasks, every send meets its recv); on another, the answer means nothing but reads
// nothing out of bounds.
RankFold fold_ranks(const TaskGraph& graph, const Cluster& cluster);

}  // namespace dtsim
