// `dtsim calibrate`: time this machine's real kernels for a scenario's step (or a grid of
// ops) and write the cost database that `dtsim run --costs` predicts with.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "calibration/calibrate.h"
#include "calibration/collective_probe.h"
#include "calibration/cost_key.h"
#include "calibration/cost_database.h"
#include "cli/commands.h"
#include "cli/run_session.h"
#include "kernels/cuda_backend.h"
#include "kernels/kernel.h"
#include "models/op_signature_json.h"
#include "reports/atomic_file.h"
#include "runner/scenario_runner.h"
#include "scenarios/loader.h"
#include "sim/device_catalog.h"
#include "sim/input_error.h"
#include "sim/unit_parse.h"

namespace dtsim::cli {
namespace {

struct CalibrateArgs {
  std::string backend = "cpu";
  std::vector<std::string> scenarios;
  std::optional<std::string> ops_file;
  std::optional<std::string> budget;
  std::optional<std::string> device;
  int threads = 1;
  std::optional<int> co_runners;
  bool collectives = false;
  int ranks = 2;
  std::string max_message = "64MiB";
  std::string out;
  bool quiet = false;
};

// A JSON array of op signatures (the lowered-graph file's form), GEMMs with their n + 1,
// m + 1 and k + 1 neighbours.
std::vector<OpSignature> read_ops_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, {{"", "cannot read the file"}});
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path, {{"", std::string("not a JSON document: ") + e.what()}});
  }
  if (!doc.is_array() || doc.empty()) {
    throw InputError(path, {{"", "expected a non-empty array of op signatures"}});
  }
  std::vector<OpSignature> ops;
  for (size_t i = 0; i < doc.size(); ++i) {
    try {
      ops.push_back(models::op_signature_from_json(doc[i]));
    } catch (const std::invalid_argument& e) {
      throw InputError(path, {{"/" + std::to_string(i), e.what()}});
    }
  }
  return calibration::with_gemm_neighbours(ops);
}

// The catalog device a GPU is: the longest catalog name its own name contains ("NVIDIA
// H200" is H200), or the one --device names.
std::string gpu_catalog_name(const std::optional<std::string>& device) {
  if (device) return *device;
  const std::string gpu = kernels::cuda_device_info().name;
  std::string best;
  for (const DeviceSpec& d : builtin_devices()) {
    if (gpu.find(d.name) != std::string::npos && d.name.size() > best.size()) best = d.name;
  }
  if (best.empty()) {
    throw InputError("--device",
                     {{"", "the GPU \"" + gpu +
                               "\" is none of the catalog's devices (`dtsim list "
                               "devices`): name the device spec it prices with --device"}});
  }
  return best;
}

calibration::LinkCalibration calibrate_links(const CalibrateArgs& args, const RunSession& session) {
  calibration::CollectiveProbeOptions o;
  o.probe = beside_dtsim("dtsim-comm-probe");
  o.ranks = args.ranks;
  const auto max = parse_bytes(args.max_message);
  if (!max.value || max.value->count() < o.min_bytes.count()) {
    throw InputError("--max-message",
                     {{"", "expected a size of at least 4KiB such as \"64MiB\", got \"" +
                               args.max_message + "\""}});
  }
  o.max_bytes = *max.value;
  o.stop = session.control().stop;
  return calibration::measure_collectives(o);
}

int calibrate(const CalibrateArgs& args) {
  const bool cuda = args.backend == "cuda";
  if (cuda && !kernels::cuda_built()) {
    throw InputError("--backend cuda", {{"",
                                         "this dtsim was configured without a CUDA toolkit; "
                                         "use --backend cpu, or rebuild where nvcc and CUPTI "
                                         "are installed"}});
  }
  if (cuda && kernels::cuda_device_count() == 0) {
    throw std::runtime_error("--backend cuda: no CUDA device found (the CUDA runtime sees none)");
  }
  if (args.scenarios.empty() && !args.ops_file && !args.collectives) {
    throw InputError("dtsim calibrate", {{"",
                                          "name what to measure: --for SCENARIO, --ops FILE "
                                          "or --collectives"}});
  }
  if (cuda && args.collectives) {
    throw InputError("--collectives", {{"",
                                        "collectives are measured over MPI on the CPU "
                                        "backend; NCCL calibration is not built yet"}});
  }
  std::optional<Duration> budget;
  if (args.budget) {
    const auto parsed = parse_duration(*args.budget);
    if (!parsed.value || *parsed.value <= Duration::zero()) {
      throw InputError("--budget", {{"", "expected a positive duration such as \"10min\", got \"" +
                                             *args.budget + "\""}});
    }
    budget = *parsed.value;
  }
  kernels::set_cpu_threads(args.threads);
  RunSession session(!args.quiet);
  std::vector<OpSignature> ops;
  // The most ranks a scenario puts on one node: they compute at once on its CPU.
  int ranks_per_node = 1;
  // Each scenario's distinct kernels, once each (the sweep measures a kernel once per key).
  for (const std::string& path : args.scenarios) {
    Scenario scenario = load_scenario_file(path);
    for (const RegionSpec& region : scenario.cluster_spec.regions) {
      for (const NodeGroupSpec& group : region.node_groups)
        ranks_per_node = std::max(ranks_per_node, group.devices_per_node);
    }
    // The kernels do not depend on their prices: the roofline lowers the step.
    const LoweredScenario lowered = lower_with_chosen_costs(scenario, {}, session.control(),
                                                            memory_budget({.simulate = false}));
    if (lowered.cancelled || session.interrupted())
      return session.report_interrupted("calibration");
    for (const OpSignature& op : calibration::distinct_kernels(lowered.graph)) ops.push_back(op);
    if (lowered.local_graph) {
      for (const OpSignature& op : calibration::distinct_kernels(*lowered.local_graph))
        ops.push_back(op);
    }
  }
  if (args.ops_file) {
    for (const OpSignature& op : read_ops_file(*args.ops_file)) ops.push_back(op);
  }
  // A kernel that two scenarios (or a scenario and the ops file) share is measured once.
  std::set<std::string> seen;
  std::erase_if(
      ops, [&](const OpSignature& op) { return !seen.insert(calibration::cost_key(op)).second; });
  calibration::SweepOptions options;
  options.budget = budget;
  options.control = session.control();
  std::string co_runner_note;
  if (cuda && args.co_runners) {
    throw InputError("--co-runners", {{"",
                                       "co-runners share a CPU's cores; a GPU runs one kernel "
                                       "timeline of its own (use --backend cpu)"}});
  }
  if (!cuda) {
    // By default each kernel is timed beside as many copies as the scenario puts other ranks
    // on its node, as many as this machine has other cores for.
    const int spare = std::max(calibration::usable_cores() - 1, 0);
    if (args.co_runners && *args.co_runners > 0 && args.threads > 1) {
      throw InputError("--co-runners", {{"",
                                         "co-runners time one BLAS thread per core, as the "
                                         "executor's ranks run; with --threads above 1 the "
                                         "kernels would share the BLAS's thread pool: use "
                                         "--co-runners 0"}});
    }
    if (args.co_runners && *args.co_runners > spare) {
      throw InputError("--co-runners",
                       {{"", fmt::format("expected at most {} (this process may use {} cores, "
                                         "one for the timed kernel), got {}",
                                         spare, spare + 1, *args.co_runners)}});
    }
    options.co_runners =
        args.co_runners.value_or(args.threads > 1 ? 0 : std::min(ranks_per_node - 1, spare));
    if (!args.co_runners && ranks_per_node - 1 > spare) {
      co_runner_note = fmt::format(
          "note: the scenario puts {} ranks on a node and this machine has {} cores: each "
          "kernel was timed beside {} co-runner{}, not {}\n",
          ranks_per_node, spare + 1, spare, spare == 1 ? "" : "s", ranks_per_node - 1);
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const calibration::SweepResult r =
      cuda ? calibration::sweep_cuda(ops, calibration::cuda_identity(gpu_catalog_name(args.device)),
                                     options)
           : calibration::sweep_cpu(ops, calibration::cpu_identity(args.device.value_or("CPU")),
                                    options);
  if (r.cancelled || session.interrupted()) return session.report_interrupted("calibration");
  calibration::CostDatabase db = r.db;
  if (args.collectives) {
    calibration::LinkCalibration links = calibrate_links(args, session);
    if (session.interrupted() || links.ranks == 0) return session.report_interrupted("calibration");
    db.links.push_back(std::move(links));
  }
  session.finish();
  write_file_atomically(args.out, calibration::cost_database_to_json(db).dump(1) + "\n");
  if (!args.quiet) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const calibration::DeviceIdentity& d = r.db.device;
    const std::string how =
        cuda ? fmt::format("{} SMs, CUDA {}, timed by CUPTI", d.sm_count, d.cuda)
             : fmt::format("{} thread{}, {}", d.threads, d.threads == 1 ? "" : "s", d.blas);
    std::cout << fmt::format("wrote {}: {} kernels measured on {} ({}) in {:.1f} s", args.out,
                             r.db.entries.size(), d.name, how, seconds);
    if (r.noisy > 0) std::cout << fmt::format(", {} of them noisy (spread above 5%)", r.noisy);
    std::cout << "\n";
    if (r.unmeasured > 0) {
      std::cout << fmt::format(
          "budget reached: {} kernels left unmeasured (the roofline prices them)\n", r.unmeasured);
    }
    if (r.db.device.co_runners > 0) {
      std::cout << fmt::format("each kernel timed beside {} co-runner{} on the other cores\n",
                               r.db.device.co_runners, r.db.device.co_runners == 1 ? "" : "s");
    }
    std::cout << co_runner_note;
    for (const std::string& why : r.refused) std::cout << "not measured: " << why << "\n";
    for (const calibration::LinkCalibration& l : db.links) {
      std::cout << fmt::format(
          "{} links over {} on {} ranks: {} per call + {} per hop, {} (fitted to the "
          "collectives that move data: median |error| {:.1f}%, worst {:.1f}%; the reducing "
          "ones are {:.1f}% off, their arithmetic); inter-node links keep the catalog's "
          "figures (one machine cannot measure them)\n",
          l.link_class, l.library, l.ranks, format_duration(l.fit.base), format_duration(l.fit.hop),
          format_bandwidth(l.fit.bandwidth), 100 * l.fit.median_error, 100 * l.fit.worst_error,
          100 * l.fit.reducing_median_error);
    }
  }
  return kExitOk;
}

}  // namespace

Command add_calibrate_command(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Time real kernels on this machine into a cost database for `dtsim run --costs`");
  cmd->add_option("--backend", args->backend, "cpu (OpenBLAS and dtsim's CPU kernels) or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--for", args->scenarios,
                  "Measure the distinct kernels of this scenario's step (repeatable: every "
                  "scenario's into one database)");
  cmd->add_option("--ops", args->ops_file,
                  "Measure the op signatures of this JSON array (GEMMs with their +1 neighbours)");
  cmd->add_option("--budget", args->budget,
                  "Stop measuring after this long (\"10min\"), keeping what was measured");
  cmd->add_option("--device", args->device,
                  "The device spec the database prices (`dtsim list devices`; default CPU, or "
                  "the catalog device the GPU's name names)");
  cmd->add_option("--threads", args->threads, "BLAS threads (one per rank, as the executor runs)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--co-runners", args->co_runners,
                  "CPU: run each timed kernel beside this many copies of itself on other cores, "
                  "as a step's other ranks on the same CPU run theirs (default: the scenario's "
                  "ranks per node - 1, within this machine's cores; 0 with --ops alone)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--collectives", args->collectives,
                "Also time all-reduce, reduce-scatter, all-gather, all-to-all, broadcast and "
                "send/recv over MPI and fit the intra-node link to them");
  cmd->add_option("--ranks", args->ranks, "MPI ranks for --collectives, one per core")
      ->capture_default_str()
      ->check(CLI::Range(2, 1024));
  cmd->add_option("--max-message", args->max_message,
                  "The largest message --collectives times (from 4KiB, doubling)")
      ->capture_default_str();
  cmd->add_option("--out", args->out, "The cost database to write")->required();
  cmd->add_flag("--quiet", args->quiet, "Print nothing on success (and no progress bar)");
  return {cmd, [args] { return calibrate(*args); }};
}

}  // namespace dtsim::cli
