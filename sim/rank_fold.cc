// Ranks that run alike (sim/rank_fold.h): classes from the graph's templates and the
// devices, then every call, message and peer copy checked against the representatives'.
#include "sim/rank_fold.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

namespace dtsim {
namespace {

constexpr int kUnbracketed = -1;  // no bracket of its own: a class of its own
constexpr uint32_t kNoSource = UINT32_MAX;

bool priced_alike(const CollectiveCall& a, const CollectiveCall& b) {
  return a.op == b.op && a.algorithm == b.algorithm && a.bytes == b.bytes &&
         a.options.chunk_bytes == b.options.chunk_bytes && a.options.torus_x == b.options.torus_x &&
         a.options.torus_y == b.options.torus_y && a.options.root == b.options.root &&
         a.analytical == b.analytical && a.call_count() == b.call_count() && a.dtype == b.dtype &&
         a.reduce == b.reduce;
}

std::string call_name(const TaskGraph& g, uint32_t c) {
  return "call " + std::to_string(c) + " (\"" + g.collectives()[c].label + "\")";
}

class Folder {
 public:
  Folder(const TaskGraph& graph, const Cluster& cluster)
      : graph_(graph), layouts_(graph.rank_layouts()), num_ranks_(cluster.num_ranks()) {
    fold_.representative.resize(static_cast<size_t>(num_ranks_));
    bracket_.assign(static_cast<size_t>(num_ranks_), kUnbracketed);
    classify(cluster);
  }

  RankFold run() {
    // Refine until the calls map, or no split can make them.
    std::map<uint32_t, Split> splits;  // by template: its ranks' first record
    while (true) {
      choose_representatives();
      splits.clear();
      if (check_calls(splits) || splits.empty()) break;
      // A split separates two members of its call unless they hold it at other places
      // of their template; then nothing more can be split.
      const int before = classes_;
      for (const auto& [tmpl, one] : splits) refine(one);
      if (classes_ == before) break;
    }
    fold_.messages = static_cast<int64_t>(graph_.counts().messages / 2);
    // With every rank its own representative, every interaction is its own image.
    if (fold_.consistent() && fold_.classes < num_ranks_) check_peers_and_messages();
    return std::move(fold_);
  }

 private:
  // Ranks of one class that a mirror call needs apart: the ranks of the shadow's template
  // (a member of `call` on the same representative as another member) are split by their
  // place in their own call at the override `index` where the shadow holds `call`.
  struct Split {
    uint32_t call = 0;
    int shadow = 0;
    size_t index = 0;
  };

  bool shadow(int rank) const { return fold_.representative[rank] != rank; }
  const TaskGraph::RankLayout& layout_of(int rank) const { return layouts_[bracket_[rank]]; }
  int rank_of(TaskId id) const { return graph_.task(id).rank; }

  void classify(const Cluster& cluster) {
    // A rank with one bracket and no task outside it may join a class; others stand alone.
    alone_.assign(static_cast<size_t>(num_ranks_), 0);
    for (size_t i = 0; i < layouts_.size(); ++i) {
      const TaskGraph::RankLayout& l = layouts_[i];
      if (l.rank < 0) {
        for (TaskId id = l.first_id; id < l.first_id + l.size; ++id) {
          const int r = rank_of(id);
          if (r >= 0 && r < num_ranks_) alone_[r] = 1;
        }
      } else if (l.rank < num_ranks_) {
        if (bracket_[l.rank] != kUnbracketed) alone_[l.rank] = 1;
        bracket_[l.rank] = static_cast<int>(i);
      }
    }
    // Crowded CPU kernels slow by what their node's other ranks compute: ranks of one
    // template on different nodes do not run alike.
    if (graph_.has_crowding())
      fold_.unclassed = "its CPU kernels slow by what the other ranks of their node compute";
    for (int r = 0; r < num_ranks_; ++r) {
      if (bracket_[r] == kUnbracketed || !fold_.unclassed.empty()) alone_[r] = 1;
    }
    using Key = std::tuple<uint32_t, uint32_t, const DeviceSpec*, double>;
    std::map<Key, int> class_of_key;
    class_.resize(static_cast<size_t>(num_ranks_));
    for (int r = 0; r < num_ranks_; ++r) {
      if (alone_[r]) {
        class_[r] = classes_++;
        continue;
      }
      const TaskGraph::RankLayout& l = layout_of(r);
      const ClusterDevice& d = cluster.devices[r];
      class_[r] = class_of_key.try_emplace(Key{l.first_record, l.size, d.spec, d.speed}, classes_)
                      .first->second;
      if (class_[r] == classes_) ++classes_;
    }
  }

  // Each class stands on its lowest rank.
  void choose_representatives() {
    std::vector<int> first(static_cast<size_t>(classes_), -1), size(first.size(), 0);
    fold_.classes = classes_;
    fold_.largest_class = 0;
    for (int r = 0; r < num_ranks_; ++r) {
      int& rep = first[class_[r]];
      if (rep < 0) rep = r;
      fold_.representative[r] = rep;
      fold_.largest_class = std::max(fold_.largest_class, ++size[class_[r]]);
    }
  }

  void refine(const Split& split) {
    const uint32_t tmpl = layout_of(split.shadow).first_record;
    std::map<std::pair<int, size_t>, int> class_of;
    std::map<int, size_t> kept;  // class -> the place whose ranks keep its number
    for (int r = 0; r < num_ranks_; ++r) {
      if (alone_[r] || layout_of(r).first_record != tmpl) continue;
      const auto call = static_cast<uint32_t>(layout_of(r).overrides[split.index]);
      size_t place = SIZE_MAX;  // a call the graph lacks: no place
      if (call < graph_.collectives().size()) {
        const auto& members = graph_.collectives()[call].members;
        place = static_cast<size_t>(std::find(members.begin(), members.end(), r) - members.begin());
      }
      const auto keeper = kept.try_emplace(class_[r], place).first;
      const auto [it, added] = class_of.try_emplace({class_[r], place}, class_[r]);
      if (added && keeper->second != place) it->second = classes_++;
      class_[r] = it->second;
    }
  }

  // What each override of a template's ranks is, from one rank's tasks (its instances read
  // the same records): a call or a peer, by override index.
  const std::vector<TaskKind>& override_kinds(const TaskGraph::RankLayout& l) {
    auto [it, added] = kinds_.try_emplace(l.first_record);
    if (added) {
      for (TaskId id = l.first_id; id < l.first_id + l.size; ++id) {
        const TaskView t = graph_.task(id);
        if (has_peer(t) || t.kind == TaskKind::kCollective) it->second.push_back(t.kind);
      }
    }
    return it->second;
  }

  bool fail(std::string why) {
    fold_.inconsistent = std::move(why);
    return false;
  }

  // With `splits` given, for each template, the mirror call of the fewest members (whose
  // split keeps the classes largest) among those with two members on one representative.
  bool check_calls(std::map<uint32_t, Split>& splits) {
    const auto& calls = graph_.collectives();
    std::vector<uint32_t>& source = fold_.call_source;
    source.assign(calls.size(), kNoSource);
    fold_.mirror_calls = 0;
    fold_.inconsistent.clear();
    // The rank whose task first set each call's source, to name both in a conflict.
    std::vector<int> named_by(calls.size(), -1);
    std::string conflict;  // the first call with two images
    const auto propose = [&](uint32_t c, uint32_t s, int rank) {
      if (source[c] == kNoSource) {
        source[c] = s;
        named_by[c] = rank;
        return true;
      }
      if (source[c] == s || !conflict.empty()) return true;
      const auto maps = [&](int r, uint32_t to) {
        return "rank " + std::to_string(r) + "'s task of it maps to " +
               (to == c ? std::string("the call itself (its representative, rank ") +
                              std::to_string(fold_.representative[r]) + ", is a member)"
                        : call_name(graph_, to) + " on its representative, rank " +
                              std::to_string(fold_.representative[r]));
      };
      // Kept, not returned: a split found below may resolve it.
      conflict = call_name(graph_, c) + " has no single image: " + maps(named_by[c], source[c]) +
                 ", but " + maps(rank, s);
      return true;
    };
    for (uint32_t c = 0; c < calls.size(); ++c) {
      for (int m : calls[c].members) {
        if (m >= 0 && m < num_ranks_ && !shadow(m)) propose(c, c, m);
      }
    }
    for (int r = 0; r < num_ranks_; ++r) {
      if (!shadow(r)) continue;
      const int rep = fold_.representative[r];
      const std::vector<TaskKind>& kinds = override_kinds(layout_of(rep));
      const auto mine = layout_of(r).overrides, theirs = layout_of(rep).overrides;
      for (size_t k = 0; k < kinds.size(); ++k) {
        if (kinds[k] != TaskKind::kCollective) continue;
        const auto c = static_cast<uint32_t>(mine[k]), s = static_cast<uint32_t>(theirs[k]);
        if (c >= calls.size() || s >= calls.size())
          return fail("rank " + std::to_string(r) + " holds a task of a call the graph lacks");
        propose(c, s, r);
      }
    }
    // Every call is looked at before failing: a split, which refinement may resolve
    // everything with, comes before the other failures.
    std::string mismatch;
    std::vector<int> mapped;
    for (uint32_t c = 0; c < calls.size(); ++c) {
      const uint32_t s = source[c];
      if (s == c || s == kNoSource) continue;
      const std::vector<int>& mine = calls[c].members;
      const std::vector<int>& theirs = calls[s].members;
      mapped.clear();
      for (int m : mine) mapped.push_back(m >= 0 && m < num_ranks_ ? fold_.representative[m] : -1);
      if (mapped != theirs) {
        std::sort(mapped.begin(), mapped.end());
        if (std::adjacent_find(mapped.begin(), mapped.end()) != mapped.end()) {
          const int rep = *std::adjacent_find(mapped.begin(), mapped.end());
          // A member on that representative that is not it: a shadow, whose template the
          // split divides at the override where it holds this call.
          const auto shadow_member = std::find_if(mine.begin(), mine.end(), [&](int m) {
            return m != rep && m >= 0 && m < num_ranks_ && fold_.representative[m] == rep;
          });
          if (rep >= 0 && shadow_member != mine.end()) {
            const Split candidate{c, *shadow_member, 0};
            const auto [it, added] =
                splits.try_emplace(layout_of(candidate.shadow).first_record, candidate);
            if (!added && mine.size() < calls[it->second.call].members.size())
              it->second = candidate;
          }
        } else if (mismatch.empty()) {
          mismatch = call_name(graph_, c) + " mirrors " + call_name(graph_, s) +
                     ", but its members do not map in order onto that call's";
        }
        continue;
      }
      if (!priced_alike(calls[c], calls[s])) {
        if (mismatch.empty()) {
          mismatch = call_name(graph_, c) + " mirrors " + call_name(graph_, s) +
                     ", but the two are not priced alike (op, algorithm, bytes, options)";
        }
        continue;
      }
      ++fold_.mirror_calls;
    }
    for (auto& [tmpl, split] : splits) {
      const auto overrides = layout_of(split.shadow).overrides;
      const std::vector<TaskKind>& kinds = override_kinds(layout_of(split.shadow));
      for (size_t k = 0; k < kinds.size(); ++k) {
        if (kinds[k] == TaskKind::kCollective && static_cast<uint32_t>(overrides[k]) == split.call)
          split.index = k;
      }
    }
    if (!splits.empty()) {
      const uint32_t c = splits.begin()->second.call;
      return fail(call_name(graph_, c) + " mirrors " + call_name(graph_, source[c]) +
                  ", but two of its members stand on one representative");
    }
    if (!conflict.empty()) return fail(conflict);
    if (!mismatch.empty()) return fail(mismatch);
    return true;
  }

  // Peers and messages, from each rank's peers alone (no pairing of the graph's messages,
  // which reads every task). A message's image pairs when both its ends are shadows whose
  // peers map onto their representatives' (the n-th send of a key then sits where the
  // n-th send of the image's key does, and so does its recv), provided no two peers of a
  // shadow share a representative; a message between a shadow and a representative has
  // none (the representative's own task meets the shadow, not the shadow's image).
  bool check_peers_and_messages() {
    std::vector<int> peers, images;
    for (const TaskGraph::RankLayout& l : layouts_) {
      if (l.rank < 0) {
        // Tasks as added: their ranks stand alone, so their messages' peers must too.
        for (TaskId id = l.first_id; id < l.first_id + l.size; ++id) {
          const TaskView t = graph_.task(id);
          if (!has_peer(t)) continue;
          if (!check_message_end(t.rank, t.kind, t.peer, false)) return false;
        }
        continue;
      }
      const int r = l.rank;
      if (r >= num_ranks_) return fail("a rank the cluster lacks holds tasks");
      const std::vector<TaskKind>& kinds = override_kinds(l);
      const bool mirrored = shadow(r);
      const auto theirs = mirrored ? layout_of(fold_.representative[r]).overrides : l.overrides;
      peers.clear();
      for (size_t k = 0; k < kinds.size(); ++k) {
        if (kinds[k] == TaskKind::kCollective) continue;
        const int peer = l.overrides[k];
        if (mirrored &&
            (peer < 0 || peer >= num_ranks_ || fold_.representative[peer] != theirs[k])) {
          return fail("rank " + std::to_string(r) + "'s " + std::string(task_kind_name(kinds[k])) +
                      " number " + std::to_string(k) + " of its peers and calls goes to rank " +
                      std::to_string(peer) + ", which its representative's (rank " +
                      std::to_string(fold_.representative[r]) + ", to rank " +
                      std::to_string(theirs[k]) + ") does not stand for");
        }
        if (!check_message_end(r, kinds[k], peer, mirrored)) return false;
        if (mirrored && kinds[k] != TaskKind::kMemcpy) peers.push_back(peer);
      }
      if (!mirrored) continue;
      std::sort(peers.begin(), peers.end());
      peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
      images.clear();
      for (int p : peers) images.push_back(fold_.representative[p]);
      std::sort(images.begin(), images.end());
      const auto twice = std::adjacent_find(images.begin(), images.end());
      if (twice != images.end()) {
        return fail("rank " + std::to_string(r) + " exchanges messages with two ranks that rank " +
                    std::to_string(*twice) + " stands for");
      }
    }
    return true;
  }

  // A send or recv of `rank` (a memcpy to a peer is one-sided: any peer will do). Counts
  // the mirrored sends.
  bool check_message_end(int rank, TaskKind kind, int peer, bool mirrored) {
    if (kind == TaskKind::kMemcpy) return true;
    if (peer < 0 || peer >= num_ranks_) return fail("a message goes to a rank the cluster lacks");
    if (shadow(peer) != mirrored) {
      const int stands = mirrored ? rank : peer;
      return fail("rank " + std::to_string(rank) + "'s " + std::string(task_kind_name(kind)) +
                  " with rank " + std::to_string(peer) + " has no image: rank " +
                  std::to_string(stands) + " is one that rank " +
                  std::to_string(fold_.representative[stands]) +
                  " stands for, the other a representative");
    }
    fold_.mirror_messages += mirrored && kind == TaskKind::kSend;
    return true;
  }

  const TaskGraph& graph_;
  const std::vector<TaskGraph::RankLayout> layouts_;
  const int num_ranks_;
  std::vector<int> bracket_;    // by rank: its layout's index, or kUnbracketed
  std::vector<uint8_t> alone_;  // by rank: in a class of its own whatever its tasks
  std::vector<int> class_;      // by rank
  int classes_ = 0;
  std::map<uint32_t, std::vector<TaskKind>> kinds_;  // by template's first record
  RankFold fold_;
};

}  // namespace

RankFold fold_ranks(const TaskGraph& graph, const Cluster& cluster) {
  return Folder(graph, cluster).run();
}

}  // namespace dtsim
