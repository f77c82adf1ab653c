// `dtsim costs show DB`: what a cost database holds (the device it was measured on, every
// kernel with its timing and spread) and how well its sizes interpolate (one in five held
// out and predicted from the rest).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "calibration/cost_database.h"
#include "calibration/measured_collective_model.h"
#include "calibration/measured_cost_model.h"
#include "calibration/sample_stats.h"
#include "cli/commands.h"
#include "runner/cost_database_file.h"
#include "sim/unit_parse.h"

namespace dtsim::cli {
namespace {

std::string shape_of(const OpSignature& op) {
  switch (op.kind) {
    case KernelKind::kGemm:
    case KernelKind::kBatchedGemm:
    case KernelKind::kGroupedGemm:
      return fmt::format("{}x{}x{}{}{}{}", op.gemm.m, op.gemm.n, op.gemm.k,
                         op.gemm.batch > 1 ? fmt::format(" x{}", op.gemm.batch) : "",
                         op.gemm.transpose_a ? " tA" : "", op.gemm.transpose_b ? " tB" : "");
    case KernelKind::kCopy:
      return fmt::format("{:.0f} B", op.bytes);
    default:
      return fmt::format("{}x{}", op.rows, op.width);
  }
}

std::string time_text(double s) {
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}

// A measured link class: its fit, then every measured point against what the fit predicts.
void print_links(const calibration::LinkCalibration& l) {
  const calibration::LinkFit& f = l.fit;
  std::cout << fmt::format(
      "\n{} links, {} on {} ranks: {} per call + {} per hop, {} (fitted to the collectives "
      "that move data: median |error| {:.1f}%, worst {:.1f}%; reducing ones, not fitted: "
      "median |error| {:.1f}%)\n",
      l.link_class, l.library, l.ranks, format_duration(f.base), format_duration(f.hop),
      format_bandwidth(f.bandwidth), 100 * f.median_error, 100 * f.worst_error,
      100 * f.reducing_median_error);
  std::cout << fmt::format("{:<16} {:>10} {:>11} {:>11} {:>8} {:>6}\n", "collective", "bytes",
                           "measured", "fit", "error", "cv");
  for (const calibration::CollectiveMeasurement& c : l.collectives) {
    for (const calibration::CollectivePoint& p : c.points) {
      const double fit = calibration::predicted_seconds(f, c.op, l.ranks, p.bytes);
      std::cout << fmt::format(
          "{:<16} {:>10} {:>11} {:>11} {:>+7.1f}% {:>5.1f}%{}\n", collective_op_name(c.op),
          format_bytes(p.bytes), time_text(p.stats.median_s), time_text(fit),
          100 * (fit / p.stats.median_s - 1), 100 * p.stats.cv, p.noisy ? "  noisy" : "");
    }
  }
  // What `run --costs` prices these calls by: the measured points themselves.
  const auto held = calibration::collective_holdout_errors(l);
  if (held.empty()) return;
  std::vector<double> errors;
  for (const auto& h : held) errors.push_back(std::abs(h.error));
  const auto worst = std::max_element(held.begin(), held.end(), [](const auto& a, const auto& b) {
    return std::abs(a.error) < std::abs(b.error);
  });
  std::cout << fmt::format(
      "measured calls, every other inner size held out and interpolated from the rest: {} held "
      "out, median |error| {:.1f}%, worst {:+.1f}% ({} {})\n",
      held.size(), 100 * calibration::stats_of(errors).median_s, 100 * worst->error,
      collective_op_name(worst->op), format_bytes(worst->bytes));
}

int show(const std::string& path, int every) {
  const calibration::CostDatabase db = read_cost_database_file(path);
  const calibration::DeviceIdentity& d = db.device;
  std::cout << fmt::format("{}: cost database version {}, {} kernels\n", path, db.version,
                           db.entries.size());
  std::cout << fmt::format("device     {} ({} backend), prices \"{}\", measured {} with {}\n",
                           d.name, d.backend, d.catalog_name, d.measured_at, d.timer);
  if (d.backend == "cpu") {
    std::cout << fmt::format("           {} cores at {:.0f} MHz, {} BLAS thread{}, {}\n", d.cores,
                             d.clock_mhz, d.threads, d.threads == 1 ? "" : "s", d.blas);
    std::cout << (d.co_runners == 0
                      ? std::string("           each kernel timed alone on its core\n")
                      : fmt::format("           each kernel timed beside {} cop{} of itself on "
                                    "other cores (co-runners){}\n",
                                    d.co_runners, d.co_runners == 1 ? "y" : "ies",
                                    db.version >= 3 ? ", and alone (the `alone` column)" : ""));
  } else {
    std::cout << fmt::format(
        "           {} SMs at {:.0f} MHz, {:.1f} GiB, driver {}, CUDA {}, "
        "cuBLAS {}, cuDNN {}, NCCL {}\n",
        d.sm_count, d.sm_clock_mhz, static_cast<double>(d.memory_bytes) / (1 << 30), d.driver,
        d.cuda, d.cublas, d.cudnn, d.nccl);
  }
  const bool alone = std::any_of(db.entries.begin(), db.entries.end(),
                                 [](const auto& e) { return !e.alone_samples_s.empty(); });
  std::cout << fmt::format("\n{:<16} {:<16} {:<22} {:>11} {:>23} {:>6} {:>4}{}\n", "kernel", "pass",
                           "shape", "median", "p20 - p80", "cv", "n",
                           alone ? fmt::format(" {:>11}", "alone") : "");
  for (const calibration::CostEntry& e : db.entries) {
    std::cout << fmt::format(
        "{:<16} {:<16} {:<22} {:>11} {:>23} {:>5.1f}% {:>4}{}{}\n", kernel_kind_name(e.op.kind),
        op_pass_name(e.op.pass), shape_of(e.op), time_text(e.stats.median_s),
        time_text(e.stats.p20_s) + " - " + time_text(e.stats.p80_s), 100 * e.stats.cv,
        e.stats.count,
        alone ? fmt::format(" {:>11}", e.alone_samples_s.empty() ? std::string("-")
                                                                 : time_text(e.alone.median_s))
              : "",
        e.noisy ? "  noisy" : "");
  }
  for (const calibration::LinkCalibration& l : db.links) print_links(l);
  const auto held = calibration::holdout_errors(db, every);
  std::cout << fmt::format("\ninterpolation, one size in {} of each kernel family held out: ",
                           every);
  if (held.empty()) {
    std::cout << "no family has three sizes or more\n";
    return kExitOk;
  }
  std::vector<double> errors;
  for (const auto& h : held) errors.push_back(std::abs(h.error));
  // The samples' order statistics serve any values, errors as well as seconds.
  const double median = calibration::stats_of(errors).median_s;
  const auto worst = std::max_element(held.begin(), held.end(), [](const auto& a, const auto& b) {
    return std::abs(a.error) < std::abs(b.error);
  });
  std::cout << fmt::format("{} held out, median |error| {:.1f}%, worst {:+.1f}% ({} {} {})\n",
                           held.size(), 100 * median, 100 * worst->error,
                           kernel_kind_name(worst->op.kind), op_pass_name(worst->op.pass),
                           shape_of(worst->op));
  return kExitOk;
}

}  // namespace

Command add_costs_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("costs", "Inspect a cost database");
  cmd->require_subcommand(1);
  CLI::App* show_cmd = cmd->add_subcommand("show", "Print what a cost database holds");
  auto path = std::make_shared<std::string>();
  auto every = std::make_shared<int>(5);
  show_cmd->add_option("database", *path, "The cost database (dtsim calibrate --out)")->required();
  show_cmd
      ->add_option("--hold-out-every", *every,
                   "Hold out one size in this many to check the interpolation")
      ->capture_default_str()
      ->check(CLI::Range(2, 1000));
  return {cmd, [path, every] { return show(*path, *every); }};
}

}  // namespace dtsim::cli
