// Naming the ops an op reads (Op::reads) where they are not simply the op before it.
#include <algorithm>
#include <string>

#include "models/zoo/zoo.h"
#include "sim/check.h"

namespace dtsim::models::zoo {

void read_from(Layer& layer, std::string_view op, std::initializer_list<std::string_view> inputs) {
  const auto index_of = [&](std::string_view name) {
    const auto it = std::find_if(layer.ops.begin(), layer.ops.end(),
                                 [&](const Op& o) { return o.name == name; });
    return it == layer.ops.end() ? -2 : static_cast<int>(it - layer.ops.begin());
  };
  const int reader = index_of(op);
  if (reader < 0) return;
  std::vector<int> reads;
  for (std::string_view input : inputs) {
    int from = Op::kLayerInput;
    if (input == kPrevious) {
      from = reader - 1;
    } else if (input != kInput) {
      from = index_of(input);
      DTSIM_CHECK(from >= 0, ("layer " + layer.name + ": \"" + std::string(op) +
                              "\" reads an op it lacks: \"" + std::string(input) + "\"")
                                 .c_str());
    }
    DTSIM_CHECK(
        from < reader,
        ("layer " + layer.name + ": \"" + std::string(op) + "\" reads an op after it").c_str());
    reads.push_back(from);
  }
  layer.ops[static_cast<size_t>(reader)].reads = std::move(reads);
}

}  // namespace dtsim::models::zoo
