// Compute resource model: each device runs its kernels as a fluid resource; kernels that
// run at the same time on one device (from different streams) share it equally, and all of
// them slow down by the device's comm_compute_slowdown while a transfer of its own runs.
#pragma once

#include <functional>
#include <vector>

#include "sim/completion_queue.h"
#include "sim/engine.h"
#include "sim/resource_model.h"

namespace dtsim {

class ComputeModel final : public ResourceModel {
 public:
  ComputeModel(Engine& engine, int num_devices)
      : engine_(engine), devices_(num_devices), speed_(num_devices, 1.0) {}

  // Runs a kernel that would take `exclusive` with the device to itself.
  void start(int device, Duration exclusive, std::function<void()> done);
  // The device's speed relative to having it to itself: below 1 while communication
  // kernels share its SMs and memory bandwidth.
  void set_speed(int device, double speed);

  Time next_completion() override;
  void complete_due(Time now) override;

 private:
  struct Kernel {
    int device = 0;
    double remaining_ns = 0;  // of exclusive device time, as of `last`
    double rate = 0;          // exclusive ns per simulated ns (1 / kernels on the device)
    Time last;
    uint32_t version = 0;
    bool running = false;
    std::function<void()> done;
  };
  // Re-divides a device among its running kernels after one starts or ends.
  void reshare(int device);
  bool is_current(uint32_t kernel, uint32_t version) const;

  Engine& engine_;
  std::vector<std::vector<uint32_t>> devices_;  // running kernels per device
  std::vector<double> speed_;
  std::vector<Kernel> kernels_;
  std::vector<uint32_t> free_;
  CompletionQueue completions_;
};

}  // namespace dtsim
