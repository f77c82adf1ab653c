// The name and version a lowered-graph file declares in its first line (written by
// reports/lowered_graph_writer.h, read by scenarios/lowered_graph_reader.h).
#pragma once

namespace dtsim {

inline constexpr const char* kLoweredGraphFormat = "dtsim-lowered-graph";
// 2: collectives carry dtype and reduce; alloc and free tasks their buffer and category.
// 3: pipeline sends and recvs carry the tensor they move.
// 4: op lists carry their ops' bound operands; a compute task's tag is its micro-batch.
inline constexpr int kLoweredGraphVersion = 4;

}  // namespace dtsim
