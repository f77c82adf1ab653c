// Cost keys and families from the signature's JSON form.
#include "calibration/cost_key.h"

#include <cmath>

#include "models/op_signature_json.h"

namespace dtsim::calibration {

namespace {

bool on_matrix_units(KernelKind k) {
  return k == KernelKind::kGemm || k == KernelKind::kBatchedGemm || k == KernelKind::kGroupedGemm ||
         k == KernelKind::kFlashAttention || k == KernelKind::kConv;
}

OpSignature kernel_only(const OpSignature& op) {
  OpSignature k = op;
  k.name.clear();
  k.recomputed = false;
  k.attention_core = false;
  return k;
}

}  // namespace

std::string cost_key(const OpSignature& op) {
  return models::op_signature_to_json(kernel_only(op)).dump();
}

std::string family_key(const OpSignature& op) {
  OpSignature k = kernel_only(op);
  const double elements = static_cast<double>(op.rows) * static_cast<double>(op.width);
  const long bytes_per_element =
      elements > 0 ? std::lround(op.bytes / elements) : 0;  // before the sizes are cleared
  const bool batched = k.gemm.batch > 1;
  k.gemm.m = k.gemm.n = k.gemm.k = 0;
  k.gemm.batch = batched ? 2 : 1;
  k.conv = {};
  k.conv.stride = op.conv.stride;
  k.conv.padding = op.conv.padding;
  k.conv.r = op.conv.r;
  k.conv.s = op.conv.s;
  k.attention = {};
  k.rows = k.width = 0;
  k.flops = k.bytes = 0;
  nlohmann::json j = models::op_signature_to_json(k);
  if (!on_matrix_units(op.kind)) j["bytes_per_element"] = bytes_per_element;
  return j.dump();
}

double work_of(const OpSignature& op) {
  if (on_matrix_units(op.kind)) return op.flops > 0 ? op.flops : op.gemm.flops();
  if (op.bytes > 0) return op.bytes;
  return static_cast<double>(op.rows) * static_cast<double>(op.width);
}

}  // namespace dtsim::calibration
