// Cost sources' names and the tally of a step's ops by source.
#include "sim/cost_model.h"

namespace dtsim {

std::string_view cost_source_name(CostSource s) {
  switch (s) {
    case CostSource::kMeasured:
      return "measured";
    case CostSource::kInterpolated:
      return "interpolated";
    case CostSource::kExtrapolated:
      return "extrapolated";
    case CostSource::kRoofline:
      return "roofline";
  }
  return "?";
}

void CostTally::add(const CostTally& other, int64_t times) {
  const auto add_share = [times](Share& into, const Share& from) {
    into.ops += from.ops * times;
    into.time += Duration::ns(from.time.count_ns() * times);
  };
  for (size_t i = 0; i < by_source.size(); ++i) add_share(by_source[i], other.by_source[i]);
  add_share(launches, other.launches);
  add_share(given, other.given);
}

}  // namespace dtsim
