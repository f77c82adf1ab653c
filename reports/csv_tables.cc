// CSV writers for per-rank and per-link figures.
#include "reports/csv_tables.h"

#include <fmt/format.h>

#include "reports/training_summary.h"

namespace dtsim {

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

void write_ranks_csv(std::ostream& out, const LoweredScenario& scenario, const ScenarioRun& run) {
  const Cluster& c = scenario.cluster_ref();
  out << "rank,device,vertex,node,region,compute_s,communication_s,exposed_communication_s,"
         "waiting_s,waiting_p2p_s,idle_s,tasks,peak_memory_bytes,memory_capacity_bytes,oom\n";
  for (int r = 0; r < c.num_ranks(); ++r) {
    const RankStats s =
        scenario.training ? rank_stats_per_iteration(scenario, run, r) : run.result.ranks[r];
    const ClusterDevice& d = c.devices[r];
    out << fmt::format("{},{},{},{},{},{:.9f},{:.9f},{:.9f},{:.9f},{:.9f},{:.9f},{},{},{},{}\n", r,
                       csv_field(d.spec->name), csv_field(c.topology.vertex(d.vertex).name),
                       csv_field(c.nodes[d.node].name), csv_field(c.regions[d.region].name), s.compute.seconds(), s.communication.seconds(),
                       s.exposed_communication.seconds(), s.waiting.seconds(),
                       s.waiting_p2p.seconds(), s.idle.seconds(),
                       s.tasks,
                       s.peak_memory.count(), s.memory_capacity.count(), s.out_of_memory ? 1 : 0);
  }
}

void write_links_csv(std::ostream& out, const LoweredScenario& scenario, const ScenarioRun& run) {
  const Topology& t = scenario.cluster_ref().topology;
  const double span = run.result.end.seconds();
  out << "link,src,dst,kind,bandwidth_Bps,latency_s,bytes,busy_s,mean_utilization,"
         "peak_utilization\n";
  for (LinkId l = 0; l < run.links.size(); ++l) {
    const LinkStats& s = run.links[l];
    if (s.bytes <= 0) continue;
    const LinkInfo& info = t.link(l);
    const double capacity = info.bandwidth.bytes_per_second();
    out << fmt::format("{},{},{},{},{:.0f},{:.9f},{:.0f},{:.9f},{:.6f},{:.6f}\n", l,
                       csv_field(t.vertex(info.src).name), csv_field(t.vertex(info.dst).name),
                       link_kind_name(info.kind),
                       capacity, info.latency.seconds(), s.bytes, s.busy.seconds(),
                       span > 0 ? s.bytes / (capacity * span) : 0.0, s.peak_utilization);
  }
}

}  // namespace dtsim
