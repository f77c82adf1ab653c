// Processor sharing per device: n running kernels each progress at 1/n of full speed.
#include "sim/compute_model.h"

#include <algorithm>
#include <cmath>

namespace dtsim {

void ComputeModel::start(int device, Duration exclusive, std::function<void()> done) {
  uint32_t k;
  if (!free_.empty()) {
    k = free_.back();
    free_.pop_back();
  } else {
    k = static_cast<uint32_t>(kernels_.size());
    kernels_.emplace_back();
  }
  Kernel& kernel = kernels_[k];
  kernel.device = device;
  kernel.remaining_ns = static_cast<double>(exclusive.count_ns());
  kernel.rate = 0;
  kernel.last = engine_.now();
  kernel.running = true;
  kernel.done = std::move(done);
  devices_[device].push_back(k);
  reshare(device);
}

void ComputeModel::reshare(int device) {
  const Time now = engine_.now();
  auto& running = devices_[device];
  const double rate = running.empty() ? 0 : speed_[device] / static_cast<double>(running.size());
  for (uint32_t k : running) {
    Kernel& kernel = kernels_[k];
    kernel.remaining_ns -= kernel.rate * static_cast<double>((now - kernel.last).count_ns());
    kernel.last = now;
    kernel.rate = rate;
    ++kernel.version;
    const double left = std::ceil(std::max(0.0, kernel.remaining_ns) / rate);
    // Past ~292 years of simulated time a kernel never finishes: the run reports it stalled.
    if (left < 9e18 - static_cast<double>(now.count_ns())) {
      completions_.push(now + Duration::ns(static_cast<int64_t>(left)), k, kernel.version);
    }
  }
}

void ComputeModel::set_speed(int device, double speed) {
  if (speed_[device] == speed) return;
  speed_[device] = speed;
  if (!devices_[device].empty()) reshare(device);
}

bool ComputeModel::is_current(uint32_t k, uint32_t version) const {
  return kernels_[k].running && kernels_[k].version == version;
}

Time ComputeModel::next_completion() {
  return completions_.next([this](uint32_t k, uint32_t v) { return is_current(k, v); });
}

void ComputeModel::complete_due(Time now) {
  std::vector<int> touched;
  std::vector<std::function<void()>> callbacks;
  completions_.pop_due(
      now, [this](uint32_t k, uint32_t v) { return is_current(k, v); },
      [&](uint32_t k) {
        Kernel& kernel = kernels_[k];
        kernel.running = false;
        ++kernel.version;
        auto& running = devices_[kernel.device];
        running.erase(std::find(running.begin(), running.end(), k));
        touched.push_back(kernel.device);
        callbacks.push_back(std::move(kernel.done));
        free_.push_back(k);
      });
  for (int d : touched) reshare(d);
  for (auto& cb : callbacks) cb();
}

}  // namespace dtsim
