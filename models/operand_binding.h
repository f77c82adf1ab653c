// Which tensors each kernel of a layer's op binds (sim/op_operands.h): the model's data flow
// (Op::reads) and its weights, named by the operands of the kernel API (kernels/kernel.h).
#pragma once

#include "models/workload.h"
#include "sim/op_operands.h"
#include "sim/op_signature.h"

namespace dtsim::models {

// The operands of `kernel`, one of op_kernels(op) for op `op` of layer `layer` of `w`, bound
// to that layer's tensors: its inputs' results and their gradients, its own result,
// statistics and gradient, and its weights and their gradients. Kernels that read bf16 or
// move raw bytes (casts, copies) bind none: they run on scratch operands.
OpOperands bind_operands(const Workload& w, int layer, int op, const OpSignature& kernel);

// The optimizer's update over the rank's whole model state.
OpOperands optimizer_operands();

}  // namespace dtsim::models
