// libFuzzer target: a lowered-graph file (what `dtsim lower` writes and a task-graph
// scenario's graph_file reads) through the reader and the graph's validation.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "scenarios/lowered_graph_reader.h"
#include "sim/task_graph.h"
#include "tests/fuzz/fuzz_outcome.h"

namespace {

// The reader takes its rank count from the cluster; here from the header's "ranks" when it
// is a small positive integer (so that seeds of any size read through), else 4.
int ranks_for(const std::string& text) {
  const std::string first_line = text.substr(0, text.find('\n'));
  const nlohmann::json header = nlohmann::json::parse(first_line, nullptr, false);
  if (header.is_object() && header.contains("ranks") && header["ranks"].is_number_integer()) {
    const int64_t ranks = header["ranks"].get<int64_t>();
    if (ranks >= 1 && ranks <= 256) return static_cast<int>(ranks);
  }
  return 4;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dtsim::fuzz::expect_clean_outcome([&] {
    const int ranks = ranks_for(text);
    std::istringstream in(text);
    std::string error;
    const std::optional<dtsim::TaskGraph> graph = dtsim::read_lowered_graph(in, ranks, error);
    if (graph) (void)graph->validate(ranks);
  });
  return 0;
}
