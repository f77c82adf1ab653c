// The tensors a rank's ops bind (sim/op_operands.h), held for the run: the model state in
// contiguous buffers (parameters, gradients, Adam's two moments), each op's weight and bias
// at its offset in them, as Megatron-LM's param-and-grad buffers lay them out; and one
// buffer of activations per micro-batch, each tensor at its offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "executor/rank_plan.h"
#include "sim/op_operands.h"
#include "sim/task_graph.h"

namespace dtsim::executor {

class TensorStore {
 public:
  // Sizes every tensor by the largest operand bound to it (its offset plus the operand's
  // bytes, as kernels::cpu_operands sizes them), then allocates and fills the buffers.
  // Throws std::invalid_argument naming the task and the op for a binding to an operand
  // the kernel lacks, to tensors of two element sizes, or to activations by a task of no
  // micro-batch; kernels::UnsupportedOp for an op the CPU cannot run.
  TensorStore(const TaskGraph& graph, const RankPlan& plan);
  ~TensorStore();
  TensorStore(const TensorStore&) = delete;
  TensorStore& operator=(const TensorStore&) = delete;

  // Where a tensor lies: model state at a fixed address, a micro-batch's activations at an
  // offset into that micro-batch's buffer (frame()).
  struct Location {
    bool per_micro_batch = false;
    std::byte* state = nullptr;
    int64_t frame_offset = 0;
    // The tensor's start, given the buffer of the micro-batch that reads it (frame()).
    std::byte* in(std::byte* micro_batch_frame) const {
      return per_micro_batch ? micro_batch_frame + frame_offset : state;
    }
  };
  Location locate(const TensorRef& tensor) const;
  // The activations' buffer of `micro_batch`; null for one whose activations no op binds.
  std::byte* frame(uint32_t micro_batch) const {
    const auto it = frames_.find(micro_batch);
    return it == frames_.end() ? nullptr : it->second.data();
  }
  std::byte* data(const TensorRef& tensor, uint32_t micro_batch) const {
    return locate(tensor).in(frame(micro_batch));
  }

  // Bytes of the buffers it holds: the state's four, and every micro-batch's activations.
  int64_t bytes() const;
  // Distinct tensors: of the model state (a weight and its gradient once), of a micro-batch.
  size_t state_tensors() const { return state_offset_.size(); }
  size_t activation_tensors() const { return frame_offset_.size(); }
  size_t micro_batches() const { return frames_.size(); }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  struct Block {
    std::unique_ptr<std::byte[], Free> memory;
    int64_t bytes = 0;
    std::byte* data() const { return memory.get(); }
  };
  static Block allocate(int64_t bytes);

  // Byte offsets in the state buffers (weight and its gradient share one) and in a frame.
  std::map<TensorRef, int64_t> state_offset_;
  std::map<TensorRef, int64_t> frame_offset_;
  int64_t state_bytes_ = 0;
  int64_t frame_bytes_ = 0;
  Block params_, grads_, moment1_, moment2_;
  std::map<uint32_t, Block> frames_;  // by micro-batch
};

}  // namespace dtsim::executor
