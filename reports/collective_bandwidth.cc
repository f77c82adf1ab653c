// Bus-bandwidth factors as defined by nccl-tests.
#include "reports/collective_bandwidth.h"

namespace dtsim {

double bus_bandwidth_factor(CollectiveOp op, int ranks) {
  const double n = ranks;
  switch (op) {
    case CollectiveOp::kAllReduce: return n > 1 ? 2 * (n - 1) / n : 0;
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllGather:
    case CollectiveOp::kAllToAll: return n > 1 ? (n - 1) / n : 0;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce:
    case CollectiveOp::kSendRecv: return 1;
  }
  return 1;
}

double algorithm_bandwidth_GBps(Bytes bytes, Duration time) {
  return time.count_ns() > 0 ? bytes.as_double() / time.seconds() / 1e9 : 0;
}

}  // namespace dtsim
