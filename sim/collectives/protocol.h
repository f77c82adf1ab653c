// The protocols a collective library moves data with (NCCL's LL, LL128 and Simple): each
// trades latency for bandwidth, and a call uses the one that finishes it first.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "sim/units.h"

namespace dtsim {

enum class CollectiveProtocol : uint8_t { kLL, kLL128, kSimple };
inline constexpr std::array kAllCollectiveProtocols{
    CollectiveProtocol::kLL, CollectiveProtocol::kLL128, CollectiveProtocol::kSimple};
std::string_view collective_protocol_name(CollectiveProtocol p);  // "LL", "LL128", "Simple"

// One protocol's costs (NCCL's tuning model: baseLat, hwLat, and the bus bandwidth factor):
// per call, per hop that one piece of data crosses inside a node and out of it, and the
// fraction of the links' rate its data reaches (flags and synchronisation take the rest).
// A bandwidth_fraction of 0 means the library does not use the protocol.
struct ProtocolCosts {
  Duration base = Duration::zero();
  Duration intra_node_step = Duration::zero();
  Duration network_step = Duration::zero();
  double bandwidth_fraction = 0;
};

// Indexed by CollectiveProtocol.
using ProtocolTable = std::array<ProtocolCosts, kAllCollectiveProtocols.size()>;

inline const ProtocolCosts& costs_of(const ProtocolTable& t, CollectiveProtocol p) {
  return t[static_cast<size_t>(p)];
}

}  // namespace dtsim
