// CUPTI's Activity API: buffers handed over by the requested and completed callbacks, kernel
// records collected under a lock, a forced flush after every repeat, dropped records counted.
#include <cuda_runtime.h>
#include <cupti.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include "calibration/cupti_timer.h"
#include "kernels/cuda_backend.h"

namespace dtsim::calibration {

namespace {

constexpr size_t kBufferBytes = 8u << 20;
constexpr size_t kAlign = 8;

// The activity callbacks are plain functions: what they fill is process-wide.
struct Records {
  std::mutex mutex;
  std::vector<uint64_t> kernel_ns;  // end - start of each kernel record, in arrival order
  uint64_t memcpy_records = 0;
  uint64_t dropped = 0;
};
Records& records() {
  static Records r;
  return r;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t,
                               size_t valid) {
  Records& r = records();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        r.kernel_ns.push_back(k->end - k->start);
      } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        ++r.memcpy_records;
      }
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS) {
      r.dropped += dropped;
    }
  }
  std::free(buffer);
}

std::string cupti_error(CUptiResult r, const char* what) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return std::string("CUPTI: ") + what + ": " + (text != nullptr ? text : "unknown error");
}

}  // namespace

std::string cupti_unavailable_reason() {
  if (kernels::cuda_device_count() == 0) return "CUPTI: no CUDA device found";
  return "";
}

CuptiTimer::CuptiTimer() {
  if (const std::string why = cupti_unavailable_reason(); !why.empty())
    throw std::runtime_error(why);
  if (const CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
      r != CUPTI_SUCCESS) {
    throw std::runtime_error(cupti_error(r, "cuptiActivityRegisterCallbacks"));
  }
  for (const CUpti_ActivityKind kind :
       {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY}) {
    if (const CUptiResult r = cuptiActivityEnable(kind); r != CUPTI_SUCCESS) {
      throw std::runtime_error(cupti_error(r, "cuptiActivityEnable") +
                               " (another profiler attached, or no permission to profile)");
    }
  }
}

CuptiTimer::~CuptiTimer() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
}

std::vector<double> CuptiTimer::time(const std::function<void()>& kernel,
                                     const std::function<void()>& between, int repeats) {
  std::vector<double> out;
  Records& r = records();
  for (int i = 0; i < repeats; ++i) {
    if (between) between();
    if (cudaDeviceSynchronize() != cudaSuccess)
      throw std::runtime_error("CUDA: synchronize failed");
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    size_t first = 0;
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      first = r.kernel_ns.size();
    }
    kernel();
    if (cudaDeviceSynchronize() != cudaSuccess)
      throw std::runtime_error("CUDA: synchronize failed");
    if (const CUptiResult f = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        f != CUPTI_SUCCESS) {
      throw std::runtime_error(cupti_error(f, "cuptiActivityFlushAll"));
    }
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.kernel_ns.size() == first) {
      throw std::runtime_error("CUPTI recorded no kernel for a repeat: it cannot trace here");
    }
    uint64_t ns = 0;
    for (size_t k = first; k < r.kernel_ns.size(); ++k) ns += r.kernel_ns[k];
    out.push_back(static_cast<double>(ns) * 1e-9);
  }
  return out;
}

uint64_t CuptiTimer::dropped_records() const {
  std::lock_guard<std::mutex> lock(records().mutex);
  return records().dropped;
}

}  // namespace dtsim::calibration
