// The dtsim subcommands. Each registers its options on a CLI11 subcommand and returns the
// process exit code: 0 success, 2 bad input, 1 any other failure.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "runner/memory_estimate.h"

namespace dtsim::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

using Action = std::function<int()>;
struct Command {
  CLI::App* app;
  Action action;
};

Command add_run_command(CLI::App& app);
Command add_check_command(CLI::App& app);
Command add_lower_command(CLI::App& app);
Command add_list_command(CLI::App& app);
Command add_sweep_command(CLI::App& app);
Command add_reproduce_command(CLI::App& app);
Command add_calibrate_command(CLI::App& app);
Command add_costs_command(CLI::App& app);
Command add_plans_command(CLI::App& app);

Command add_validate_command(CLI::App& app);

// The scenario name as a single folder name: separators and leading dots replaced, so a
// name like "../x" cannot place outputs outside dtsim-out/.
std::string folder_name(std::string name);
// A program installed beside the dtsim executable (dtsim-comm-probe, dtsim-rank).
std::filesystem::path beside_dtsim(std::string_view program);

// The global --max-memory option: every lowering is held to it (none: to the machine's
// available memory). memory_budget says what else the command keeps (runner/memory_estimate.h).
void set_max_memory(std::optional<uint64_t> bytes);
MemoryBudget memory_budget(const RunOutputs& outputs = {});

// Prints a ScenarioError's lines (or any exception) to stderr; returns the exit code.
int report_error(const std::exception& e);

}  // namespace dtsim::cli
