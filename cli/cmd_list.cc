// `dtsim list devices|networks|collectives|models|schedules`: the registries, with one-line descriptions.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "models/model_spec.h"
#include "models/schedule.h"
#include "sim/collectives/planner.h"
#include "sim/device_catalog.h"
#include "sim/network_model.h"
#include "sim/unit_parse.h"

namespace dtsim::cli {
namespace {

void list_devices() {
  // gemm and mem: the fractions of peak FLOPs and memory bandwidth the roofline cost model
  // lets large GEMMs and memory-bound kernels reach; sust: the fraction of its compute rates
  // the device sustains through a training run (sustained_compute_fraction).
  std::cout << fmt::format(
      "{:<11} {:>8} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>5} {:>5} {:>5}  {}\n", "name",
      "memory", "mem bw", "nvlink", "pcie", "fp32", "bf16/fp16", "fp8", "gemm", "sust", "mem",
      "description");
  for (const DeviceSpec& d : builtin_devices()) {
    const FlopRate half = std::max(d.peak_for(DType::kBf16), d.peak_for(DType::kFp16));
    auto tflops = [](FlopRate r) {
      return r.flops_per_second() > 0 ? fmt::format("{:.1f}T", r.flops_per_second() / 1e12)
                                      : std::string("-");
    };
    auto percent = [](double fraction) { return fmt::format("{:.0f}%", fraction * 100); };
    std::cout << fmt::format(
        "{:<11} {:>8} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>5} {:>5} {:>5}  {}\n", d.name,
        format_bytes(d.memory_capacity), format_bandwidth(d.memory_bandwidth),
        d.intra_node_bandwidth.bytes_per_second() > 0 ? format_bandwidth(d.intra_node_bandwidth) : "-",
        format_bandwidth(d.pcie_bandwidth), tflops(d.peak_for(DType::kFp32)), tflops(half),
        tflops(d.peak_for(DType::kFp8)), percent(d.efficiency.gemm_max),
        percent(d.efficiency.sustained_compute_fraction),
        percent(d.efficiency.memory_bandwidth_fraction), d.description);
  }
}

void list_networks() {
  for (const auto& n : network_models()) {
    std::cout << fmt::format("{:<12} {}\n", n.name, n.description);
  }
}

void list_collectives() {
  std::cout << "operations and their algorithms:\n";
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter,
                          CollectiveOp::kAllGather, CollectiveOp::kBroadcast, CollectiveOp::kReduce,
                          CollectiveOp::kAllToAll, CollectiveOp::kSendRecv}) {
    std::string algos = "auto";
    for (CollectiveAlgorithm a : algorithms_for(op)) algos += ", " + std::string(algorithm_name(a));
    std::cout << fmt::format("  {:<15} {}\n", collective_op_name(op), algos);
  }
  std::cout << "\nalgorithms:\n";
  for (CollectiveAlgorithm a : kAllCollectiveAlgorithms) {
    std::cout << fmt::format("  {:<17} {}\n", algorithm_name(a), algorithm_description(a));
  }
}

void list_models() {
  std::cout << fmt::format("{:<16} {:<10} {:>10}  {}\n", "name", "family", "layers", "description");
  for (const models::ModelPreset& p : models::model_presets()) {
    std::cout << fmt::format("{:<16} {:<10} {:>10}  {}\n", p.name,
                             models::model_family_name(p.spec.family), p.spec.layers, p.description);
  }
}

void list_schedules() {
  for (models::PipelineSchedule s : models::kAllSchedules) {
    std::cout << fmt::format("{:<18} {}\n", models::schedule_name(s), models::schedule_description(s));
  }
}

}  // namespace

Command add_list_command(CLI::App& app) {
  auto what = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("list", "List registered devices, network models, collectives, model presets or pipeline schedules");
  cmd->add_option("what", *what, "devices | networks | collectives | models | schedules")
      ->required()
      ->check(CLI::IsMember({"devices", "networks", "collectives", "models", "schedules"}));
  return {cmd, [what] {
            if (*what == "devices") list_devices();
            if (*what == "networks") list_networks();
            if (*what == "collectives") list_collectives();
            if (*what == "models") list_models();
            if (*what == "schedules") list_schedules();
            return kExitOk;
          }};
}

}  // namespace dtsim::cli
