// Compute resource model: each device runs its kernels as a fluid resource; kernels that
// run at the same time on one device (from different streams) share it equally, all of
// them slow down by the device's comm_compute_slowdown while a transfer of its own runs,
// and a crowded kernel (a CPU's, timed beside co-runners) runs faster while fewer of its
// CPU's other devices compute.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/completion_queue.h"
#include "sim/engine.h"
#include "sim/resource_model.h"
#include "sim/task_graph.h"

namespace dtsim {

class ComputeModel final : public ResourceModel {
 public:
  ComputeModel(Engine& engine, int num_devices);

  // The CPU each device shares with its neighbours (a node's CPU; every rank's, when a real
  // run packs the nodes onto one machine): numbers from 0. Until it is called no kernel is
  // crowded (a GPU step's never are, and 100,000 devices need no per-CPU lists). Throws
  // std::logic_error while kernels run.
  void set_cpus(const std::vector<int>& cpu_of_device);
  // Runs a kernel that would take `exclusive` with the device to itself. With crowding, a
  // CPU kernel's `exclusive` is its time while `crowding.co_runners` other devices of its
  // CPU compute; with k of them computing it runs at 1 / (f + (1 - f) k / n) of that speed
  // (f the alone fraction, n the co-runners, k at most n): the calibration's two times, and
  // in between the share of neighbours that crowd it.
  void start(int device, Duration exclusive, std::function<void()> done, Crowding crowding = {});
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
    Crowding crowding;
    std::function<void()> done;
  };
  // Re-divides a device among its running kernels after one starts or ends.
  void reshare(int device);
  // A device started or stopped computing: its CPU's crowded kernels change speed.
  void busy_change(int device, int delta);
  double crowding_speed(const Kernel& kernel) const;
  bool is_current(uint32_t kernel, uint32_t version) const;

  Engine& engine_;
  std::vector<std::vector<uint32_t>> devices_;  // running kernels per device
  std::vector<double> speed_;
  std::vector<uint8_t> busy_;                // by device: counted in busy_on_cpu_
  std::vector<int> cpu_of_;                  // by device; empty: no crowding
  std::vector<std::vector<int>> cpu_devices_;  // by CPU
  std::vector<int> busy_on_cpu_;             // devices with a kernel running, by CPU
  std::vector<int> crowded_on_cpu_;          // running crowded kernels, by CPU
  std::vector<Kernel> kernels_;
  std::vector<uint32_t> free_;
  CompletionQueue completions_;
  // complete_due's lists, kept between calls for their capacity.
  std::vector<int> touched_scratch_;
  std::vector<std::function<void()>> callbacks_scratch_;
};

}  // namespace dtsim
