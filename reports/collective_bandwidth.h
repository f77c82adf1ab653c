// nccl-tests' bandwidth definitions: algorithm bandwidth and bus bandwidth.
#pragma once

#include "sim/collectives/collective_plan.h"
#include "sim/units.h"

namespace dtsim {

// algbw = size / time. busbw = algbw times the factor that makes it comparable to the
// hardware's link bandwidth (nccl-tests doc/PERFORMANCE.md): 2(n-1)/n for all-reduce,
// (n-1)/n for reduce-scatter, all-gather and all-to-all, 1 for the rest.
double bus_bandwidth_factor(CollectiveOp op, int ranks);
double algorithm_bandwidth_GBps(Bytes bytes, Duration time);

}  // namespace dtsim
