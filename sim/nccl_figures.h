// NCCL's own figures behind the memory its communicators hold: the buffers of a channel's
// connections and how many channels (rings) and peer-to-peer channels a communicator gets.
// From NCCL 2.30's source (src/init.cc, src/transport/p2p.cc and net.cc, src/graph/).
#pragma once

#include "sim/units.h"

namespace dtsim {

// One connection's buffer per protocol (src/init.cc computeBuffSizes): LL = 8 lines per
// thread x 512 threads x NCCL_STEPS 8 x 16-byte lines; LL128 = 120 elements per thread x
// 640 threads x 8 steps x 8 bytes; Simple = NCCL_BUFFSIZE's default, 4 MiB.
inline constexpr int64_t kNcclLlBufferBytes = 8 * 512 * 8 * 16;      // 512 KiB
inline constexpr int64_t kNcclLl128BufferBytes = 120 * 640 * 8 * 8;  // 4,915,200
inline constexpr int64_t kNcclSimpleBufferBytes = int64_t{1} << 22;  // 4 MiB
// Device buffers are allocated in multiples of CUDA_IPC_MIN (src/include/comm.h; the
// granularity of NCCL's cuMem allocations).
inline constexpr int64_t kNcclAllocationBytes = int64_t{1} << 21;  // 2 MiB

// Device memory of a rank's two connections on one channel of a ring (it sends to one
// neighbour and receives from the other), rounded as allocated. Inside a node (P2P
// transport, src/transport/p2p.cc) the sending side holds Simple under P2P read and the
// receiving side LL and LL128 (Simple too without P2P read): 6 + 6 MiB either way, 2 + 10
// without. Over the network (src/transport/net.cc) with GPUDirect RDMA, which the model
// assumes: the sending side LL128 and Simple (its LL is host memory), the receiving side all
// three: 10 + 10 MiB.
Bytes nccl_channel_bytes(bool over_network);

// A rank's pool for peer-to-peer transfers over the network in one direction
// (sharedNetBuffersInit: every remote peer shares it): p2p channels x NCCL_SHARED_STEPS 16 x
// the 128 KiB network chunk (NCCL_P2P_NET_CHUNKSIZE), rounded as allocated.
Bytes nccl_network_p2p_pool_bytes(int p2p_channels);

// The channels NCCL runs collectives on inside one node of GPUs of compute capability `sm`
// (major x 10) with `nvlink_links` NVLinks each to an NVSwitch, or 0 for GPUs on PCIe Gen3
// (PCI_BW 12 GB/s). Pass 1 of the ring search (src/graph/search.cc ncclTopoCompute): from
// the fastest per-channel speed of the architecture's table that the GPU's bandwidth
// allows (links x ncclTopoNVLinkBw: 20.6 GB/s on sm90 ...), down while the next speed is
// above 0.49 of the best found, it keeps the speed whose channels (bandwidth / speed, at
// most MAXCHANNELS / 2 = 32) carry strictly the most, stopping when they carry all of it.
// ncclTopoDupChannels doubles them at 25 GB/s a channel or more (not on sm > 80 below
// 50 GB/s with more than 4 channels); connectRings (src/graph/connect.cc) doubles them
// again, to at most MAXCHANNELS = 64. The search's second pass, which raises the speed of
// the solution found, changes no count for 1 to 18 links and is left out; so are the tree
// search's count and the ranks' minimum, which NCCL also takes. Checked against NCCL's
// logs: 8 H800s (8 links) 16 channels, 8 H100s (18 links) 24.
int nccl_collective_channels(int nvlink_links, int sm);

// The channels of a communicator whose rings cross nodes, each node's members reaching the
// network through `nics` NICs of `nic_bandwidth` (NCCL counts a NIC at its line rate, Mb/s
// / 8000 GB/s). The same search over the architecture's inter-node speeds, a channel
// leaving the node through one NIC (nics x floor(NIC bandwidth / speed) channels), then the
// doublings above and, on sm90 and later, one more while the channel speed is above 45 GB/s
// and the channels fewer than 16 (connect.cc). An approximation of the search's NIC
// placement: one GPU a node on one 400 Gb/s NIC gives 4; two per node on a NIC each, 8, as
// NCCL's log of 4 H20s on 2 nodes says.
int nccl_network_channels(int nics, Bandwidth nic_bandwidth, int sm);

// Peer-to-peer channels (src/graph/paths.cc ncclTopoComputeP2pChannels): the
// communicator's channels rounded up to a power of two, at most 64.
int nccl_p2p_channels(int collective_channels);

// Peer-to-peer channels per peer in the same node (ncclTopoGetNchannels): 2 per NVLink of
// the path (2 over PCIe), rounded up to a power of two, at most the p2p channels.
int nccl_p2p_channels_per_local_peer(int nvlink_links, int p2p_channels);

// Per peer in another node: at least one per NIC near the GPU (2 without one) and one per
// 14 GB/s of their bandwidth (NCCL_P2P_PER_CHANNEL_NET_BW), rounded up to a power of two.
int nccl_p2p_channels_per_remote_peer(int local_nics, Bandwidth local_nic_bandwidth);

}  // namespace dtsim
