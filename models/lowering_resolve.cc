// Resolving a parallel plan: derived sizes, checks with the scenario keys they concern,
// balancing over mixed devices, and the layer partition.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <tuple>

#include "models/lowering_detail.h"
#include "models/memory_model.h"
#include "models/schedule.h"
#include "sim/group_links.h"

namespace dtsim::models {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

PlanError::PlanError(std::vector<InputProblem> problems) : InputError("", std::move(problems)) {}

namespace lowering_detail {

namespace {

// A rank's time for some layers, forward and backward, and what they hold in memory: their
// parameters, the activations one micro-batch keeps, and what recomputation rebuilds.
struct RangeCost {
  double fwd = 0;
  double bwd = 0;
  double params = 0;
  double activations = 0;
  double rebuilt = 0;
  double total() const { return fwd + bwd; }
  // Another range held by the same stage: times, parameters and kept activations add up;
  // recomputation rebuilds one layer at a time.
  void add(const RangeCost& o) {
    fwd += o.fwd;
    bwd += o.bwd;
    params += o.params;
    activations += o.activations;
    rebuilt = std::max(rebuilt, o.rebuilt);
  }
};

// Balancing's measure of a rank: how fast it runs one transformer block (the whole model
// for others) as the plan runs it. Its shard of every op is priced as the passes are
// (chunk_cost: each op's math, FP8's casts, recomputation) on its device, slowed by its
// unit's speed (DeviceEfficiency::speed_variation); the tensor- and context-parallel
// collectives of its groups are added as `auto` runs them on their links, or hidden behind
// the kernels under tp_comm_overlap. A V100 stage on an NVLink mesh is thus slower than its
// kernels alone say.
class RankPace {
 public:
  RankPace(const LoweringInput& in, const ResolvedPlan& plan, const Workload& w)
      : in_(in), plan_(plan), w_(w), router_(in.cluster->topology) {
    const int layers = static_cast<int>(w.layers.size());
    end_ = layers;
    for (int i = 0; i < layers; ++i) {
      if (w.layers[i].kind != LayerKind::kTransformer) continue;
      if (blocks_end_ == 0) {
        begin_ = i;  // one block stands for all
        end_ = i + 1;
      }
      blocks_end_ = i + 1;
    }
    if (blocks_end_ == 0) blocks_end_ = layers;
    // Blocks that differ (dense layers among MoE ones, windows on some layers), or that full
    // recomputation treats apart (by groups, or some blocks only), are priced together, and
    // their mean stands for a block.
    const TrainingSetup& t = in.training;
    const bool partial_recompute =
        t.recompute == Recompute::kFull &&
        (t.recompute_method == RecomputeMethod::kBlock || t.recompute_num_layers > 1);
    if (blocks_end_ > begin_ + 1 && w.layers[begin_].kind == LayerKind::kTransformer &&
        (partial_recompute || !blocks_alike())) {
      end_ = blocks_end_;
      blocks_ = blocks_end_ - begin_;
    }
  }

  // Seconds per block.
  double seconds(int rank) { return passes(rank, begin_, end_).total() / blocks_; }

  // Whether every block does the first one's work with its parameters and activations.
  bool blocks_alike() const {
    // The FLOPs its kernels run (a window runs fewer than the model counts) and the bytes
    // it keeps.
    const auto work = [](const Layer& l) {
      std::pair<double, double> w;
      for (const Op& op : l.ops) {
        w.first += op.fwd_flops * op.executed_fraction;
        w.second += op.saved_bytes;
      }
      return w;
    };
    const Layer& first = w_.layers[begin_];
    for (int i = begin_ + 1; i < blocks_end_; ++i) {
      const Layer& l = w_.layers[i];
      if (l.ops.size() != first.ops.size() || l.params() != first.params() ||
          work(l) != work(first)) {
        return false;
      }
    }
    return true;
  }

  // Forward and backward seconds for layers [begin, end) of the workload.
  RangeCost passes(int rank, int begin, int end) {
    if (begin >= end) return {};
    const auto key = std::tuple{rank, begin, end};
    auto it = seconds_.find(key);
    if (it != seconds_.end()) return it->second;
    const ParallelPlan& p = in_.plan;
    const RankCoords& c = plan_.placement->coords(rank);
    const RankShard shard = rank_shard(in_, plan_, c);
    const ClusterDevice& device = in_.cluster->devices[rank];
    // Offload takes each chunk's first blocks: a block is priced whole, and the split's
    // memory check takes off what its chunks offload.
    RecomputePolicy policy = in_.training.recompute_policy();
    policy.offload_layers = 0;
    const ChunkCost cc = chunk_cost(w_, begin, end, shard, policy, *device.spec, *in_.costs);
    const std::vector<int> tp_group = plan_.placement->group(ParallelAxis::kTp, c);
    const std::vector<int> cp_group = plan_.placement->group(ParallelAxis::kCp, c);
    const auto pass = [&](Duration compute_time, double tp_bytes, int tp_calls,
                          CollectiveOp cp_op) {
      const double compute = compute_time.seconds() / device.speed;
      // As the lowering: each exchange its own calls.
      double tp = 0;
      if (tp_calls > 0) {
        for (CollectiveOp op : tp_exchange_ops(p.sequence_parallel))
          tp += tp_calls * call(tp_group, op, tp_bytes / tp_calls);
      }
      const double cp = call(cp_group, cp_op, cc.kv_bytes);
      return (p.tp_comm_overlap ? std::max(compute, tp) : compute + tp) + cp;
    };
    // As the lowering's chunk: the all-to-alls and the expert-tensor-parallel exchanges,
    // and the gathers a recomputed forward reruns.
    const Placement::ExpertGroups experts = plan_.placement->expert_groups(c, plan_.etp, p.ep);
    const auto dispatch = [&](double all_to_all, double gather, double scatter) {
      return call(experts.expert, CollectiveOp::kAllToAll, all_to_all) +
             call(experts.tensor, CollectiveOp::kAllGather, gather) +
             call(experts.tensor, CollectiveOp::kReduceScatter, scatter);
    };
    const RangeCost out{
        pass(cc.fwd, cc.tp_bytes_fwd, cc.tp_calls_fwd, CollectiveOp::kAllGather) +
            dispatch(cc.all_to_all_bytes, cc.etp_gather_bytes_fwd, cc.etp_scatter_bytes_fwd),
        pass(cc.bwd, cc.tp_bytes_bwd, cc.tp_calls_bwd, CollectiveOp::kReduceScatter) +
            dispatch(cc.all_to_all_bytes_bwd, cc.etp_gather_bytes_bwd, cc.etp_scatter_bytes_bwd) +
            call(cp_group, CollectiveOp::kAllGather, cc.kv_bytes_rerun),
        cc.dense_params + cc.expert_params, cc.activation_bytes, cc.recompute_transient_bytes};
    return seconds_[key] = out;
  }

  // The layers before the first transformer block (the embedding) and after the last (the
  // head); both empty for other models.
  LayerRange before_blocks() const { return {0, blocks_end_ > 0 ? begin_ : 0}; }
  LayerRange after_blocks() const { return {blocks_end_, static_cast<int>(w_.layers.size())}; }

  // The slowest of `ranks` sets the pace of the group.
  double group_seconds(const std::vector<int>& ranks) {
    double slowest = 0;
    for (int r : ranks) slowest = std::max(slowest, seconds(r));
    return slowest;
  }
  RangeCost group_passes(const std::vector<int>& ranks, LayerRange layers) {
    RangeCost slowest;
    for (int r : ranks) {
      const RangeCost s = passes(r, layers.begin, layers.end);
      slowest.fwd = std::max(slowest.fwd, s.fwd);
      slowest.bwd = std::max(slowest.bwd, s.bwd);
      slowest.params = std::max(slowest.params, s.params);
      slowest.activations = std::max(slowest.activations, s.activations);
      slowest.rebuilt = std::max(slowest.rebuilt, s.rebuilt);
    }
    return slowest;
  }
  // The slowest of `ranks`' mean block.
  RangeCost group_block(const std::vector<int>& ranks) {
    RangeCost c = group_passes(ranks, {begin_, end_});
    c.fwd /= blocks_;
    c.bwd /= blocks_;
    c.params /= blocks_;
    c.activations /= blocks_;
    return c;
  }

 private:
  // One call, as the lowering makes one per pass.
  double call(const std::vector<int>& group, CollectiveOp op, double bytes) {
    // As the lowering: no bytes, no call (the embedding and head exchange no keys).
    if (group.size() < 2 || !(bytes > 0)) return 0;
    const Bytes b(std::llround(bytes));
    return estimate_group_call(*in_.cluster, router_, op, CollectiveAlgorithm::kAuto, group, b)
        .time.seconds();
  }

  const LoweringInput& in_;
  const ResolvedPlan& plan_;
  const Workload& w_;
  Router router_;
  int begin_ = 0, end_ = 0;
  int blocks_ = 1;      // blocks in [begin_, end_)
  int blocks_end_ = 0;  // one past the last transformer block; the layer count for others

  std::map<std::tuple<int, int, int>, RangeCost> seconds_;
};

using Problems = std::vector<InputProblem>;

void throw_if(const Problems& errors) {
  if (!errors.empty()) throw PlanError(errors);
}

// One check per axis and setting; each adds the problems it finds.
// Sizes and switches that need nothing else to be judged.
void check_sizes(const LoweringInput& in, Problems& errors) {
  const ParallelPlan& p = in.plan;
  const TrainingSetup& t = in.training;
  for (auto [key, value] : {std::pair{"tp", p.tp}, {"pp", p.pp}, {"cp", p.cp}, {"ep", p.ep},
                            {"virtual_stages", p.virtual_stages}}) {
    if (value < 1)
      errors.push_back(
          problem_at("parallelism." + std::string(key), "must be at least 1, got " + str(value)));
  }
  if (p.zero_stage < 0 || p.zero_stage > 3) {
    errors.push_back(
        problem_at("parallelism.zero_stage", "must be 0, 1, 2 or 3, got " + str(p.zero_stage)));
  }
  if (t.micro_batch < 1)
    errors.push_back(
        problem_at("training.micro_batch", "must be at least 1, got " + str(t.micro_batch)));
  if (p.tp_comm_overlap && !p.sequence_parallel) {
    errors.push_back(
        problem_at("parallelism.tp_comm_overlap",
                   "needs sequence_parallel (the overlap splits "
                   "sequence-parallel all-gathers and reduce-scatters into the GEMMs)"));
  }
}

// dp: the ranks left over by tensor, pipeline and context parallelism.
int derive_dp(const LoweringInput& in, int ranks, Problems& errors) {
  const ParallelPlan& p = in.plan;
  const int64_t model_parallel = int64_t{p.tp} * p.pp * p.cp;
  if (ranks % model_parallel != 0) {
    errors.push_back(problem_at("parallelism", "tp " + str(p.tp) + " x pp " + str(p.pp) + " x cp " +
                                                   str(p.cp) + " = " + str(model_parallel) +
                                                   " does not divide the cluster's " + str(ranks) +
                                                   " ranks"));
    throw PlanError(errors);
  }
  const int dp = static_cast<int>(ranks / model_parallel);
  if (p.dp != 0 && p.dp != dp) {
    errors.push_back(problem_at("parallelism.dp", str(p.dp) + " x tp " + str(p.tp) + " x pp " +
                                                      str(p.pp) + " x cp " + str(p.cp) + " = " +
                                                      str(int64_t{p.dp} * model_parallel) +
                                                      " ranks, but the cluster has " + str(ranks) +
                                                      " (leave dp out to derive it)"));
  }
  return dp;
}

void check_expert_parallel(const LoweringInput& in, int dp, Problems& errors) {
  const ParallelPlan& p = in.plan;
  const bool moe = in.model.family == ModelFamily::kMoe;
  if (p.etp < 0) {
    errors.push_back(
        problem_at("parallelism.etp", "must be at least 1 (or 0 for tp), got " + str(p.etp)));
    return;
  }
  const int etp = p.expert_tp();
  // Megatron-Core's expert rank generator regroups a stage's tp x cp x dp ranks as
  // etp x ep x edp.
  const int64_t stage_ranks = int64_t{p.tp} * p.cp * dp;
  if (etp == p.tp && p.cp == 1 && dp % p.ep != 0) {
    errors.push_back(
        problem_at("parallelism.ep", str(p.ep) + " must divide dp (" + str(dp) +
                                         "): experts are spread over data-parallel ranks"));
  } else if (stage_ranks % (int64_t{etp} * p.ep) != 0) {
    errors.push_back(problem_at(
        p.etp > 0 ? "parallelism.etp" : "parallelism.ep",
        "etp " + str(etp) + " x ep " + str(p.ep) + " must divide a pipeline stage's tp " +
            str(p.tp) + " x cp " + str(p.cp) + " x dp " + str(dp) + " = " + str(stage_ranks) +
            " ranks: the expert layers regroup them as etp x ep x expert-data-parallel"));
  }
  if (p.ep > 1 && !moe) {
    errors.push_back(problem_at(
        "parallelism.ep",
        str(p.ep) + " needs a mixture-of-experts model, " + in.model.name + " has no experts"));
  } else if (p.ep > 1 && in.model.experts % p.ep != 0) {
    errors.push_back(problem_at("parallelism.ep", str(p.ep) + " must divide the model's " +
                                                      str(in.model.experts) + " experts"));
  }
  if (p.etp > 0 && !moe) {
    errors.push_back(problem_at(
        "parallelism.etp",
        str(p.etp) + " needs a mixture-of-experts model, " + in.model.name + " has no experts"));
  } else if (moe && etp > 1 && in.model.expert_ffn() % etp != 0) {
    errors.push_back(
        problem_at("parallelism.etp", str(etp) + " must divide the experts' feed-forward width " +
                                          str(in.model.expert_ffn()) + " (moe_ffn_hidden)"));
  }
  if (moe && p.tp > 1 && !p.sequence_parallel) {
    // Megatron-Core refuses it (MoELayer, TransformerConfig): the token dispatcher routes
    // each rank's sequence shard.
    errors.push_back(problem_at("parallelism.sequence_parallel",
                                "a mixture-of-experts model with tp " + str(p.tp) +
                                    " needs sequence_parallel: the token dispatcher routes each "
                                    "tensor-parallel rank's sequence shard (as Megatron-Core)"));
  }
  if (p.etp > 0 && p.etp != p.tp && !p.tp_shares.empty()) {
    errors.push_back(problem_at("parallelism.etp",
                                "an expert tensor parallelism other than tp needs even "
                                "tensor-parallel shares (leave tp_shares out)"));
  }
}

void check_context_parallel(const LoweringInput& in, Problems& errors) {
  const ParallelPlan& p = in.plan;
  const TrainingSetup& t = in.training;
  if (p.cp > 1 && !is_transformer(in.model.family)) {
    errors.push_back(problem_at("parallelism.cp", "context parallelism needs a transformer model"));
  } else if (p.cp > 1) {
    // Megatron-LM's get_batch_on_this_cp_rank views each sequence as 2 x cp chunks and gives
    // rank i chunks i and 2cp-1-i, an early and a late one, to even out causal attention.
    const int64_t seq = t.seq_len > 0 ? t.seq_len : in.model.seq_len;
    if (seq > 0 && seq % (2 * int64_t{p.cp}) != 0) {
      errors.push_back(problem_at(
          "parallelism.cp",
          str(p.cp) + " splits each sequence into 2 x cp = " + str(2 * int64_t{p.cp}) +
              " chunks (two per rank, an early and a late one), " + "but the sequence length " +
              str(seq) + (t.seq_len > 0 ? " (training.seq_len)" : " (the model's)") +
              " is not a multiple of " + str(2 * int64_t{p.cp})));
    }
  }
}

void check_tensor_parallel(const LoweringInput& in, Problems& errors) {
  const ParallelPlan& p = in.plan;
  if (p.tp > 1 && !is_transformer(in.model.family) && in.model.family != ModelFamily::kClassifier) {
    // Every op of these networks is replicated over a tensor-parallel group: tp would
    // only repeat the work.
    errors.push_back(problem_at("parallelism.tp",
                                "tensor parallelism splits transformer layers and a "
                                "classifier's output layer; " +
                                    in.model.name + " (family " +
                                    std::string(model_family_name(in.model.family)) +
                                    ") has no op it splits: use data or pipeline parallelism"));
  } else if (p.tp > 1 && is_transformer(in.model.family) && in.model.heads % p.tp != 0) {
    errors.push_back(problem_at("parallelism.tp", str(p.tp) + " must divide the model's " +
                                                      str(in.model.heads) + " attention heads"));
  } else if (p.tp > 1 && is_transformer(in.model.family) && in.model.kv_heads > 0 &&
             in.model.kv_heads % p.tp != 0) {
    // Megatron-LM divides the key-value groups among the tensor-parallel ranks.
    errors.push_back(problem_at("parallelism.tp", str(p.tp) + " must divide the model's " +
                                                      str(in.model.kv_heads) + " key-value heads"));
  }
}

void check_pipeline(const LoweringInput& in, Problems& errors) {
  const ParallelPlan& p = in.plan;
  if (p.virtual_stages > 1 && p.schedule != PipelineSchedule::kInterleaved1F1B) {
    errors.push_back(
        problem_at("parallelism.virtual_stages",
                   str(p.virtual_stages) + " needs \"schedule\": \"interleaved_1f1b\""));
  }
}

void check_gradient_sync(const LoweringInput& in, Problems& errors) {
  const ParallelPlan& p = in.plan;
  if (p.sync_every < 1)
    errors.push_back(
        problem_at("parallelism.sync_every", "must be at least 1, got " + str(p.sync_every)));
  if (p.bucket.count() <= 0) {
    errors.push_back(problem_at("parallelism.bucket",
                                "must be more than 0 bytes, got " + str(p.bucket.count())));
  }
}

void check_sharded_classifier(const LoweringInput& in, Problems& errors) {
  const ParallelPlan& p = in.plan;
  if (p.shard_classifier && (p.tp != 1 || p.pp != 1 || p.cp != 1)) {
    errors.push_back(problem_at("parallelism.shard_classifier",
                                "the sharded classifier runs over all ranks; "
                                "it needs tp, pp and cp of 1"));
  }
  if (p.shard_classifier && in.model.family != ModelFamily::kClassifier) {
    errors.push_back(problem_at("parallelism.shard_classifier",
                                "needs a classifier model (family \"classifier\")"));
  }
  // Each rank samples from its own shard and updates what it sampled; replicas of one
  // shard would sample apart and could not reduce their gradients as one tensor.
  if (!p.shard_classifier && in.model.family == ModelFamily::kClassifier) {
    const std::string why = "samples the classes of a sharded classifier (Partial FC, KNN "
                            "softmax): set parallelism.shard_classifier";
    if (in.model.sample_rate < 1) errors.push_back(problem_at("model.sample_rate", why));
    if (in.model.knn_candidates > 0) errors.push_back(problem_at("model.knn_candidates", why));
  }
}

// The rank of every (dp, pp, tp, cp), and whether local SGD has regions to average over.
void place(const LoweringInput& in, ResolvedPlan& out) {
  const Cluster& cluster = *in.cluster;
  const ParallelPlan& p = in.plan;
  try {
    out.placement.emplace(out.dp, p.pp, p.tp, p.cp, p.axis_order, p.rank_map);
  } catch (const std::invalid_argument& e) {
    const bool order = std::string_view(e.what()).starts_with("the axis order");
    throw PlanError(
        {problem_at(order ? "parallelism.axis_order" : "parallelism.rank_map", e.what())});
  }

  if (p.sync_every > 1) {
    // Local SGD averages across regions; inside one region it would only add calls.
    const std::vector<int> replicas = out.placement->group(ParallelAxis::kDp, RankCoords{});
    std::set<int> regions;
    for (int r : replicas) regions.insert(cluster.devices[r].region);
    if (regions.size() < 2) {
      throw PlanError(
          {problem_at("parallelism.sync_every",
                      str(p.sync_every) +
                          " needs data-parallel replicas in more than one region (the cluster's "
                          "regions section); here every replica is in one region")});
    }
  }
}

void resolve_tp_shares(const LoweringInput& in, ResolvedPlan& out) {
  const ParallelPlan& p = in.plan;
  Problems errors;
  if (!p.tp_shares.empty()) {
    if (static_cast<int>(p.tp_shares.size()) != p.tp) {
      errors.push_back(
          problem_at("parallelism.tp_shares",
                     str(p.tp_shares.size()) + " entries, expected tp (" + str(p.tp) + ")"));
    } else {
      const double sum = std::accumulate(p.tp_shares.begin(), p.tp_shares.end(), 0.0);
      bool positive = true;
      for (double s : p.tp_shares) positive = positive && s > 0;
      if (!positive || std::abs(sum - 1) > 1e-6) {
        errors.push_back(
            problem_at("parallelism.tp_shares", "entries must be positive and sum to 1"));
      }
    }
    out.tp_shares = p.tp_shares;
  } else {
    out.tp_shares.assign(p.tp, 1.0 / p.tp);
  }
  throw_if(errors);
}

// Replica micro-batches: given, balanced by speed, or even.
void resolve_replica_micro_batches(const LoweringInput& in, ResolvedPlan& out,
                                   const std::function<Workload(int64_t)>& workload_at) {
  const ParallelPlan& p = in.plan;
  const TrainingSetup& t = in.training;
  Problems errors;
  if (!p.replica_micro_batch.empty()) {
    if (static_cast<int>(p.replica_micro_batch.size()) != out.dp) {
      errors.push_back(problem_at("parallelism.replica_micro_batch",
                                  str(p.replica_micro_batch.size()) +
                                      " entries, expected one per data-parallel replica (" +
                                      str(out.dp) + ")"));
    }
    for (int64_t b : p.replica_micro_batch) {
      if (b < 1)
        errors.push_back(
            problem_at("parallelism.replica_micro_batch", "entries must be at least 1"));
    }
    out.replica_micro_batch = p.replica_micro_batch;
  } else if (p.balance_replicas) {
    // A replica's time per micro-batch is affine in its size (collective latency does not
    // grow with it), so a proportional split would overload the slow replicas: fit each
    // replica on two sizes and give each micro-batch sample to the replica done first.
    const int64_t m2 = std::max<int64_t>(2, t.micro_batch);
    const Workload at_one = workload_at(1);
    const Workload at_two = workload_at(m2);
    RankPace one(in, out, at_one);
    RankPace two(in, out, at_two);
    std::vector<double> fixed, per_sample;
    for (int d = 0; d < out.dp; ++d) {
      RankCoords c;
      c.dp = d;
      const auto ranks = out.placement->group({ParallelAxis::kTp, ParallelAxis::kPp, ParallelAxis::kCp}, c);
      const double t1 = one.group_seconds(ranks);
      const double slope = std::max(0.0, (two.group_seconds(ranks) - t1) / static_cast<double>(m2 - 1));
      per_sample.push_back(slope);
      fixed.push_back(std::max(0.0, t1 - slope));
    }
    out.replica_micro_batch = min_max_split(t.micro_batch * out.dp, fixed, per_sample);
    out.notes.push_back("replica micro-batches balanced by device speed");
  } else {
    out.replica_micro_batch.assign(out.dp, t.micro_batch);
  }
  throw_if(errors);
}

// Micro-batches per replica per iteration.
void resolve_micro_batches(const LoweringInput& in, ResolvedPlan& out) {
  const ParallelPlan& p = in.plan;
  const TrainingSetup& t = in.training;
  const int64_t per_round = std::accumulate(out.replica_micro_batch.begin(),
                                            out.replica_micro_batch.end(), int64_t{0});
  const int64_t global = t.global_batch > 0 ? t.global_batch : per_round;
  if (global % per_round != 0) {
    const std::string round = p.replica_micro_batch.empty()
                                  ? "micro_batch x dp"
                                  : "the sum of parallelism.replica_micro_batch";
    throw PlanError({problem_at("training.global_batch",
                                str(global) + " is not a multiple of the " + str(per_round) +
                                    " samples one micro-batch round takes (" + round + ")")});
  }
  // Micro-batch counts are ints through the schedules and the lowering.
  if (global / per_round > std::numeric_limits<int>::max()) {
    throw PlanError({problem_at("training.global_batch",
                                str(global) + " samples make " + str(global / per_round) +
                                    " micro-batches per replica, more than the " +
                                    str(std::numeric_limits<int>::max()) + " dtsim can count")});
  }
  out.micro_batches = static_cast<int>(global / per_round);
  if (p.schedule == PipelineSchedule::kInterleaved1F1B && p.pp > 1 &&
      out.micro_batches % p.pp != 0) {
    throw PlanError(
        {problem_at("training.global_batch",
                    "the interleaved schedule needs the number of "
                    "micro-batches per replica (" +
                        str(out.micro_batches) + ") to be a multiple of pp (" + str(p.pp) + ")")});
  }
}

// Layer partition over virtual stages k = chunk * pp + stage.
void partition_stages(const LoweringInput& in, ResolvedPlan& out, const Workload& unit_workload,
                      const std::function<Workload(int64_t)>& workload_at) {
  const Cluster& cluster = *in.cluster;
  const ParallelPlan& p = in.plan;
  const TrainingSetup& t = in.training;
  const int stages = p.pp * p.virtual_stages;
  std::vector<StagePace> paces;
  std::vector<RangeCost> block, fixed;    // per virtual stage
  std::vector<double> capacity(p.pp, 0);  // per stage: its smallest device's memory
  if (p.balance_stages) {
    // A stage's time is its block count times its pace (a mean block where they differ), plus the
    // embedding on the first virtual stage and the head on the last.
    const Workload at_micro_batch = workload_at(t.micro_batch);
    RankPace pace(in, out, at_micro_batch);
    for (int k = 0; k < stages; ++k) {
      RankCoords c;
      c.pp = k % p.pp;
      const std::vector<int> ranks =
          out.placement->group({ParallelAxis::kTp, ParallelAxis::kDp, ParallelAxis::kCp}, c);
      block.push_back(pace.group_block(ranks));
      RangeCost f;
      if (k == 0) f.add(pace.group_passes(ranks, pace.before_blocks()));
      if (k == stages - 1) f.add(pace.group_passes(ranks, pace.after_blocks()));
      fixed.push_back(f);
      paces.push_back({std::max(1e-12, block.back().total()), f.total()});
      if (k < p.pp) {
        capacity[k] = std::numeric_limits<double>::infinity();
        for (int r : ranks) {
          capacity[k] = std::min(
              capacity[k],
              static_cast<double>(cluster.devices[r].spec->memory_capacity.count()) -
                  static_cast<double>(cluster.devices[r].spec->efficiency.gemm_workspace.count()));
        }
      }
    }
    if (stages > 1) {
      out.notes.push_back(
          "pipeline layers balanced by each stage's time (devices, links, "
          "embedding and head)");
    }
  }
  // A split is judged by replaying the schedule over the stages' times, so that the fill
  // and the drain count as well as the slowest stage; first among the splits whose stages
  // fit their devices' memory, as far as any does.
  const int micro_batches = out.micro_batches;
  const auto overflow = [&](const std::vector<int64_t>& blocks) {
    double over = 0;
    for (int s = 0; s < p.pp; ++s) {
      double params = 0, chunk_activations = 0, rebuilt = 0, offloaded = 0;
      for (int k = s; k < stages; k += p.pp) {
        const double n = static_cast<double>(blocks[static_cast<size_t>(k)]);
        params += fixed[k].params + n * block[k].params;
        // Activation offload keeps a chunk's first blocks on the host; one chunk's are on
        // the device at a time, on their way out or back.
        const double off =
            std::min(n, static_cast<double>(t.offload_layers)) * block[k].activations;
        chunk_activations =
            std::max(chunk_activations, fixed[k].activations + n * block[k].activations - off);
        offloaded = std::max(offloaded, off);
        rebuilt = std::max({rebuilt, fixed[k].rebuilt, block[k].rebuilt});
      }
      rebuilt += offloaded;
      const double in_flight =
          peak_in_flight_chunks(p.schedule, s, p.pp, micro_batches, p.virtual_stages);
      const double bytes = model_state_bytes(static_cast<int64_t>(params), t.precision, t.optimizer,
                                             p.zero_stage, out.dp)
                               .total() +
                           in_flight * chunk_activations + rebuilt;
      over += std::max(0.0, bytes - capacity[s]) / capacity[s];
    }
    return over;
  };
  const auto replay = [&](const std::vector<int64_t>& blocks) {
    std::vector<double> fwd(blocks.size()), bwd(blocks.size());
    for (size_t k = 0; k < blocks.size(); ++k) {
      fwd[k] = fixed[k].fwd + block[k].fwd * static_cast<double>(blocks[k]);
      bwd[k] = fixed[k].bwd + block[k].bwd * static_cast<double>(blocks[k]);
    }
    return schedule_makespan(p.schedule, p.pp, micro_batches, p.virtual_stages, fwd, bwd);
  };
  // Any split that fits beats any that does not; among those that do not, the smaller
  // overflow wins, so that the search walks towards one that fits.
  constexpr double kOverflowCost = 1e12;
  const SplitCost fitting_makespan = [&](const std::vector<int64_t>& blocks) {
    const double over = overflow(blocks);
    return replay(blocks) + (over > 0 ? kOverflowCost * (1 + over) : 0.0);
  };
  try {
    out.chunks = partition_layers(unit_workload, stages, p.stage_layers, paces,
                                  p.balance_stages ? fitting_makespan : SplitCost{});
    if (p.balance_stages && is_transformer(in.model.family)) {
      if (overflow(transformer_blocks(unit_workload, out.chunks)) > 0) {
        // Nothing fits: time alone decides, and the run reports the ranks over capacity.
        out.chunks = partition_layers(unit_workload, stages, p.stage_layers, paces, replay);
        out.notes.push_back("no balanced split fits every stage's memory: balanced by time");
      }
    }
  } catch (const std::invalid_argument& e) {
    throw PlanError({problem_at("parallelism.stage_layers", e.what())});
  }
}

// What the user should know of the choices made and of settings that change nothing.
void add_notes(const LoweringInput& in, const Workload& w, ResolvedPlan& out) {
  const Cluster& cluster = *in.cluster;
  const ParallelPlan& p = in.plan;
  const TrainingSetup& t = in.training;
  // A precision the device has no math for runs on math that can carry it (fp8 on an
  // A100 in 16-bit, bf16 on a V100 in fp32): say so, or the plan reads as if it did not.
  const DType wanted = math_dtype(t.precision);
  std::set<std::string> told;
  for (const ClusterDevice& d : cluster.devices) {
    if (!told.insert(d.spec->name).second) continue;
    const DType used = gemm_math_dtype(wanted, *d.spec);
    if (used != wanted) {
      out.notes.push_back(d.spec->name + ": " + std::string(dtype_name(wanted)) +
                          " GEMMs run at its " + std::string(dtype_name(used)) +
                          " rate (it has no faster math that carries " +
                          std::string(dtype_name(wanted)) + ")");
    }
  }
  // What a model's config asks for that the step leaves out (models/hf_config.cc).
  const ModelSpec& model = in.model;
  if (model.expert_groups_per_token > 0 && model.expert_groups_per_token < model.expert_groups) {
    out.notes.push_back("node-limited routing (each token's experts in at most " +
                        str(model.expert_groups_per_token) + " of " + str(model.expert_groups) +
                        " groups) is not modelled: the all-to-all sends each token's top_k "
                        "copies to its experts' ranks as unrestricted routing would");
  }
  if (model.mtp_layers > 0) {
    out.notes.push_back("multi-token prediction (" + str(model.mtp_layers) +
                        " module(s)) is not modelled: its blocks and output head are not in "
                        "the step");
  }
  if (model.mla() && p.sequence_parallel && p.tp > 1) {
    out.notes.push_back(
        "latent attention under sequence parallelism: the all-gather before "
        "attention moves the hidden state, where Megatron-Core gathers the "
        "narrower latents");
  }
  // Settings that change nothing under this plan: say so, so a sweep over them is not
  // read as a finding.
  if (p.sequence_parallel && p.tp == 1) {
    out.notes.push_back("sequence_parallel has no effect at tp 1");
  }
  if (in.model.sliding_window > 0 && !t.flash_attention) {
    out.notes.push_back(
        "sliding_window: without flash_attention every score is computed and "
        "masked, so the window saves no time");
  }
  if (in.model.family != ModelFamily::kMoe &&
      (t.expert_load_imbalance != 1 || t.expert_capacity_factor != 0)) {
    out.notes.push_back(
        "expert_load_imbalance and expert_capacity_factor: the model has no experts to route to");
  } else if (in.model.family == ModelFamily::kMoe && t.expert_load_imbalance != 1 && p.ep == 1) {
    out.notes.push_back("expert_load_imbalance: at ep 1 every rank runs every expert on all its "
                        "routed rows, so routing imbalance changes nothing");
  } else if (in.model.family == ModelFamily::kMoe && t.expert_load(p.ep) < t.expert_load_imbalance &&
             t.expert_capacity_factor == 0) {
    out.notes.push_back("expert_load_imbalance " + std::to_string(t.expert_load_imbalance) +
                        " capped at ep (" + str(p.ep) + "): a rank gets at most every rank's rows");
  }
  // Recompute modules that no op of the model belongs to change nothing.
  if (t.recompute == Recompute::kSelective) {
    RecomputeModules present = 0;
    for (const Layer& layer : w.layers) {
      for (const Op& op : layer.ops) present |= op.rerun_by() | op.dropped_by();
    }
    for (RecomputeModule m : kAllRecomputeModules) {
      if ((t.recompute_modules & module_bit(m)) != 0 && (present & module_bit(m)) == 0) {
        out.notes.push_back("recompute_modules: " + std::string(recompute_module_name(m)) +
                            " has nothing to recompute in " + in.model.name);
      }
    }
  }
  if (p.virtual_stages > 1 && p.pp == 1) {
    out.notes.push_back("virtual_stages " + str(p.virtual_stages) +
                        " at pp 1: the chunks run in turn on the one stage, with no pipeline "
                        "to interleave");
  }
}

// Activation offload takes each pipeline chunk's first blocks: at most the blocks of the
// largest chunk.
void check_offload(const LoweringInput& in, const Workload& w, const ResolvedPlan& out) {
  const int offload = in.training.offload_layers;
  int64_t most = 0;
  for (const LayerRange& chunk : out.chunks) {
    most = std::max<int64_t>(
        most, std::count_if(w.layers.begin() + chunk.begin, w.layers.begin() + chunk.end,
                            [](const Layer& l) { return recomputed_by_full(l.kind); }));
  }
  if (offload < 0 || offload > most) {
    throw PlanError({problem_at("training.offload_layers",
                                "must be between 0 and the " + str(most) +
                                    " blocks of the largest pipeline chunk (each chunk "
                                    "offloads its first ones), got " +
                                    str(offload))});
  }
  if (offload > 0 && in.plan.zero_stage == 3) {
    throw PlanError({problem_at("training.offload_layers",
                                "activation offload is modelled with ZeRO stages 0 to 2; "
                                "ZeRO-3's layer-by-layer passes are not split for it")});
  }
}

}  // namespace

RankShard rank_shard(const LoweringInput& in, const ResolvedPlan& plan, const RankCoords& c) {
  return RankShard{plan.tp,
                   plan.tp_shares[c.tp],
                   in.plan.sequence_parallel,
                   plan.cp,
                   plan.ep,
                   in.training.expert_load(plan.ep),
                   plan.etp};
}

ResolvedPlan resolve_plan(const LoweringInput& in) {
  const ParallelPlan& p = in.plan;
  const TrainingSetup& t = in.training;
  ResolvedPlan out;
  out.ranks = in.cluster->num_ranks();
  out.tp = p.tp;
  out.pp = p.pp;
  out.cp = p.cp;
  out.ep = p.ep;
  out.etp = p.expert_tp();
  out.v = p.virtual_stages;
  Problems errors;
  check_sizes(in, errors);
  throw_if(errors);
  out.dp = derive_dp(in, out.ranks, errors);
  check_expert_parallel(in, out.dp, errors);
  check_context_parallel(in, errors);
  check_tensor_parallel(in, errors);
  check_pipeline(in, errors);
  check_gradient_sync(in, errors);
  check_sharded_classifier(in, errors);
  throw_if(errors);
  place(in, out);
  resolve_tp_shares(in, out);
  // The workload at a micro-batch size: what balancing prices blocks on (the collectives'
  // latency included), and what each replica's passes run.
  const auto workload_at = [&](int64_t micro_batch) {
    return build_workload(in.model,
                          WorkloadShape{micro_batch, t.seq_len, t.precision, t.flash_attention});
  };
  resolve_replica_micro_batches(in, out, workload_at);
  resolve_micro_batches(in, out);
  const Workload unit_workload = build_workload(in.model, WorkloadShape{1, t.seq_len, t.precision});
  partition_stages(in, out, unit_workload, workload_at);
  check_offload(in, unit_workload, out);
  for (int64_t b :
       std::set<int64_t>(out.replica_micro_batch.begin(), out.replica_micro_batch.end())) {
    out.workloads.emplace(b, workload_at(b));
  }
  add_notes(in, unit_workload, out);
  return out;
}

}  // namespace lowering_detail
}  // namespace dtsim::models
