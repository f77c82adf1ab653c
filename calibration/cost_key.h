// Which measured timings price an op: its key (the kernel it runs, whatever the model calls
// it) for an exact match, and its family (the key without the sizes) and work for
// interpolating between the sizes measured.
#pragma once

#include <string>

#include "sim/op_signature.h"

namespace dtsim::calibration {

// The signature without what does not change the kernel: the model's name, whether it is
// a recomputation, and the roofline's attention-core flag.
std::string cost_key(const OpSignature& op);
// The key without the sizes (GEMM and convolution dims, attention lengths, rows, width,
// FLOPs and bytes), keeping the kind, pass, dtypes, layouts, flags and, for memory-bound
// kernels, the bytes each element moves: ops of one family run one kernel at other sizes.
std::string family_key(const OpSignature& op);
// The size along which a family is interpolated: FLOPs for the kernels that run on the
// matrix units (GEMMs, attention, convolutions), bytes moved for the others.
double work_of(const OpSignature& op);

}  // namespace dtsim::calibration
