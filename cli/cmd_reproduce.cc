// `dtsim reproduce`: run every validation scenario, compare with its published reference,
// and write docs/validation.md and docs/validation.json.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "cli/commands.h"
#include "reports/atomic_file.h"
#include "reports/validation_report.h"
#include "runner/memory_admission.h"
#include "runner/parallel_points.h"
#include "runner/validation_cases.h"
#include "scenarios/loader.h"

namespace dtsim::cli {
namespace {

struct ReproduceArgs {
  std::vector<std::string> inputs;
  std::string md;
  std::string json;
  unsigned jobs = 0;
};

// What one case gave: its row, or why it has none.
struct CaseOutcome {
  std::vector<ValidationRow> rows;
  std::string skipped;  // no reference block
  std::string failure;
  bool bad_input = false;
};

CaseOutcome run_case(const std::string& file, uint64_t& peak) {
  CaseOutcome out;
  try {
    out.rows = run_validation_case(file, &peak);
  } catch (const NoReference& e) {
    out.skipped = e.what();
  } catch (const InputError& e) {
    for (const std::string& m : e.messages()) out.failure += (out.failure.empty() ? "" : "; ") + m;
    out.bad_input = true;
  } catch (const std::bad_alloc&) {
    out.failure = file + ": out of memory";
  } catch (const std::exception& e) {
    out.failure = e.what();
  }
  return out;
}

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
  const std::vector<std::string> files = scenario_files(args.inputs);
  // The largest cases first: the first runs alone and measures what a case takes, and the
  // long ones do not end up last on one core.
  std::vector<int> ranks(files.size(), 0);
  for (size_t i = 0; i < files.size(); ++i) {
    try {
      ranks[i] = load_scenario_file(files[i]).cluster.num_ranks();
    } catch (const std::exception&) {
      // The case's own run reports it.
    }
  }
  std::vector<size_t> order(files.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ranks[a] > ranks[b]; });

  std::vector<CaseOutcome> outcomes(files.size());
  MemoryAdmission admission;
  std::mutex progress;
  size_t finished = 0;
  const auto start = std::chrono::steady_clock::now();
  run_points_in_parallel(files.size(), args.jobs, [&](size_t k) {
    const size_t i = order[k];
    const uint64_t at_admission = admission.admit();
    uint64_t peak = at_admission;
    const auto t0 = std::chrono::steady_clock::now();
    outcomes[i] = run_case(files[i], peak);
    admission.release(at_admission, peak);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard lock(progress);
    const CaseOutcome& o = outcomes[i];
    std::cerr << fmt::format("[{}/{}] {} {:.1f} s{}\n", ++finished, files.size(), files[i], seconds,
                             !o.skipped.empty()   ? " (skipped: no reference)"
                             : !o.failure.empty() ? " (failed)"
                                                  : "");
  });

  // The rows in the order of the files, whatever order the jobs finished in.
  std::vector<ValidationRow> rows;
  size_t failed = 0, invalid = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const CaseOutcome& o = outcomes[i];
    rows.insert(rows.end(), o.rows.begin(), o.rows.end());
    if (!o.skipped.empty()) std::cout << "skipped " << files[i] << ": no \"reference\" block\n";
    if (!o.failure.empty()) {
      std::cerr << "error: " << o.failure << "\n";
      ++failed;
      invalid += o.bad_input ? 1 : 0;
    }
  }
  std::vector<ValidationRow> training;
  for (const ValidationRow& r : rows) {
    const std::string name = r.collective() ? fmt::format("{} @ {} B", r.name, r.bytes) : r.name;
    std::cout << fmt::format(
        "{:<40} {:<18} reference {:>10.4g}  predicted {:>10.4g}  error {:+6.1f}%{}\n", name,
        r.metric, r.reference, r.predicted, 100 * r.error,
        r.stack_modelled ? "" : "  (legacy stack)");
    if (!r.collective() && r.stack_modelled) training.push_back(r);
  }
  if (!training.empty()) {
    std::cout << fmt::format(
        "training cases whose stack is modelled: median |error| {:.1f}%, worst {:.1f}%, mean "
        "{:+.1f}%\n",
        100 * median_abs_error(training), 100 * worst_abs_error(training),
        100 * mean_error(training));
  }
  std::cerr << fmt::format(
      "{} case(s) in {:.1f} s on {} job(s)\n", files.size(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
      parallel_jobs(args.jobs, files.size()));
  if (failed > 0) {
    // A report without a failed case would read as complete: none is written.
    std::cerr << failed << " case(s) failed; no report was written\n";
    return invalid == failed ? kExitBadInput : kExitFailure;
  }
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
  cmd->add_option("--jobs,-j", args->jobs,
                  "Cases run at once (default: one per core; a case starts only when the "
                  "memory the largest case so far took is available)");
  return {cmd, [args] { return reproduce(*args); }};
}

}  // namespace dtsim::cli
