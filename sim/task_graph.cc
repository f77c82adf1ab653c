// TaskGraph construction and structural validation.
#include "sim/task_graph.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace dtsim {

std::string_view task_kind_name(TaskKind k) {
  switch (k) {
    case TaskKind::kCompute: return "compute";
    case TaskKind::kCollective: return "collective";
    case TaskKind::kSend: return "send";
    case TaskKind::kRecv: return "recv";
    case TaskKind::kMemcpy: return "memcpy";
    case TaskKind::kAlloc: return "alloc";
    case TaskKind::kFree: return "free";
  }
  return "?";
}

std::optional<TaskKind> task_kind_from_name(std::string_view name) {
  for (TaskKind k : kAllTaskKinds) {
    if (task_kind_name(k) == name) return k;
  }
  return std::nullopt;
}

std::string_view memory_category_name(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::kUnspecified:
      return "unspecified";
    case MemoryCategory::kWeights:
      return "weights";
    case MemoryCategory::kGradients:
      return "gradients";
    case MemoryCategory::kOptimizerStates:
      return "optimizer_states";
    case MemoryCategory::kActivations:
      return "activations";
    case MemoryCategory::kRecomputed:
      return "recomputed_activations";
    case MemoryCategory::kWorkspace:
      return "workspace";
    case MemoryCategory::kCommBuffers:
      return "comm_buffers";
  }
  return "?";
}

std::string_view pipeline_tensor_name(PipelineTensor t) {
  return t == PipelineTensor::kActivations ? "activations" : "activation_gradients";
}

std::optional<PipelineTensor> pipeline_tensor_from_name(std::string_view name) {
  for (PipelineTensor t : {PipelineTensor::kActivations, PipelineTensor::kActivationGradients}) {
    if (pipeline_tensor_name(t) == name) return t;
  }
  return std::nullopt;
}

std::optional<MemoryCategory> memory_category_from_name(std::string_view name) {
  for (MemoryCategory c : kAllMemoryCategories) {
    if (memory_category_name(c) == name) return c;
  }
  return std::nullopt;
}

std::string_view memcpy_kind_name(MemcpyKind k) {
  switch (k) {
    case MemcpyKind::kHostToDevice: return "h2d";
    case MemcpyKind::kDeviceToHost: return "d2h";
    case MemcpyKind::kDeviceToDevice: return "d2d";
    case MemcpyKind::kPeer: return "peer";
  }
  return "?";
}

std::optional<MemcpyKind> memcpy_kind_from_name(std::string_view name) {
  for (MemcpyKind k : {MemcpyKind::kHostToDevice, MemcpyKind::kDeviceToHost,
                       MemcpyKind::kDeviceToDevice, MemcpyKind::kPeer}) {
    if (memcpy_kind_name(k) == name) return k;
  }
  return std::nullopt;
}

uint16_t TaskGraph::stream(std::string_view name) {
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i] == name) return static_cast<uint16_t>(i);
  }
  streams_.emplace_back(name);
  return static_cast<uint16_t>(streams_.size() - 1);
}

TaskId TaskGraph::add(const Task& task) {
  constexpr size_t kMaxId = std::numeric_limits<uint32_t>::max();
  // Every task's dependencies count, not only the stored ones: the runtime lays them all out
  // with 32-bit offsets.
  if (num_tasks_ >= kMaxId || records_.size() >= kMaxId || num_deps_ + task.deps.size() >= kMaxId) {
    throw std::length_error("a TaskGraph holds at most " + std::to_string(kMaxId) +
                            " tasks and as many dependencies");
  }
  if (task.deps.size() > kMaxDependencies) {
    throw std::length_error("task \"" + task.name + "\" has " + std::to_string(task.deps.size()) +
                            " dependencies; a task has at most " +
                            std::to_string(kMaxDependencies));
  }
  if (task.ops != kNoOps && (task.ops >= num_op_lists() || task.kind != TaskKind::kCompute)) {
    throw std::invalid_argument("task \"" + task.name + "\": op list " + std::to_string(task.ops) +
                                (task.kind != TaskKind::kCompute ? " on a task that runs no kernels"
                                                                 : " is not in the graph"));
  }
  if (task.transfer && task.kind != TaskKind::kSend && task.kind != TaskKind::kRecv) {
    throw std::invalid_argument("task \"" + task.name +
                                "\": a pipeline transfer on a task that is not a send or recv");
  }
  Record r;
  r.fields = task;
  // A collective's member tasks follow one another under one name: store it once (within a
  // rank's tasks, when they are bracketed: what a rank's records hold is then its own).
  const bool opens_rank = open_.rank >= 0 && records_.size() == open_.first_record;
  const Record* prev = records_.empty() || opens_rank ? nullptr : &records_.back();
  if (prev != nullptr && std::string_view(names_).substr(prev->name_first, prev->name_size) ==
                             task.name) {
    r.name_first = prev->name_first;
  } else {
    r.name_first = names_.size();
    names_ += task.name;
  }
  r.name_size = static_cast<uint32_t>(task.name.size());
  r.deps_first = static_cast<uint32_t>(deps_.size());
  const auto id = static_cast<TaskId>(num_tasks_);
  // Distances back, modulo 2^32: a dependency on a later task reads back as itself, for
  // validate to refuse.
  for (TaskId d : task.deps) deps_.push_back(id - d);
  const auto record = static_cast<uint32_t>(records_.size());
  records_.push_back(r);
  // A new segment unless the last one, as added, reads this very record next (a rank's own
  // records copied by set_duration may lie between).
  const bool extends = !segments_.empty() && segments_.back().rank < 0 &&
                       segments_.back().first_record + (id - segments_.back().first_id) == record;
  if (!extends) segments_.push_back({id, record, -1, 0});
  ++num_tasks_;
  num_deps_ += task.deps.size();
  if (task.kind == TaskKind::kSend || task.kind == TaskKind::kRecv) ++num_messages_;
  if (task.transfer) {
    const PipelineTransfer& t = *task.transfer;
    const auto [it, fresh] =
        transfer_index_.try_emplace(t, static_cast<uint32_t>(transfers_.size()));
    if (fresh) transfers_.push_back(t);
    transfer_of_task_.emplace_back(record, it->second);
    ++num_transfer_tasks_;
  }
  return id;
}

void TaskGraph::begin_rank(int rank) {
  if (open_.rank >= 0) throw std::logic_error("TaskGraph::begin_rank: a rank is open already");
  if (rank < 0) throw std::invalid_argument("TaskGraph::begin_rank: a negative rank");
  open_ = {rank,
           static_cast<TaskId>(num_tasks_),
           static_cast<uint32_t>(records_.size()),
           deps_.size(),
           names_.size(),
           transfer_of_task_.size()};
  // The rank's tasks get a segment of their own, whatever comes before them.
  segments_.push_back({open_.first_id, open_.first_record, -1, 0});
}

void TaskGraph::end_rank() {
  if (open_.rank < 0) throw std::logic_error("TaskGraph::end_rank without begin_rank");
  const OpenRank open = open_;
  open_ = {};
  const auto n = static_cast<uint32_t>(records_.size() - open.first_record);
  if (n == 0) {
    segments_.pop_back();
    return;
  }
  // Stored once only when every task is the rank's (a builder that adds another rank's
  // task here keeps them all as added) and no send has a call.
  for (uint32_t i = open.first_record; i < records_.size(); ++i) {
    const TaskFields& f = records_[i].fields;
    if (f.rank != open.rank || (has_peer(f) && f.collective != 0)) return;
  }
  // The template's form: peers and calls become indices into the rank's overrides.
  const auto first_override = static_cast<uint32_t>(overrides_.size());
  for (uint32_t i = open.first_record; i < records_.size(); ++i) {
    TaskFields& f = records_[i].fields;
    if (has_peer(f)) {
      overrides_.push_back(f.peer);
      f.peer = -1;
    } else if (f.kind == TaskKind::kCollective) {
      overrides_.push_back(static_cast<int32_t>(f.collective));
    } else {
      continue;
    }
    f.collective = static_cast<uint32_t>(overrides_.size() - 1 - first_override);
  }
  Segment& segment = segments_.back();
  segment.rank = open.rank;
  segment.first_override = first_override;
  const size_t h = hash_records(open.first_record, n);
  const auto [first, last] = template_index_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    const Template& t = templates_[it->second];
    if (t.size != n || t.overrides != overrides_.size() - first_override ||
        !same_records(t.first_record, open.first_record, n))
      continue;
    // An instance: the records just added go, the rank reads the template's.
    records_.resize(open.first_record);
    deps_.resize(open.deps);
    names_.resize(open.names);
    transfer_of_task_.resize(open.transfers);
    segment.first_record = t.first_record;
    return;
  }
  template_index_.emplace(h, static_cast<uint32_t>(templates_.size()));
  templates_.push_back(
      {open.first_record, n, static_cast<uint32_t>(overrides_.size() - first_override)});
}

std::span<const std::pair<uint32_t, uint32_t>> TaskGraph::transfers_of(uint32_t first,
                                                                       uint32_t n) const {
  const auto by_record = [](const auto& entry, uint32_t key) { return entry.first < key; };
  const auto b =
      std::lower_bound(transfer_of_task_.begin(), transfer_of_task_.end(), first, by_record);
  const auto e = std::lower_bound(b, transfer_of_task_.end(), first + n, by_record);
  return {transfer_of_task_.data() + (b - transfer_of_task_.begin()), static_cast<size_t>(e - b)};
}

size_t TaskGraph::hash_records(uint32_t first, uint32_t n) const {
  size_t h = n;
  const auto mix = [&h](uint64_t v) {
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 31;
  };
  for (uint32_t i = first; i < first + n; ++i) {
    const Record& r = records_[i];
    const TaskFields& f = r.fields;
    mix(static_cast<uint64_t>(f.duration.count_ns()));
    mix(static_cast<uint64_t>(f.bytes.count()));
    mix(uint64_t{f.tag} << 32 | f.ops);
    mix(uint64_t{f.collective} << 32 | f.buffer);
    mix(uint64_t{f.stream} << 32 | uint64_t{static_cast<uint8_t>(f.kind)} << 16 |
        uint64_t{static_cast<uint8_t>(f.memcpy_kind)} << 8 | static_cast<uint8_t>(f.memory));
    mix(std::hash<std::string_view>{}(std::string_view(names_).substr(r.name_first, r.name_size)));
    for (uint32_t d = r.deps_first, end = deps_end(i); d < end; ++d) mix(deps_[d]);
  }
  for (const auto& [record, transfer] : transfers_of(first, n))
    mix(uint64_t{record - first} << 32 | transfer);
  return h;
}

bool TaskGraph::same_records(uint32_t a, uint32_t b, uint32_t n) const {
  for (uint32_t k = 0; k < n; ++k) {
    const Record& x = records_[a + k];
    const Record& y = records_[b + k];
    const TaskFields& f = x.fields;
    const TaskFields& g = y.fields;
    if (f.duration != g.duration || f.bytes != g.bytes || f.peer != g.peer ||
        f.collective != g.collective || f.tag != g.tag || f.ops != g.ops || f.buffer != g.buffer ||
        f.stream != g.stream || f.kind != g.kind || f.memcpy_kind != g.memcpy_kind ||
        f.memory != g.memory)
      return false;
    const std::string_view names(names_);
    if (names.substr(x.name_first, x.name_size) != names.substr(y.name_first, y.name_size))
      return false;
    const uint32_t xn = deps_end(a + k) - x.deps_first, yn = deps_end(b + k) - y.deps_first;
    if (xn != yn || !std::equal(deps_.begin() + x.deps_first, deps_.begin() + x.deps_first + xn,
                                deps_.begin() + y.deps_first))
      return false;
  }
  const auto ta = transfers_of(a, n), tb = transfers_of(b, n);
  if (ta.size() != tb.size()) return false;
  for (size_t i = 0; i < ta.size(); ++i) {
    if (ta[i].first - a != tb[i].first - b || ta[i].second != tb[i].second) return false;
  }
  return true;
}

void TaskGraph::own_records(Segment& s) {
  const size_t index = static_cast<size_t>(&s - segments_.data());
  const TaskId end = index + 1 < segments_.size() ? segments_[index + 1].first_id
                                                  : static_cast<TaskId>(num_tasks_);
  const uint32_t n = end - s.first_id;
  const uint32_t from = s.first_record;
  const auto to = static_cast<uint32_t>(records_.size());
  // Copied out first: the transfer entries and records grow while they are read.
  const std::vector<std::pair<uint32_t, uint32_t>> moved(transfers_of(from, n).begin(),
                                                         transfers_of(from, n).end());
  for (uint32_t k = 0; k < n; ++k) {
    Record r = records_[from + k];
    const uint32_t first = r.deps_first, stop = deps_end(from + k);
    r.deps_first = static_cast<uint32_t>(deps_.size());
    for (uint32_t d = first; d < stop; ++d) {
      const uint32_t back = deps_[d];
      deps_.push_back(back);
    }
    records_.push_back(r);
  }
  for (const auto& [record, transfer] : moved)
    transfer_of_task_.emplace_back(record - from + to, transfer);
  s.first_record = to;
  s.own = true;
}

void TaskGraph::set_duration(TaskId id, Duration d) {
  // A copy made now would land among the open rank's records.
  if (open_.rank >= 0) throw std::logic_error("TaskGraph::set_duration while a rank is open");
  Segment& s = segments_[segment_index(id)];
  if (records_[s.first_record + (id - s.first_id)].fields.duration == d) return;
  if (s.rank >= 0 && !s.own) own_records(s);
  records_[s.first_record + (id - s.first_id)].fields.duration = d;
}

std::vector<TaskGraph::RankLayout> TaskGraph::rank_layouts() const {
  std::vector<RankLayout> out(segments_.size());
  // Backwards: a bracket's overrides end where the next bracket's begin.
  auto overrides_end = static_cast<uint32_t>(overrides_.size());
  auto end = static_cast<TaskId>(num_tasks_);
  for (size_t i = segments_.size(); i-- > 0;) {
    const Segment& s = segments_[i];
    out[i] = {s.rank, s.first_id, end - s.first_id, s.first_record, {}};
    end = s.first_id;
    if (s.rank < 0) continue;
    out[i].overrides = std::span<const int32_t>(overrides_.data() + s.first_override,
                                                overrides_end - s.first_override);
    overrides_end = s.first_override;
  }
  return out;
}

std::optional<PipelineTransfer> TaskGraph::transfer(TaskId id) const {
  const auto entry = transfers_of(record_of(id), 1);
  if (entry.empty()) return std::nullopt;
  return transfers_[entry.front().second];
}

OpListId TaskGraph::add_op_list(std::span<const OpSignature> ops,
                                std::span<const OpOperands> operands) {
  if (!operands.empty() && operands.size() != ops.size()) {
    throw std::invalid_argument("an op list's operands: " + std::to_string(operands.size()) +
                                " entries for " + std::to_string(ops.size()) +
                                " ops (one per op, or none)");
  }
  const OpOperands none;
  const auto operands_of = [&](size_t i) -> const OpOperands& {
    return operands.empty() ? none : operands[i];
  };
  size_t h = ops.size();
  for (size_t i = 0; i < ops.size(); ++i) {
    h = h * 1000003 ^ hash_value(ops[i]);
    if (!operands_of(i).empty()) h = h * 1000003 ^ hash_value(operands_of(i));
  }
  const auto [first, last] = op_list_index_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    const std::span<const OpSignature> held = op_list(it->second);
    const std::span<const OpOperands> bound = op_operands(it->second);
    if (!std::equal(held.begin(), held.end(), ops.begin(), ops.end())) continue;
    bool same = true;
    for (size_t i = 0; i < ops.size() && same; ++i) same = bound[i] == operands_of(i);
    if (same) return it->second;
  }
  if (ops_.size() + ops.size() >= std::numeric_limits<uint32_t>::max()) {
    throw std::length_error("a TaskGraph holds at most 2^32 - 1 op signatures");
  }
  const auto id = static_cast<OpListId>(num_op_lists());
  ops_.insert(ops_.end(), ops.begin(), ops.end());
  for (size_t i = 0; i < ops.size(); ++i) operands_.push_back(operands_of(i));
  op_list_end_.push_back(static_cast<uint32_t>(ops_.size()));
  op_list_index_.emplace(h, id);
  return id;
}

void TaskGraph::set_crowding(TaskId id, Crowding c) {
  if (id >= num_tasks_) throw std::invalid_argument("crowding for a task the graph does not hold");
  if (c.co_runners == 0 && id >= crowding_.size()) return;
  if (id >= crowding_.size()) crowding_.resize(id + 1);
  crowding_[id] = c;
}

size_t TaskGraph::op_list_bytes() const {
  size_t bytes = ops_.capacity() * sizeof(OpSignature) +
                 op_list_end_.capacity() * sizeof(uint32_t) +
                 op_list_index_.size() * (sizeof(size_t) + sizeof(OpListId) + 2 * sizeof(void*));
  for (const OpSignature& op : ops_) {
    if (op.name.capacity() > 15) bytes += op.name.capacity() + 1;  // beyond the small-string buffer
  }
  bytes += operands_.capacity() * sizeof(OpOperands);
  for (const OpOperands& o : operands_) bytes += o.capacity() * sizeof(OperandBinding);
  return bytes;
}

TaskGraphCounts TaskGraph::counts() const {
  TaskGraphCounts c;
  c.tasks = static_cast<double>(num_tasks_);
  c.dependencies = static_cast<double>(num_deps_);
  c.transfers = static_cast<double>(num_transfer_tasks_);
  c.messages = static_cast<double>(num_messages_);
  c.records = static_cast<double>(records_.size());
  c.stored_dependencies = static_cast<double>(deps_.size());
  c.stored_transfers = static_cast<double>(transfer_of_task_.size());
  c.name_chars = static_cast<double>(names_.size());
  c.overrides = static_cast<double>(overrides_.size());
  c.segments = static_cast<double>(segments_.size());
  c.templates = static_cast<double>(templates_.size());
  c.collectives = static_cast<double>(collectives_.size());
  for (const CollectiveCall& call : collectives_) {
    c.collective_members += static_cast<double>(call.members.size());
    if (call.label.size() > 15)
      c.collective_label_chars += static_cast<double>(call.label.size() + 1);
  }
  c.op_list_bytes = static_cast<double>(op_list_bytes());
  return c;
}

double TaskGraph::bytes_for(const TaskGraphCounts& c) {
  // A template costs its entry and a node of the hash index (two pointers and a hash).
  return c.records * sizeof(Record) + c.stored_dependencies * sizeof(uint32_t) + c.name_chars +
         c.stored_transfers * sizeof(std::pair<uint32_t, uint32_t>) +
         c.overrides * sizeof(int32_t) + c.segments * sizeof(Segment) +
         c.templates *
             (sizeof(Template) + sizeof(std::pair<size_t, uint32_t>) + 2 * sizeof(void*)) +
         c.collectives * sizeof(CollectiveCall) + c.collective_members * sizeof(int) +
         c.collective_label_chars + c.op_list_bytes;
}

uint32_t TaskGraph::add_collective(CollectiveCall call) {
  collectives_.push_back(std::move(call));
  return static_cast<uint32_t>(collectives_.size() - 1);
}

uint32_t TaskGraph::add_collective_with_tasks(CollectiveCall call, uint16_t stream) {
  const uint32_t id = add_collective(std::move(call));
  const CollectiveCall& added = collectives_[id];
  Task task;
  task.kind = TaskKind::kCollective;
  task.stream = stream;
  task.name = added.label;
  task.collective = id;
  for (int rank : added.members) {
    task.rank = rank;
    add(task);
  }
  return id;
}

TaskGraph::MessageEntry TaskGraph::message_entry(const TaskView& t, TaskId id) {
  // The sign bit flipped, so that unsigned order is the ranks' order (an invalid negative
  // peer sorts first, and validate names its keys in that order).
  const auto as32 = [](int rank) {
    return static_cast<uint64_t>(static_cast<uint32_t>(rank) ^ 0x80000000u);
  };
  const bool send = t.kind == TaskKind::kSend;
  return {as32(send ? t.rank : t.peer) << 32 | as32(send ? t.peer : t.rank),
          uint64_t{t.tag} << 32 | id};
}

void TaskGraph::pair_messages(std::vector<MessageEntry>& sends, std::vector<MessageEntry>& recvs,
                              std::vector<MessagePair>& pairs,
                              std::vector<UnmatchedKey>& unmatched) {
  // Sorted and walked side by side, which for millions of messages beats any map.
  std::sort(sends.begin(), sends.end());
  std::sort(recvs.begin(), recvs.end());
  const auto key = [](const MessageEntry& e) { return std::pair{e.ranks, e.tag_id >> 32}; };
  pairs.reserve(pairs.size() + std::min(sends.size(), recvs.size()));
  for (size_t i = 0, j = 0; i < sends.size() || j < recvs.size();) {
    const auto k = j == recvs.size() || (i < sends.size() && key(sends[i]) < key(recvs[j]))
                       ? key(sends[i])
                       : key(recvs[j]);
    const size_t first_send = i, first_recv = j;
    while (i < sends.size() && key(sends[i]) == k) ++i;
    while (j < recvs.size() && key(recvs[j]) == k) ++j;
    const auto balance =
        static_cast<int64_t>(i - first_send) - static_cast<int64_t>(j - first_recv);
    if (balance != 0) {
      const auto rank = [](uint64_t bits) {
        return static_cast<int>(static_cast<uint32_t>(bits) ^ 0x80000000u);
      };
      unmatched.push_back(
          {rank(k.first >> 32), rank(k.first), static_cast<uint32_t>(k.second), balance});
      continue;
    }
    for (size_t n = 0; n < i - first_send; ++n) {
      pairs.push_back({static_cast<TaskId>(sends[first_send + n].tag_id),
                       static_cast<TaskId>(recvs[first_recv + n].tag_id)});
    }
  }
}

std::vector<TaskGraph::MessagePair> TaskGraph::message_pairs() const {
  std::vector<MessageEntry> sends, recvs;
  auto at = tasks().begin();
  for (size_t i = 0; i < num_tasks_; ++i, ++at) {
    const TaskView t = *at;
    if (t.kind == TaskKind::kSend) sends.push_back(message_entry(t, static_cast<TaskId>(i)));
    if (t.kind == TaskKind::kRecv) recvs.push_back(message_entry(t, static_cast<TaskId>(i)));
  }
  std::vector<MessagePair> pairs;
  std::vector<UnmatchedKey> unmatched;
  pair_messages(sends, recvs, pairs, unmatched);
  return pairs;
}

std::vector<std::string> TaskGraph::validate(int num_ranks, std::vector<MessagePair>* pairs) const {
  std::vector<std::string> errors;
  auto where = [&](size_t i) {
    const TaskView t = task(static_cast<TaskId>(i));
    return "task " + std::to_string(i) + " (\"" + std::string(t.name) + "\", rank " +
           std::to_string(t.rank) + ")";
  };
  // Each call's tasks' ranks in one array, laid out by call as many as its members: a
  // vector per call cost an allocation each (a step holds over a million calls).
  std::vector<size_t> call_first(collectives_.size() + 1, 0);
  for (size_t c = 0; c < collectives_.size(); ++c)
    call_first[c + 1] = call_first[c] + collectives_[c].members.size();
  std::vector<int> call_ranks(call_first.back());
  std::vector<size_t> call_filled(call_first.begin(), call_first.end() - 1);
  std::vector<size_t> call_extra;  // by call: tasks beyond its member count, once one has some
  // A free names a buffer its rank allocated (in task order: memory tasks run in their
  // stream's order) and has not freed, with the alloc's bytes.
  std::unordered_map<uint64_t, int64_t> live;  // (rank, buffer) -> bytes
  auto check_buffer = [&](const TaskView& t, size_t i) {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(t.rank)) << 32) | t.buffer;
    const std::string buffer = "buffer " + std::to_string(t.buffer);
    if (t.kind == TaskKind::kAlloc) {
      if (!live.emplace(key, t.bytes.count()).second) {
        errors.push_back(where(i) + ": allocates " + buffer + ", which its rank holds already");
      }
      return;
    }
    const auto it = live.find(key);
    if (it == live.end()) {
      errors.push_back(where(i) + ": frees " + buffer + ", which its rank does not hold");
    } else {
      if (it->second != t.bytes.count()) {
        errors.push_back(where(i) + ": frees " + std::to_string(t.bytes.count()) + " bytes of " +
                         buffer + ", allocated with " + std::to_string(it->second));
      }
      live.erase(it);
    }
  };
  // Every (sender, receiver, tag) must be sent as often as it is received.
  std::vector<MessageEntry> sends;
  std::vector<MessageEntry> recvs;
  auto at = tasks().begin();
  for (size_t i = 0; i < num_tasks_; ++i, ++at) {
    const TaskView t = *at;
    if (t.rank < 0 || t.rank >= num_ranks) {
      errors.push_back(where(i) + ": rank is outside 0.." + std::to_string(num_ranks - 1));
    }
    if (t.stream >= streams_.size()) {
      errors.push_back(where(i) + ": stream " + std::to_string(t.stream) +
                       " was never declared (use TaskGraph::stream)");
    }
    for (TaskId d : t.deps) {
      // Dependencies point backwards, so the graph is acyclic by construction.
      if (d >= i) errors.push_back(where(i) + ": depends on task " + std::to_string(d) +
                                   ", which is not an earlier task");
    }
    if (has_peer(t) && (t.peer < 0 || t.peer >= num_ranks || t.peer == t.rank)) {
      errors.push_back(where(i) + ": peer " + std::to_string(t.peer) +
                       " is not another rank in 0.." + std::to_string(num_ranks - 1));
    }
    if ((t.kind == TaskKind::kAlloc || t.kind == TaskKind::kFree) && t.buffer != 0) {
      check_buffer(t, i);
    }
    const auto id = static_cast<TaskId>(i);
    if (t.kind == TaskKind::kSend) sends.push_back(message_entry(t, id));
    if (t.kind == TaskKind::kRecv) recvs.push_back(message_entry(t, id));
    if (t.kind == TaskKind::kCollective) {
      const uint32_t c = t.collective;
      if (c >= collectives_.size()) {
        errors.push_back(where(i) + ": refers to collective " + std::to_string(c) +
                         ", which does not exist");
      } else if (call_filled[c] < call_first[c + 1]) {
        call_ranks[call_filled[c]++] = t.rank;
      } else {
        if (call_extra.empty()) call_extra.assign(collectives_.size(), 0);
        ++call_extra[c];
      }
    }
  }
  std::vector<MessagePair> own_pairs;
  std::vector<MessagePair>& paired = pairs != nullptr ? *pairs : own_pairs;
  paired.clear();
  std::vector<UnmatchedKey> unmatched;
  pair_messages(sends, recvs, paired, unmatched);
  sends = {};
  recvs = {};
  for (const MessagePair& p : paired) {
    if (transfer(p.send) != transfer(p.recv)) {
      errors.push_back(where(p.send) + " and " + where(p.recv) +
                       ": a send and the recv it meets move different pipeline tensors");
    }
  }
  for (const UnmatchedKey& u : unmatched) {
    errors.push_back(
        "send/recv from rank " + std::to_string(u.sender) + " to rank " +
        std::to_string(u.receiver) + " with tag " + std::to_string(u.tag) + ": " +
        std::to_string(std::abs(u.balance)) +
        (u.balance > 0 ? " send(s) without a matching recv" : " recv(s) without a matching send"));
  }
  std::vector<int> want;
  for (size_t c = 0; c < collectives_.size(); ++c) {
    const auto have_first = call_ranks.begin() + static_cast<ptrdiff_t>(call_first[c]);
    const auto have_end = call_ranks.begin() + static_cast<ptrdiff_t>(call_filled[c]);
    std::sort(have_first, have_end);
    const std::vector<int>& members = collectives_[c].members;
    const size_t tasks = call_filled[c] - call_first[c] + (call_extra.empty() ? 0 : call_extra[c]);
    bool same = tasks == members.size();
    if (same && std::is_sorted(members.begin(), members.end())) {
      same = std::equal(have_first, have_end, members.begin());
    } else if (same) {
      want = members;
      std::sort(want.begin(), want.end());
      same = std::equal(have_first, have_end, want.begin());
    }
    if (!same) {
      errors.push_back("collective " + std::to_string(c) + " (\"" + collectives_[c].label +
                       "\"): its tasks are on " + std::to_string(tasks) + " rank(s) but it has " +
                       std::to_string(members.size()) +
                       " member(s); every member needs exactly one task");
    }
  }
  return errors;
}

}  // namespace dtsim
