// Summary construction (JSON) and its text rendering.
#include "reports/summary.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include <fmt/format.h>

#include "reports/collective_bandwidth.h"
#include "reports/training_summary.h"
#include "sim/maxmin_counts.h"
#include "sim/unit_parse.h"

namespace dtsim {

nlohmann::ordered_json cost_sources_json(const CostTally& t) {
  const double given = t.given.time.seconds();
  double total = t.launches.time.seconds() + given;
  for (CostSource src : kAllCostSources) total += t.of(src).time.seconds();
  const auto share = [total](double seconds) { return total > 0 ? seconds / total : 0.0; };
  nlohmann::ordered_json out;
  for (CostSource src : kAllCostSources) {
    const CostTally::Share& x = t.of(src);
    out[std::string(cost_source_name(src))] = {
        {"ops", x.ops}, {"time_s", x.time.seconds()}, {"share", share(x.time.seconds())}};
  }
  out["kernel_launch"] = {{"ops", t.launches.ops},
                          {"time_s", t.launches.time.seconds()},
                          {"share", share(t.launches.time.seconds())}};
  out["given"] = {{"tasks", t.given.ops}, {"time_s", given}, {"share", share(given)}};
  return out;
}

nlohmann::ordered_json make_summary(const LoweredScenario& scenario, const ScenarioRun& run,
                                    const SummaryOptions& options) {
  const RunResult& r = run.result;
  const Cluster& c = scenario.cluster_ref();
  nlohmann::ordered_json s;
  s["scenario"] = scenario.name;
  s["source"] = scenario.source;
  s["network_model"] = scenario.network_model;
  s["simulated_time_s"] = r.end.seconds();
  if (run.local_step) {
    // Local SGD: simulated_time_s is the synchronizing step's; the mean weighs both.
    s["local_sgd"] = {{"sync_every", scenario.sync_every},
                      {"sync_step_s", r.end.seconds()},
                      {"local_step_s", run.local_step->end.seconds()},
                      {"mean_iteration_s", mean_iteration_seconds(scenario, run)}};
  }
  if (options.include_wall_time) s["wall_time_s"] = run.wall_time_s;
  s["events"] = r.events;
  // The step's simulation and a local-SGD run's local step, as the solver's counts below.
  const RunResult* local = run.local_step ? &*run.local_step : nullptr;
  s["fast_forwarded_rounds"] = r.fast_forwarded_rounds + (local ? local->fast_forwarded_rounds : 0);
  s["replayed_phases"] = r.replayed_phases + (local ? local->replayed_phases : 0);
  if (r.max_min) {
    // The step's simulation and a local-SGD run's local step (a batch-size schedule's
    // other phases keep only their step times).
    MaxMinSolveCounts m = *r.max_min;
    if (local && local->max_min) m += *local->max_min;
    s["flow_solver"] = {{"solves", m.solves},
                        {"settled_in_place", m.without_filling},
                        {"affected_sets", m.affected_sets},
                        {"whole_components", m.components},
                        {"whole_components_after_a_set", m.affected_sets_given_up},
                        {"whole_component_flows", m.component_variables}};
  }
  s["cluster"] = {{"ranks", c.num_ranks()},
                  {"nodes", c.nodes.size()},
                  {"regions", c.regions.size()},
                  {"vertices", c.topology.num_vertices()},
                  {"links", c.topology.num_links()}};
  s["tasks"] = scenario.graph.tasks().size();
  s["cost_model"] = scenario.cost_model;
  s["cost_sources"] = cost_sources_json(scenario.costs);
  if (!scenario.measured_links.empty()) {
    // Links not listed keep the catalog's figures.
    auto links = nlohmann::ordered_json::array();
    for (const MeasuredLinkClass& l : scenario.measured_links) {
      links.push_back({{"device", l.device},
                       {"class", l.link_class},
                       {"library", l.library},
                       {"ranks", l.ranks},
                       {"base_s", l.base.seconds()},
                       {"hop_s", l.hop.seconds()},
                       {"bandwidth_bytes_per_s", l.bandwidth.bytes_per_second()},
                       {"fit_median_error", l.median_error},
                       {"fit_worst_error", l.worst_error}});
    }
    s["measured_links"] = links;
    // The calls the database's measurements priced, and those the network model ran.
    nlohmann::ordered_json sources;
    for (CostSource src :
         {CostSource::kMeasured, CostSource::kInterpolated, CostSource::kExtrapolated}) {
      sources[std::string(cost_source_name(src))] = r.priced_collectives[static_cast<size_t>(src)];
    }
    sources["network_model"] = r.network_collectives;
    s["collective_sources"] = sources;
  }
  s["completed"] = r.stalled.empty() && !r.cancelled;
  if (r.cancelled) s["cancelled"] = true;
  if (!r.stalled.empty()) s["stalled"] = r.stalled;

  if (scenario.training) {
    s["training"] = make_training_summary(scenario, run);
    if (scenario.reference)
      s["reference"] = make_reference_summary(*scenario.reference, s["training"]);
  }
  auto collectives = nlohmann::ordered_json::array();
  // A training step runs thousands of calls: list them by operation instead.
  if (scenario.training) {
    std::map<std::tuple<std::string, std::string, int>, std::tuple<int64_t, double, double>> by_op;
    for (const CollectiveRecord& rec : r.collectives) {
      auto& [count, bytes, time] = by_op[{std::string(collective_op_name(rec.op)),
                                          std::string(algorithm_name(rec.algorithm)), rec.ranks}];
      count += rec.calls;
      bytes += static_cast<double>(rec.bytes.count());
      time += (rec.end - rec.start).seconds();
    }
    for (const auto& [key, value] : by_op) {
      collectives.push_back({{"op", std::get<0>(key)},
                             {"algorithm", std::get<1>(key)},
                             {"ranks", std::get<2>(key)},
                             {"calls", std::get<0>(value)},
                             {"bytes", std::get<1>(value)},
                             {"time_s", std::get<2>(value)}});
    }
    s["collective_calls"] = std::move(collectives);
  }
  for (const CollectiveRecord& rec : r.collectives) {
    if (scenario.training) break;
    const Duration t = rec.end - rec.start;
    const double algbw = algorithm_bandwidth_GBps(rec.bytes, t);
    collectives.push_back({{"label", rec.label},
                           {"op", collective_op_name(rec.op)},
                           {"algorithm", algorithm_name(rec.algorithm)},
                           {"bytes", rec.bytes.count()},
                           {"ranks", rec.ranks},
                           {"steps", rec.steps},
                           {"time_s", t.seconds()},
                           {"algbw_GBps", algbw},
                           {"busbw_GBps", algbw * bus_bandwidth_factor(rec.op, rec.ranks)}});
  }
  if (!scenario.training) s["collectives"] = std::move(collectives);

  // Busiest links by mean utilisation over the run.
  std::vector<LinkId> used;
  for (LinkId l = 0; l < run.links.size(); ++l) {
    if (run.links[l].bytes > 0) used.push_back(l);
  }
  const double span = r.end.seconds();
  auto mean_util = [&](LinkId l) {
    return span > 0 ? run.links[l].bytes / (c.topology.link(l).bandwidth.bytes_per_second() * span)
                    : 0;
  };
  std::stable_sort(used.begin(), used.end(),
                   [&](LinkId a, LinkId b) { return mean_util(a) > mean_util(b); });
  auto busiest = nlohmann::ordered_json::array();
  for (size_t i = 0; i < used.size() && i < static_cast<size_t>(options.busiest_links); ++i) {
    const LinkId l = used[i];
    busiest.push_back({{"link", c.topology.link_name(l)},
                       {"bytes", run.links[l].bytes},
                       {"busy_s", run.links[l].busy.seconds()},
                       {"mean_utilization", mean_util(l)},
                       {"peak_utilization", run.links[l].peak_utilization}});
  }
  s["links_used"] = used.size();
  s["busiest_links"] = std::move(busiest);

  auto overflows = nlohmann::ordered_json::array();
  const auto add_overflows = [&](const RunResult& result, const TaskGraph& graph,
                                 std::string_view step) {
    for (const MemoryOverflowRecord& m : result.memory_overflows) {
      nlohmann::ordered_json o{{"rank", m.rank},
                               {"task", graph.task(m.task).name},
                               {"in_use_bytes", m.in_use.count()},
                               {"capacity_bytes", m.capacity.count()},
                               {"over_by_bytes", (m.in_use - m.capacity).count()},
                               {"at_s", m.at.seconds()}};
      if (!step.empty()) o["step"] = step;
      overflows.push_back(std::move(o));
    }
  };
  // With local SGD both kinds of step are simulated; each overflow says which.
  const bool local_sgd = run.local_step && scenario.local_graph;
  add_overflows(r, scenario.graph, local_sgd ? "sync" : "");
  if (local_sgd) add_overflows(*run.local_step, *scenario.local_graph, "local");
  s["memory_overflows"] = std::move(overflows);
  return s;
}

namespace {

std::string format_training_text(const nlohmann::ordered_json& s) {
  const auto& t = s["training"];
  const auto& p = t["plan"];
  std::string out = "\n";
  out += fmt::format("model           {} ({:.3g} B parameters), {}, recompute {}\n",
                     t["model"].get<std::string>(), t["parameters"].get<double>() / 1e9,
                     t["precision"].get<std::string>(), t["recompute"].get<std::string>());
  out += fmt::format(
      "plan            dp {} x tp {} x pp {} x cp {}, ep {}{}, {} (v {}), ZeRO {}{}\n",
      p["dp"].get<int>(), p["tp"].get<int>(), p["pp"].get<int>(), p["cp"].get<int>(),
      p["ep"].get<int>(),
      // Expert tensor parallelism, where it is not the tensor-parallel size.
      p.value("etp", p["tp"].get<int>()) != p["tp"].get<int>()
          ? fmt::format(" (expert tp {})", p["etp"].get<int>())
          : "",
      p["schedule"].get<std::string>(), p["virtual_stages"].get<int>(), p["zero_stage"].get<int>(),
      // Sequence parallelism shards along the tensor-parallel group: none at tp 1.
      p["sequence_parallel"].get<bool>() && p["tp"].get<int>() > 1 ? ", sequence parallel" : "");
  const int micro_batches = t["micro_batches"].get<int>();
  out += fmt::format("batch           {} samples, {} micro-batch{} per replica\n",
                     t["samples_per_iteration"].get<int64_t>(), micro_batches,
                     micro_batches == 1 ? "" : "es");
  out += fmt::format("iteration       {}",
                     format_duration(Duration::from_seconds(t["iteration_time_s"].get<double>())));
  if (t.contains("local_iteration_time_s")) {
    out += fmt::format(
        " (local steps {}, the synchronizing step every {} {})",
        format_duration(Duration::from_seconds(t["local_iteration_time_s"].get<double>())),
        p["sync_every"].get<int>(),
        format_duration(Duration::from_seconds(t["sync_iteration_time_s"].get<double>())));
  }
  out += "\n";
  out += fmt::format("throughput      {:.1f} samples/s, {:.0f} tokens/s\n",
                     t["samples_per_s"].get<double>(), t["tokens_per_s"].get<double>());
  out += fmt::format("model FLOPs     {:.1f} TFLOPS per device, MFU {:.1f}%\n",
                     t["achieved_tflops_per_device"].get<double>(), 100 * t["mfu"].get<double>());
  if (!t["time_to_train_s"].is_null()) {
    out += fmt::format("time to train   {:.2f} h ({:.0f} iterations)\n",
                       t["time_to_train_s"].get<double>() / 3600,
                       t["iterations_to_train"].get<double>());
  }
  out += fmt::format(
      "per rank (max)  compute {}, exposed comm {}, bubble {}, memory {}\n",
      format_duration(Duration::from_seconds(t["max_compute_s"].get<double>())),
      format_duration(Duration::from_seconds(t["max_exposed_comm_s"].get<double>())),
      format_duration(Duration::from_seconds(t["max_bubble_s"].get<double>())),
      format_bytes(Bytes(static_cast<int64_t>(t["max_peak_memory_bytes"].get<double>()))));
  for (const auto& note : t["notes"]) out += "note            " + note.get<std::string>() + "\n";
  if (t["oom_ranks"].get<int>() > 0) {
    out += fmt::format("OUT OF MEMORY   {} ranks exceed their memory (see below)\n",
                       t["oom_ranks"].get<int>());
  }
  if (s.contains("reference")) {
    const auto& r = s["reference"];
    out += fmt::format("reference       {} = {:.4g} ({})\n", r["metric"].get<std::string>(),
                       r["reference"].get<double>(), r["source"].get<std::string>());
    if (!r["predicted"].is_null()) {
      out += fmt::format("predicted       {:.4g}, error {:+.1f}%\n", r["predicted"].get<double>(),
                         100 * r["error"].get<double>());
    }
  }
  return out;
}

}  // namespace

std::string format_summary_text(const nlohmann::ordered_json& s) {
  std::string out;
  const auto& cl = s["cluster"];
  out += fmt::format("scenario        {}\n", s["scenario"].get<std::string>());
  out += fmt::format("cluster         {} ranks on {} nodes in {} region(s)\n",
                     cl["ranks"].get<int>(), cl["nodes"].get<int>(), cl["regions"].get<int>());
  out += fmt::format("network model   {}\n", s["network_model"].get<std::string>());
  out += fmt::format("simulated time  {}\n",
                     format_duration(Duration::from_seconds(s["simulated_time_s"].get<double>())));
  if (s.contains("wall_time_s")) {
    out += fmt::format(
        "wall time       {:.3f} s ({} events, {} rounds fast-forwarded, {} phases replayed)\n",
        s["wall_time_s"].get<double>(), s["events"].get<uint64_t>(),
        s["fast_forwarded_rounds"].get<int64_t>(), s.value("replayed_phases", int64_t{0}));
  }
  if (s.contains("flow_solver")) {
    const auto& m = s["flow_solver"];
    const auto whole = m["whole_components"].get<uint64_t>();
    std::string of_whole;
    if (whole > 0) {
      of_whole = fmt::format(" ({} after giving up an affected set) of {:.0f} flows on average",
                             m["whole_components_after_a_set"].get<uint64_t>(),
                             m["whole_component_flows"].get<double>() / static_cast<double>(whole));
    }
    out += fmt::format(
        "flow solver     {} solves: {} settled in place, {} by affected sets, {} whole "
        "components{}\n",
        m["solves"].get<uint64_t>(), m["settled_in_place"].get<uint64_t>(),
        m["affected_sets"].get<uint64_t>(), whole, of_whole);
  }
  if (s.contains("cost_sources")) {
    std::string line;
    for (const auto& [source, figures] : s["cost_sources"].items()) {
      const double share = figures["share"].get<double>();
      if (share <= 0) continue;
      line += fmt::format("{}{} {:.1f}%", line.empty() ? "" : ", ", source, 100 * share);
    }
    if (!line.empty()) {
      out += fmt::format("compute costs   {} ({} model; share of compute time)\n", line,
                         s["cost_model"].get<std::string>());
    }
  }
  if (s.contains("measured_links")) {
    for (const auto& l : s["measured_links"]) {
      out += fmt::format(
          "links           {} {} measured ({}, {} ranks): {} per call + {} per hop, {}; "
          "other links: catalog\n",
          l["device"].get<std::string>(), l["class"].get<std::string>(),
          l["library"].get<std::string>(), l["ranks"].get<int>(),
          format_duration(Duration::from_seconds(l["base_s"].get<double>())),
          format_duration(Duration::from_seconds(l["hop_s"].get<double>())),
          format_bandwidth(Bandwidth::bytes_per_s(l["bandwidth_bytes_per_s"].get<double>())));
    }
    const auto& c = s["collective_sources"];
    out += fmt::format(
        "collectives     {} measured, {} interpolated, {} extrapolated (by the database's "
        "measurements), {} by the network model (calls and pipeline send/recv pairs)\n",
        c["measured"].get<int64_t>(), c["interpolated"].get<int64_t>(),
        c["extrapolated"].get<int64_t>(), c["network_model"].get<int64_t>());
  }
  if (s.contains("cancelled")) {
    out += "CANCELLED: the run was stopped; the figures cover what ran\n";
  } else if (!s["completed"].get<bool>()) {
    out += "NOT COMPLETED: some tasks never ran:\n";
    for (const auto& line : s["stalled"]) out += "  " + line.get<std::string>() + "\n";
  }
  if (s.contains("training")) out += format_training_text(s);
  if (s.contains("collectives") && !s["collectives"].empty()) {
    out += fmt::format("\n{:<15} {:<17} {:>10} {:>6} {:>12} {:>11} {:>11}\n", "op", "algorithm",
                       "size", "ranks", "time", "algbw GB/s", "busbw GB/s");
    for (const auto& c : s["collectives"]) {
      out += fmt::format("{:<15} {:<17} {:>10} {:>6} {:>12} {:>11.2f} {:>11.2f}\n",
                         c["op"].get<std::string>(), c["algorithm"].get<std::string>(),
                         format_bytes(Bytes(c["bytes"].get<int64_t>())), c["ranks"].get<int>(),
                         format_duration(Duration::from_seconds(c["time_s"].get<double>())),
                         c["algbw_GBps"].get<double>(), c["busbw_GBps"].get<double>());
    }
  }
  if (!s["busiest_links"].empty()) {
    out += fmt::format("\nbusiest links ({} of {} used)\n", s["busiest_links"].size(),
                       s["links_used"].get<size_t>());
    for (const auto& l : s["busiest_links"]) {
      out += fmt::format("  {:<44} mean {:5.1f}%  peak {:5.1f}%  {}\n",
                         l["link"].get<std::string>(), 100 * l["mean_utilization"].get<double>(),
                         100 * l["peak_utilization"].get<double>(),
                         format_bytes(Bytes(static_cast<int64_t>(l["bytes"].get<double>()))));
    }
  }
  const auto& overflows = s["memory_overflows"];
  for (size_t i = 0; i < overflows.size() && i < 8; ++i) {
    const auto& m = overflows[i];
    out += fmt::format("OUT OF MEMORY: rank {} at task \"{}\": {} over its {} capacity\n",
                       m["rank"].get<int>(), m["task"].get<std::string>(),
                       format_bytes(Bytes(m["over_by_bytes"].get<int64_t>())),
                       format_bytes(Bytes(m["capacity_bytes"].get<int64_t>())));
  }
  if (overflows.size() > 8) {
    out += fmt::format("OUT OF MEMORY: ... and {} more ranks (summary.json lists them all)\n",
                       overflows.size() - 8);
  }
  return out;
}

}  // namespace dtsim
