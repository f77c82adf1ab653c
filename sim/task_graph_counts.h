// What a TaskGraph holds, counted: the figures a memory estimate scales from a sample of
// ranks to the whole graph, before the graph exists.
#pragma once

namespace dtsim {

// Doubles: an estimate scales a sample's counts by fractions (a collective call shared by
// k sampled members of n counts k / n of a call).
// Tasks, dependencies, transfers and messages count every rank's (what a runtime lays out);
// records, stored dependencies and transfers and names what the graph holds, where ranks that
// run alike share one rank's (TaskGraph, "ranks stored once").
struct TaskGraphCounts {
  double tasks = 0;
  double dependencies = 0;
  double name_chars = 0;          // the graph's name array
  double transfers = 0;           // pipeline sends and recvs that carry a transfer
  double messages = 0;            // sends and recvs
  double records = 0;
  double stored_dependencies = 0;
  double stored_transfers = 0;
  double overrides = 0;  // the peers and calls of ranks stored as instances
  double segments = 0;
  double templates = 0;
  double collectives = 0;         // calls
  double collective_members = 0;  // over all calls: one per member task
  double collective_label_chars = 0;
  double op_list_bytes = 0;  // shared by the ranks of a stage: not scaled with them

  TaskGraphCounts& operator+=(const TaskGraphCounts& o) {
    tasks += o.tasks;
    dependencies += o.dependencies;
    name_chars += o.name_chars;
    transfers += o.transfers;
    messages += o.messages;
    records += o.records;
    stored_dependencies += o.stored_dependencies;
    stored_transfers += o.stored_transfers;
    overrides += o.overrides;
    segments += o.segments;
    templates += o.templates;
    collectives += o.collectives;
    collective_members += o.collective_members;
    collective_label_chars += o.collective_label_chars;
    op_list_bytes += o.op_list_bytes;
    return *this;
  }
};

}  // namespace dtsim
