// The CPU sweep, the distinct kernels of a step, and this CPU's identity.
#include "calibration/calibrate.h"

#include <sched.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <optional>
#include <set>
#include <string>

#include "calibration/cost_key.h"
#include "calibration/co_runners.h"
#include "calibration/cupti_timer.h"
#include "calibration/speed_reference.h"
#include "calibration/kernel_timer.h"
#include "kernels/cuda_backend.h"
#include "kernels/kernel.h"

namespace dtsim::calibration {

namespace {

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return stamp;
}

// One op's timings: among co-runners (or alone when there are none) and, beside co-runners,
// alone too.
struct Timed {
  Measurement measured;
  std::optional<Measurement> alone;
};

// The sweep's loop: progress, budget and stop, refusals; `run` measures one op (a Timed).
template <typename Refusal, typename Run>
SweepResult sweep(const std::vector<OpSignature>& ops, const DeviceIdentity& device,
                  const SweepOptions& options, Refusal refusal, Run run) {
  SweepResult out;
  out.db.device = device;
  const auto start = std::chrono::steady_clock::now();
  const auto total = static_cast<int64_t>(ops.size());
  for (int64_t i = 0; i < total; ++i) {
    options.control.report("calibration", i, total);
    const bool over_budget =
        options.budget && std::chrono::steady_clock::now() - start >
                              std::chrono::nanoseconds(options.budget->count_ns());
    if (options.control.stop_requested() || over_budget) {
      out.cancelled = options.control.stop_requested();
      out.unmeasured = static_cast<int>(total - i);
      break;
    }
    const OpSignature& op = ops[static_cast<size_t>(i)];
    if (const std::string why = refusal(op); !why.empty()) {
      out.refused.push_back(why);
      continue;
    }
    const Timed t = run(op);
    const Measurement& m = t.measured;
    out.noisy += m.noisy;
    CostEntry entry{op, MeasurementContext::kIsolation, m.samples_s, m.stats, m.noisy, {}, {}};
    if (t.alone) {
      entry.alone_samples_s = t.alone->samples_s;
      entry.alone = t.alone->stats;
    }
    out.db.entries.push_back(std::move(entry));
  }
  options.control.report("calibration", total - out.unmeasured, total);
  return out;
}

}  // namespace

std::vector<OpSignature> distinct_kernels(const TaskGraph& graph) {
  std::vector<OpSignature> out;
  std::set<std::string> seen;
  for (OpListId l = 0; l < graph.num_op_lists(); ++l) {
    for (const OpSignature& op : graph.op_list(l)) {
      if (seen.insert(cost_key(op)).second) out.push_back(op);
    }
  }
  return out;
}

std::vector<OpSignature> with_gemm_neighbours(const std::vector<OpSignature>& ops) {
  std::vector<OpSignature> out;
  std::set<std::string> seen;
  const auto add = [&](const OpSignature& op) {
    if (seen.insert(cost_key(op)).second) out.push_back(op);
  };
  for (const OpSignature& op : ops) {
    add(op);
    if (op.kind != KernelKind::kGemm && op.kind != KernelKind::kBatchedGemm &&
        op.kind != KernelKind::kGroupedGemm) {
      continue;
    }
    for (int64_t GemmDims::*dim : {&GemmDims::m, &GemmDims::n, &GemmDims::k}) {
      OpSignature next = op;
      next.gemm.*dim += 1;
      next.flops =
          op.flops * static_cast<double>(next.gemm.*dim) / static_cast<double>(op.gemm.*dim);
      next.bytes = op.bytes;  // the traffic barely changes; the signature keeps its count
      add(next);
    }
  }
  return out;
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
}

DeviceIdentity cpu_identity(const std::string& catalog_name) {
  DeviceIdentity id;
  id.backend = "cpu";
  id.catalog_name = catalog_name;
  id.timer = "steady_clock";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos || colon + 2 > line.size()) continue;
    const std::string value = line.substr(colon + 2);
    if (line.rfind("model name", 0) == 0 && id.name.empty()) id.name = value;
    if (line.rfind("cpu MHz", 0) == 0 && id.clock_mhz == 0) {
      try {
        id.clock_mhz = std::stod(value);
      } catch (const std::exception&) {
      }
    }
    if (!id.name.empty() && id.clock_mhz > 0) break;
  }
  if (id.name.empty()) id.name = "unknown CPU";
  id.cores = usable_cores();
  id.threads = kernels::cpu_threads();
  id.blas = kernels::cpu_blas_identity();
  id.measured_at = utc_now();
  return id;
}

SweepResult sweep_cpu(const std::vector<OpSignature>& ops, const DeviceIdentity& device,
                      const SweepOptions& options) {
  SteadyClockTimer timer;
  CacheFlusher flusher;
  DeviceIdentity measured_on = device;
  // The machine's speed as the sweep starts and ends, alone on its cores.
  const double reference_before = reference_kernel_s();
  SweepResult out;
  {
    CoRunners co_runners(options.co_runners);
    measured_on.co_runners = co_runners.count();
    out = sweep(ops, measured_on, options, kernels::cpu_unsupported_reason,
                [&](const OpSignature& op) {
                  // Alone first, then beside the co-runners, back to back: the machine's
                  // speed drifts by minutes, so the two times of a kernel are taken together.
                  Timed t;
                  if (co_runners.count() > 0) {
                    co_runners.pause();
                    t.alone = measure_cpu_op(op, timer, &flusher, options.policy);
                  }
                  co_runners.run(op);
                  t.measured = measure_cpu_op(op, timer, &flusher, options.policy);
                  return t;
                });
  }
  out.db.device.reference_s = (reference_before + reference_kernel_s()) / 2;
  return out;
}

DeviceIdentity cuda_identity(const std::string& catalog_name) {
  const kernels::CudaDeviceInfo info = kernels::cuda_device_info();
  DeviceIdentity id;
  id.backend = "cuda";
  id.name = info.name;
  id.catalog_name = catalog_name;
  id.timer = "cupti";
  id.measured_at = utc_now();
  id.sm_count = info.sm_count;
  id.sm_clock_mhz = info.sm_clock_mhz;
  id.memory_clock_mhz = info.memory_clock_mhz;
  id.memory_bytes = info.memory_bytes;
  id.driver = info.driver;
  id.cuda = info.runtime;
  id.cublas = info.cublas;
  id.cudnn = info.cudnn;
  id.nccl = info.nccl;
  return id;
}

SweepResult sweep_cuda(const std::vector<OpSignature>& ops, const DeviceIdentity& device,
                       const SweepOptions& options) {
  CuptiTimer timer;
  SweepResult out =
      sweep(ops, device, options, kernels::cuda_unsupported_reason, [&](const OpSignature& op) {
        kernels::CudaGemm gemm(op);
        const std::function<void()> evict_l2 = [&] { gemm.flush_l2(); };
        return Timed{measure([&] { gemm.launch(); }, timer,
                             options.policy.flush_caches ? evict_l2 : nullptr, options.policy),
                     std::nullopt};
      });
  if (timer.dropped_records() > 0) {
    out.refused.push_back("CUPTI dropped " + std::to_string(timer.dropped_records()) +
                          " activity records: some timings may be missing kernels");
  }
  return out;
}

}  // namespace dtsim::calibration
