// Summary construction (JSON) and its text rendering.
#include "reports/summary.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "reports/collective_bandwidth.h"
#include "sim/unit_parse.h"

namespace dtsim {

nlohmann::ordered_json make_summary(const Scenario& scenario, const ScenarioRun& run,
                                    const SummaryOptions& options) {
  const RunResult& r = run.result;
  const Cluster& c = scenario.cluster;
  nlohmann::ordered_json s;
  s["scenario"] = scenario.name;
  s["source"] = scenario.source;
  s["network_model"] = scenario.simulation.network_model;
  s["simulated_time_s"] = r.end.seconds();
  if (options.include_wall_time) s["wall_time_s"] = run.wall_time_s;
  s["events"] = r.events;
  s["fast_forwarded_rounds"] = r.fast_forwarded_rounds;
  s["cluster"] = {{"ranks", c.num_ranks()},
                  {"nodes", c.nodes.size()},
                  {"regions", c.regions.size()},
                  {"vertices", c.topology.num_vertices()},
                  {"links", c.topology.num_links()}};
  s["tasks"] = scenario.graph.tasks().size();
  s["completed"] = r.stalled.empty();
  if (!r.stalled.empty()) s["stalled"] = r.stalled;

  auto collectives = nlohmann::ordered_json::array();
  for (const CollectiveRecord& rec : r.collectives) {
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
  s["collectives"] = std::move(collectives);

  // Busiest links by mean utilisation over the run.
  std::vector<LinkId> used;
  for (LinkId l = 0; l < run.links.size(); ++l) {
    if (run.links[l].bytes > 0) used.push_back(l);
  }
  const double span = r.end.seconds();
  auto mean_util = [&](LinkId l) {
    return span > 0 ? run.links[l].bytes / (c.topology.link(l).bandwidth.bytes_per_second() * span) : 0;
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
  for (const MemoryOverflowRecord& m : r.memory_overflows) {
    overflows.push_back({{"rank", m.rank},
                         {"task", scenario.graph.task(m.task).name},
                         {"in_use_bytes", m.in_use.count()},
                         {"capacity_bytes", m.capacity.count()},
                         {"over_by_bytes", (m.in_use - m.capacity).count()},
                         {"at_s", m.at.seconds()}});
  }
  s["memory_overflows"] = std::move(overflows);
  return s;
}

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
    out += fmt::format("wall time       {:.3f} s ({} events, {} rounds fast-forwarded)\n",
                       s["wall_time_s"].get<double>(), s["events"].get<uint64_t>(),
                       s["fast_forwarded_rounds"].get<int64_t>());
  }
  if (!s["completed"].get<bool>()) {
    out += "NOT COMPLETED: some tasks never ran:\n";
    for (const auto& line : s["stalled"]) out += "  " + line.get<std::string>() + "\n";
  }
  if (!s["collectives"].empty()) {
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
      out += fmt::format("  {:<44} mean {:5.1f}%  peak {:5.1f}%  {}\n", l["link"].get<std::string>(),
                         100 * l["mean_utilization"].get<double>(),
                         100 * l["peak_utilization"].get<double>(),
                         format_bytes(Bytes(static_cast<int64_t>(l["bytes"].get<double>()))));
    }
  }
  for (const auto& m : s["memory_overflows"]) {
    out += fmt::format("OUT OF MEMORY: rank {} at task \"{}\": {} over its {} capacity\n",
                       m["rank"].get<int>(), m["task"].get<std::string>(),
                       format_bytes(Bytes(m["over_by_bytes"].get<int64_t>())),
                       format_bytes(Bytes(m["capacity_bytes"].get<int64_t>())));
  }
  return out;
}

}  // namespace dtsim
