// NCCL's own figures behind the memory its communicators hold: the per-connection buffers
// and how many channels (rings) and peer-to-peer channels a node of GPUs gets.
#pragma once

#include "sim/units.h"

namespace dtsim {

// Buffers of one NCCL connection, per protocol (src/init.cc computeBuffSizes, NCCL 2.30):
// LL = NCCL_LL_LINES_PER_THREAD 8 x NCCL_LL_MAX_NTHREADS 512 x NCCL_STEPS 8 x 16-byte
// lines; LL128 = NCCL_LL128_ELEMS_PER_THREAD 120 x NCCL_LL128_MAX_NTHREADS 640 x 8 steps x
// 8 bytes; Simple = NCCL_BUFFSIZE's default, 4 MiB.
inline constexpr int64_t kNcclLlBufferBytes = 8 * 512 * 8 * 16;      // 512 KiB
inline constexpr int64_t kNcclLl128BufferBytes = 120 * 640 * 8 * 8;  // 4,915,200
inline constexpr int64_t kNcclSimpleBufferBytes = int64_t{1} << 22;  // 4 MiB

// Device memory of one connection. Inside a node (P2P or SHM transport, src/transport/
// p2p.cc) all three protocols' buffers are in device memory, on the receiving GPU (Simple's
// on the sender under P2P read: the same total per GPU, as every GPU of a ring both sends
// and receives). Over the network (src/transport/net.cc) LL's buffer is host memory; LL128's
// and Simple's are device memory with GPUDirect RDMA, which this model assumes.
Bytes nccl_connection_bytes(bool over_network);

// The channels NCCL runs collectives on, for a node of GPUs of compute capability `sm`
// (60, 70, 80, 90, 100: major x 10) with `nvlink_links` NVLinks each to an NVSwitch, or
// 0 for GPUs joined by PCIe only. The ring search (src/graph/search.cc ncclTopoCompute):
// from the fastest per-channel speed of the architecture's table that the GPU's bandwidth
// allows, down while the next speed is above 0.49 of the best found, it keeps the speed
// whose channels (GPU bandwidth / speed, at most MAXCHANNELS / 2 = 32) carry the most,
// stopping when they carry all of it; ncclTopoDupChannels doubles them at 25 GB/s per
// channel or more (not for sm > 80 below 50 GB/s with more than 4 channels); connectRings
// (src/graph/connect.cc) doubles them again, to at most MAXCHANNELS = 64. NVLink bandwidth
// per link as src/graph/topo.h gives it (SM90_NVLINK_BW 20.6 GB/s ...), PCIe as PCI_BW 12.
// Checked against NCCL's logs: 8 H800s (8 links) 16 channels, 8 H100s (18 links) 24.
int nccl_collective_channels(int nvlink_links, int sm);

// Peer-to-peer channels per peer inside such a node (src/graph/paths.cc
// ncclTopoGetNchannels, ncclTopoComputeP2pChannels): 2 per NVLink of the path (2 over
// PCIe), both that and the channel count rounded up to a power of two, the smaller kept.
int nccl_p2p_channels_per_local_peer(int nvlink_links, int collective_channels);

// Peer-to-peer channels per peer in another node: at least one per NIC local to the GPU
// and one per 14 GB/s of their bandwidth (NCCL_P2P_PER_CHANNEL_NET_BW), rounded up to a
// power of two, then halved while that many per peer over the communicator's peers, 8 per
// batch (NCCL_MAX_DEV_WORK_P2P_PER_BATCH), would exceed its p2p channels.
int nccl_p2p_channels_per_remote_peer(int local_nics, Bandwidth local_nic_bandwidth,
                                      int collective_channels, int communicator_ranks);

}  // namespace dtsim
