// `dtsim reproduce`: run every validation scenario, compare with its published reference,
// and write docs/validation.md and docs/validation.json.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "reports/atomic_file.h"
#include "reports/validation_report.h"
#include "runner/validation_cases.h"

namespace dtsim::cli {
namespace {

struct ReproduceArgs {
  std::vector<std::string> inputs;
  std::string md;
  std::string json;
};

// Scenario files in the order given, folders expanded to their *.json files by name.
std::vector<std::string> scenario_files(const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  for (const std::string& in : inputs) {
    if (!std::filesystem::is_directory(in)) {
      out.push_back(in);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(in)) {
      if (e.is_regular_file() && e.path().extension() == ".json") found.push_back(e.path().string());
    }
    std::sort(found.begin(), found.end());
    if (found.empty()) throw std::runtime_error(in + ": no scenario (*.json) in this folder");
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

int reproduce(const ReproduceArgs& args) {
  std::vector<ValidationRow> rows;
  for (const std::string& file : scenario_files(args.inputs)) {
    rows.push_back(run_validation_case(file));
    const ValidationRow& r = rows.back();
    std::cout << fmt::format("{:<40} {:<18} reference {:>10.4g}  predicted {:>10.4g}  error {:+6.1f}%\n",
                             r.name, r.metric, r.reference, r.predicted, 100 * r.error);
  }
  std::cout << fmt::format("median |error| {:.1f}%, worst {:.1f}%\n", 100 * median_abs_error(rows),
                           100 * worst_abs_error(rows));
  std::string command = "dtsim reproduce";
  for (const std::string& in : args.inputs) command += " " + in;
  if (!args.md.empty()) command += " --md " + args.md;
  if (!args.json.empty()) command += " --json " + args.json;
  if (!args.md.empty()) write_file_atomically(args.md, validation_markdown(rows, command));
  if (!args.json.empty()) write_file_atomically(args.json, validation_json(rows).dump(2) + "\n");
  return kExitOk;
}

}  // namespace

Command add_reproduce_command(CLI::App& app) {
  auto args = std::make_shared<ReproduceArgs>();
  CLI::App* cmd = app.add_subcommand(
      "reproduce", "Run scenarios that carry a published reference and report predicted vs "
                   "reference (writes docs/validation.md and .json with --md/--json)");
  cmd->add_option("scenarios", args->inputs, "Scenario files or folders of them")->required();
  cmd->add_option("--md", args->md, "Write the Markdown report here");
  cmd->add_option("--json", args->json, "Write the JSON rows here");
  return {cmd, [args] { return reproduce(*args); }};
}

}  // namespace dtsim::cli
