// The memory limit the CLI holds its lowerings to (--max-memory).
#include "cli/commands.h"

namespace dtsim::cli {

namespace {
std::optional<uint64_t> max_memory_bytes;
}  // namespace

void set_max_memory(std::optional<uint64_t> bytes) { max_memory_bytes = bytes; }

MemoryBudget memory_budget(const RunOutputs& outputs) {
  MemoryBudget budget;
  budget.outputs = outputs;
  if (max_memory_bytes) budget.max_bytes = static_cast<double>(*max_memory_bytes);
  return budget;
}

}  // namespace dtsim::cli
