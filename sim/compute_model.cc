// Processor sharing per device: n running kernels each progress at 1/n of full speed; a
// crowded kernel's speed follows how many of its CPU's other devices compute.
#include "sim/compute_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dtsim {

ComputeModel::ComputeModel(Engine& engine, int num_devices)
    : engine_(engine), devices_(num_devices), speed_(num_devices, 1.0), busy_(num_devices, 0) {}

void ComputeModel::set_cpus(const std::vector<int>& cpu_of_device) {
  if (cpu_of_device.size() != devices_.size()) {
    throw std::invalid_argument("ComputeModel::set_cpus: one CPU per device");
  }
  if (kernels_.size() != free_.size()) {
    throw std::logic_error("ComputeModel::set_cpus while kernels run");
  }
  cpu_of_ = cpu_of_device;
  int cpus = 0;
  for (int c : cpu_of_) {
    if (c < 0) throw std::invalid_argument("ComputeModel::set_cpus: a negative CPU");
    cpus = std::max(cpus, c + 1);
  }
  cpu_devices_.assign(static_cast<size_t>(cpus), {});
  for (size_t d = 0; d < cpu_of_.size(); ++d) cpu_devices_[cpu_of_[d]].push_back(static_cast<int>(d));
  busy_on_cpu_.assign(static_cast<size_t>(cpus), 0);
  crowded_on_cpu_.assign(static_cast<size_t>(cpus), 0);
}

void ComputeModel::start(int device, Duration exclusive, std::function<void()> done,
                         Crowding crowding) {
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
  kernel.crowding = crowding;
  kernel.done = std::move(done);
  devices_[device].push_back(k);
  if (!cpu_of_.empty()) {
    if (crowding.co_runners > 0) ++crowded_on_cpu_[cpu_of_[device]];
    if (!busy_[device]) busy_change(device, +1);
  }
  reshare(device);
}

double ComputeModel::crowding_speed(const Kernel& kernel) const {
  const Crowding& c = kernel.crowding;
  if (c.co_runners == 0 || cpu_of_.empty()) return 1;
  // The other devices of its CPU computing now; the kernel's own device is one of the busy.
  const int others = std::clamp(busy_on_cpu_[cpu_of_[kernel.device]] - 1, 0,
                                static_cast<int>(c.co_runners));
  const double f = c.alone_fraction;
  return 1 / (f + (1 - f) * others / c.co_runners);
}

void ComputeModel::reshare(int device) {
  const Time now = engine_.now();
  auto& running = devices_[device];
  const double share = running.empty() ? 0 : speed_[device] / static_cast<double>(running.size());
  for (uint32_t k : running) {
    Kernel& kernel = kernels_[k];
    kernel.remaining_ns -= kernel.rate * static_cast<double>((now - kernel.last).count_ns());
    kernel.last = now;
    kernel.rate = share * crowding_speed(kernel);
    ++kernel.version;
    const double left = std::ceil(std::max(0.0, kernel.remaining_ns) / kernel.rate);
    // Past ~292 years of simulated time a kernel never finishes: the run reports it stalled.
    if (left < 9e18 - static_cast<double>(now.count_ns())) {
      completions_.push(now + Duration::ns(static_cast<int64_t>(left)), k, kernel.version);
    }
  }
}

void ComputeModel::busy_change(int device, int delta) {
  const int cpu = cpu_of_[device];
  busy_[device] = delta > 0;
  busy_on_cpu_[cpu] += delta;
  if (crowded_on_cpu_[cpu] == 0) return;
  for (int other : cpu_devices_[cpu]) {
    if (other != device && !devices_[other].empty()) reshare(other);
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
  // The lists of the call before, emptied, keep their capacity: a step's kernels end one
  // or two at a time, and two allocations each cost more than the rest of the bookkeeping.
  // Taken out of the members while in use, so that a nested call would find none in use.
  std::vector<int> touched = std::move(touched_scratch_);
  std::vector<std::function<void()>> callbacks = std::move(callbacks_scratch_);
  touched.clear();
  callbacks.clear();
  completions_.pop_due(
      now, [this](uint32_t k, uint32_t v) { return is_current(k, v); },
      [&](uint32_t k) {
        Kernel& kernel = kernels_[k];
        kernel.running = false;
        ++kernel.version;
        auto& running = devices_[kernel.device];
        running.erase(std::find(running.begin(), running.end(), k));
        if (kernel.crowding.co_runners > 0 && !cpu_of_.empty()) {
          --crowded_on_cpu_[cpu_of_[kernel.device]];
        }
        touched.push_back(kernel.device);
        callbacks.push_back(std::move(kernel.done));
        free_.push_back(k);
      });
  for (int d : touched) {
    // A device goes idle once, however many of its kernels ended now.
    if (!devices_[d].empty()) {
      reshare(d);
    } else if (busy_[d]) {
      busy_change(d, -1);
    }
  }
  for (auto& cb : callbacks) cb();
  callbacks.clear();
  touched_scratch_ = std::move(touched);
  callbacks_scratch_ = std::move(callbacks);
}

}  // namespace dtsim
