// The one launch API of the real ops: what a kernel's operands are for an OpSignature, the
// buffers that hold them, and running it. The CPU backend is here; calibration/ times it and
// the executor (later) runs a TaskGraph's kernels through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/op_signature.h"

namespace dtsim::kernels {

// An op this backend has no kernel for: the message names the kind, the pass and why.
class UnsupportedOp : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

enum class ElementType : uint8_t { kFloat32, kInt32, kUInt16, kUInt8 };  // kUInt16: bf16 bits
int element_bytes(ElementType t);

// One operand of a kernel: its name ("x", "weight", "dy"), element count and type, and
// whether the kernel writes it (outputs, gradients accumulated into, optimizer states).
struct OperandSpec {
  std::string name;
  int64_t elements = 0;
  ElementType type = ElementType::kFloat32;
  bool written = false;
};

// The operands of `op`'s CPU kernel, in the order run_cpu takes them, sized from the
// signature's shapes. Throws UnsupportedOp for an op the CPU backend cannot run (see
// cpu_unsupported_reason).
std::vector<OperandSpec> cpu_operands(const OpSignature& op);
// Empty when the CPU backend runs `op`; otherwise why not, in a sentence.
std::string cpu_unsupported_reason(const OpSignature& op);

// Fills an operand's buffer with values every kernel accepts (floats in [-1, 1), positive
// where a kernel divides by or takes the root of them, labels and indices in range, masks of
// 0 and 1), drawn from the random stream `state` (start it at kFillSeed: runs are then
// reproducible), which it advances.
inline constexpr uint64_t kFillSeed = 0x9E3779B97F4A7C15ULL;
void fill_operand(const OpSignature& op, const OperandSpec& spec, std::byte* data, uint64_t& state);

// The operands' buffers, 64-byte aligned and filled by fill_operand, reused across runs as a
// framework reuses its allocations. Operands given a buffer from outside (a tensor the
// caller holds, `external[i]` not null, at least the operand's size) use it; the others get
// one of their own.
class OperandBuffers {
 public:
  explicit OperandBuffers(const OpSignature& op, std::span<std::byte* const> external = {});
  const OpSignature& made_for() const { return op_; }
  size_t size() const { return specs_.size(); }
  const OperandSpec& spec(size_t i) const { return specs_[i]; }
  std::byte* data(size_t i) { return data_[i]; }
  // Points operand i, given from outside at construction, at another buffer the caller
  // holds (the same tensor of another micro-batch); std::invalid_argument for an operand
  // whose buffer is its own.
  void point(size_t i, std::byte* data);
  template <typename T>
  T* as(size_t i) {
    return reinterpret_cast<T*>(data(i));
  }
  // Bytes of the buffers it holds itself.
  int64_t total_bytes() const;

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  OpSignature op_;
  std::vector<OperandSpec> specs_;
  std::vector<std::byte*> data_;
  std::vector<std::unique_ptr<std::byte[], Free>> owned_;  // null where external
};

// Runs `op` on the CPU over `buffers`, which must have been made for an equal signature
// (std::invalid_argument otherwise). The check is a comparison, not a second sizing of the
// operands: run_cpu runs inside a calibration's timed repeats.
void run_cpu(const OpSignature& op, OperandBuffers& buffers);

// The BLAS's threads (calibration measures with one per rank, as the executor runs).
void set_cpu_threads(int threads);
int cpu_threads();
// The BLAS library and its build, for a cost database's device identity.
std::string cpu_blas_identity();
// Loads the BLAS now; else its first use (any of the above, or a GEMM) does, and a command
// that runs no kernel never starts its worker threads. They spin for about 0.1 s after the
// load and take the CPU affinity of the thread that loads it: a command that times kernels
// loads it before its set-up, not at its first measurement, and before it pins a thread.
void load_cpu_blas();

}  // namespace dtsim::kernels
