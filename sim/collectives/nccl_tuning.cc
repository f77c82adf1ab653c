// NCCL's tuning model, transcribed from its source (NCCL 2.30.7, src/graph/tuning.cc): the
// tables it fills at communicator set-up and the time it compares per call.
#include "sim/collectives/nccl_tuning.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace dtsim {

namespace {

// NCCL's indices: algorithms (of those dtsim plans) and hardware kinds.
enum Algo { kTreeAlgo = 0, kRingAlgo = 1, kNvlsAlgo = 2 };
enum Hw { kNvlinkHw = 0, kPciHw = 1, kNetHw = 2 };
static_assert(kRingAlgo == nccl_detail::kRing && kNetHw == nccl_detail::kNet);

using nccl_detail::kBaseLat;
using nccl_detail::kHwLat;
// Bandwidth caps, GB/s, by architecture (Volta, Ampere, Hopper, Blackwell) and by nodes
// (1, 2, more). LL's row is the architecture on one node and the host CPU's vendor on
// several (row 0: Intel).
constexpr double kLlMaxBw[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
constexpr double kPerChMaxRingLl128Bw[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
constexpr double kPerChMaxTreeLl128Bw[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChMaxTreeBw[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kNvlsEfficiency[4] = {0, 0, 0.85, 0.74};
// ncclTopoGetAlgoTime's tree correction by log2(bytes / 64), 64 B to 256 MiB.
constexpr double kTreeCorrection[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6,  .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6,  .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
constexpr int kMaxNvlsArity = 32;  // NCCL_MAX_NVLS_ARITY: NVLS channels ("heads") at most

int log2i(int64_t n) {
  int l = 0;
  while (n >>= 1) ++l;
  return l;
}

// compCapIndex: Volta and before 0, Ampere 1, Hopper 2, Blackwell 3.
int arch_index(int cc) { return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0; }

// What the model reads of a group.
struct Shape {
  int ranks = 0;
  int nodes = 0;
  double ppn = 0;
  int arch = 0;
  int nodes_index = 0;  // index2: 1 node, 2 nodes, more
  int channels = 0;     // the search graph's
  double base_bw = 0;   // channels x per-channel speed, GB/s
  Hw intra = kPciHw;
  bool ll128 = false;
};

Shape shape_of(const GroupLayout& layout, const AlphaBeta& ab) {
  Shape s;
  s.ranks = static_cast<int>(layout.members.size());
  std::set<std::pair<int, int>> nodes;
  std::set<int> regions;
  for (size_t i = 0; i < layout.members.size(); ++i) {
    nodes.emplace(layout.region_of[i], layout.node_of[i]);
    regions.insert(layout.region_of[i]);
  }
  s.nodes = static_cast<int>(nodes.size());
  s.ppn = static_cast<double>(s.ranks) / s.nodes;
  s.arch = arch_index(ab.nccl.compute_capability);
  s.nodes_index = s.nodes <= 2 ? s.nodes - 1 : 2;
  s.channels = std::max(1, ab.nccl.graph_channels);
  // On one node the search's bandwidth is the NVLink (or PCIe) path's. Across nodes it is
  // its channels' network speed: every member's NIC where each has its own (one channel
  // per NIC, as the rings of channel_rings), else one NIC's; across regions at most the
  // WAN's.
  double bw = ab.intra_node_bw.bytes_per_second();
  if (s.nodes > 1) {
    const double nics = layout.nic_per_member ? std::floor(s.ppn) : 1.0;
    bw = std::min(bw, nics * ab.inter_node_bw.bytes_per_second());
    if (regions.size() > 1) bw = std::min(bw, ab.inter_region_bw.bytes_per_second());
  }
  s.base_bw = bw / 1e9;
  s.intra = ab.nccl.nvlink ? kNvlinkHw : kPciHw;
  // LL128 auto: sm70 and later, one architecture or Hopper and later, and the protocol in
  // every member's table.
  s.ll128 = costs_of(ab.protocols, CollectiveProtocol::kLL128).bandwidth_fraction > 0 &&
            ab.nccl.compute_capability >= 70 &&
            (!ab.nccl.mixed_architectures || ab.nccl.compute_capability >= 90);
  return s;
}

std::optional<Algo> algo_of(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::kTree:
      return kTreeAlgo;
    case CollectiveAlgorithm::kRing:
      return kRingAlgo;
    case CollectiveAlgorithm::kNvls:
      return kNvlsAlgo;
    default:
      return std::nullopt;
  }
}

bool offered(CollectiveOp op, Algo a, CollectiveProtocol p, const GroupLayout& layout,
             const Shape& s) {
  if (p == CollectiveProtocol::kLL128 && !s.ll128) return false;
  switch (a) {
    case kTreeAlgo:
      return op == CollectiveOp::kAllReduce;
    case kRingAlgo:
      return true;
    case kNvlsAlgo:
      return op == CollectiveOp::kAllReduce && p == CollectiveProtocol::kSimple &&
             layout.nvlink_sharp && s.nodes == 1 && s.arch >= 2;
  }
  return false;
}

// comm->bandwidths[coll][a][p]: the algorithm bandwidth, GB/s.
double algorithm_bandwidth(CollectiveOp op, Algo a, CollectiveProtocol proto, const Shape& s) {
  const auto p = static_cast<size_t>(proto);
  const double ll_max = kLlMaxBw[s.nodes == 1 ? s.arch : 0][s.nodes_index];
  double bus = s.base_bw;
  const double ch = s.channels;
  if (a == kNvlsAlgo) {
    // One head per GPU on one node; the heads share the GPU's NVLink bandwidth.
    const double heads = std::min(kMaxNvlsArity, s.ranks);
    bus = s.base_bw * kNvlsEfficiency[s.arch] * (heads - 1) / heads;
    bus *= op == CollectiveOp::kAllReduce ? 2.0 : (s.ppn - 1) / s.ppn;
  }
  if (a == kRingAlgo && p == 0) bus = std::min(ll_max, bus * 0.5);
  if (a == kRingAlgo && p == 1) {
    bus = std::min(bus * 0.92, ch * kPerChMaxRingLl128Bw[s.arch][s.nodes_index]);
  }
  if (a == kTreeAlgo) bus = std::min(bus * 0.92, ch * kPerChMaxTreeBw[s.arch][s.nodes_index]);
  if (a == kTreeAlgo && p == 0) bus = std::min(bus / 3.8, ll_max);
  if (a == kTreeAlgo && p == 1) {
    bus = std::min(bus * (s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                   ch * kPerChMaxTreeLl128Bw[s.arch][s.nodes_index]);
  }
  // Bus to algorithm bandwidth: the ring's (and NVLS's) n / nsteps, the tree's 0.5.
  const int n = s.ranks;
  const int steps = op == CollectiveOp::kAllReduce ? 2 * (n - 1)
                    : (op == CollectiveOp::kReduceScatter || op == CollectiveOp::kAllGather) ? n - 1
                                                                                             : n;
  return bus * (a == kTreeAlgo ? 0.5 : static_cast<double>(n) / steps);
}

// comm->latencies[coll][a][p], us.
double latency(CollectiveOp op, Algo a, CollectiveProtocol proto, const Shape& s) {
  const auto p = static_cast<size_t>(proto);
  const int n = s.ranks;
  const double intra = kHwLat[s.intra][a][p];
  if (a == kNvlsAlgo) return intra;
  double lat = kBaseLat[a][p];
  // One GPU per node: the network step of the tree.
  const double inter = kHwLat[kNetHw][s.ppn == 1 ? kTreeAlgo : a][p];
  if (a == kTreeAlgo) {
    return lat + 2 * ((s.ppn - 1) * kHwLat[s.intra][kTreeAlgo][p] + log2i(s.nodes) * inter);
  }
  if (op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce) {
    const Hw hw = s.nodes == 1 ? s.intra : kNetHw;
    const double step =
        proto == CollectiveProtocol::kSimple ? kHwLat[hw][kTreeAlgo][p] : kHwLat[hw][kRingAlgo][p];
    return lat + n * step;
  }
  const int steps = op == CollectiveOp::kAllReduce ? 2 * (n - 1) : n - 1;
  // getNetOverhead: 1 us on an Intel host, three times for Simple.
  const double net_overhead =
      s.nodes > 1 ? (proto == CollectiveProtocol::kSimple ? 3.0 : 1.0) : 0.0;
  const int inter_steps =
      s.nodes == 1 ? 0 : (op == CollectiveOp::kAllReduce ? 2 * (s.nodes - 1) : s.nodes - 1);
  return lat + (steps - inter_steps) * std::max(intra, net_overhead) + inter_steps * inter;
}

}  // namespace

bool nccl_tunes(CollectiveOp op) {
  return op != CollectiveOp::kAllToAll && op != CollectiveOp::kSendRecv;
}

std::optional<Duration> nccl_model_time(CollectiveOp op, CollectiveAlgorithm algorithm,
                                        CollectiveProtocol protocol, const GroupLayout& layout,
                                        Bytes bytes, const AlphaBeta& ab) {
  const std::optional<Algo> a = algo_of(algorithm);
  if (!a || !nccl_tunes(op) || !ab.nccl.runs_nccl() || layout.members.size() < 2) {
    return std::nullopt;
  }
  const Shape s = shape_of(layout, ab);
  if (!offered(op, *a, protocol, layout, s)) return std::nullopt;
  double bw = algorithm_bandwidth(op, *a, protocol, s);
  if (!(bw > 0)) return std::nullopt;
  double lat = latency(op, *a, protocol, s);
  const int64_t n = bytes.count();
  if (n < 0) return std::nullopt;
  const int log_size = log2i(n >> 6);
  const auto p = static_cast<size_t>(protocol);
  if (*a == kTreeAlgo && log_size < 23) bw *= kTreeCorrection[p][log_size];
  // "Plateau effect of ring": Simple all-reduce across nodes, per channel and rank >= 64 B.
  const int comm_channels = 2 * s.channels;
  if (*a == kRingAlgo && protocol == CollectiveProtocol::kSimple && s.nodes > 1 &&
      op == CollectiveOp::kAllReduce && n / (comm_channels * s.ranks) >= 64) {
    lat *= ab.nccl.compute_capability < 80 ? 1.9 : 1.4;
  }
  const double ns = 1000 * (lat + static_cast<double>(n) / (1000 * bw));
  // A time past the clock (a 1 bps link) ranks last rather than overflowing.
  if (!(ns < static_cast<double>(Duration::infinite().count_ns()))) return Duration::infinite();
  return Duration::ns(static_cast<int64_t>(ns));
}

NcclChoice nccl_choice(CollectiveOp op, const GroupLayout& layout, Bytes bytes, const AlphaBeta& ab,
                       std::optional<CollectiveAlgorithm> algorithm) {
  std::optional<NcclChoice> best;
  for (CollectiveAlgorithm a :
       {CollectiveAlgorithm::kTree, CollectiveAlgorithm::kRing, CollectiveAlgorithm::kNvls}) {
    if (algorithm && *algorithm != a) continue;
    for (CollectiveProtocol p : kAllCollectiveProtocols) {
      const std::optional<Duration> t = nccl_model_time(op, a, p, layout, bytes, ab);
      if (t && (!best || *t < best->model_time)) best = NcclChoice{a, p, *t};
    }
  }
  if (!best) {
    throw std::invalid_argument("NCCL runs no " +
                                (algorithm ? std::string(algorithm_name(*algorithm)) + " " : "") +
                                std::string(collective_op_name(op)) + " over this group");
  }
  return *best;
}

Duration nccl_nvls_latency() { return Duration::ns(static_cast<int64_t>(kHwLat[0][2][2] * 1000)); }

double nccl_nvls_efficiency(int compute_capability) {
  return kNvlsEfficiency[arch_index(compute_capability)];
}

}  // namespace dtsim
