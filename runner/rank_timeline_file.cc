// rank-N.json: a rank's tasks and, per measured step, each task's [start, end] in
// nanoseconds on the shared clock.
#include "runner/rank_timeline_file.h"

#include <string>

#include <nlohmann/json.hpp>

#include "calibration/json_reader.h"
#include "reports/atomic_file.h"

namespace dtsim {

namespace {
constexpr const char* kFormat = "dtsim-rank-timeline";
constexpr int kVersion = 1;
}  // namespace

std::filesystem::path rank_timeline_path(const std::filesystem::path& folder, int rank) {
  return folder / ("rank-" + std::to_string(rank) + ".json");
}

std::filesystem::path rank_progress_path(const std::filesystem::path& folder, int rank) {
  return folder / ("rank-" + std::to_string(rank) + ".progress");
}

void write_rank_timeline(const std::filesystem::path& path, const executor::MeasuredRun& header,
                         const executor::MeasuredRank& rank) {
  nlohmann::json steps = nlohmann::json::array();
  for (const executor::MeasuredStep& s : rank.steps) {
    nlohmann::json spans = nlohmann::json::array();
    for (const executor::TaskSpan& t : s.tasks) spans.push_back({t.start_ns, t.end_ns});
    steps.push_back({{"start_ns", s.start_ns}, {"spans", std::move(spans)}, {"op_ns", s.op_ns}});
  }
  const nlohmann::ordered_json doc = {{"format", kFormat},
                                      {"version", kVersion},
                                      {"rank", rank.rank},
                                      {"pid", rank.pid},
                                      {"backend", header.backend},
                                      {"library", header.library},
                                      {"blas", header.blas},
                                      {"warmup", header.warmup},
                                      {"clock",
                                       {{"offset_ns", rank.clock.offset_ns},
                                        {"uncertainty_ns", rank.clock.uncertainty_ns},
                                        {"samples", rank.clock.samples}}},
                                      {"operand_bytes", rank.operand_bytes},
                                      {"peak_allocated_bytes", rank.peak_allocated_bytes},
                                      {"tasks", rank.tasks},
                                      {"steps", steps}};
  write_file_atomically(path, doc.dump() + "\n");
}

namespace {

int64_t integer(const calibration::Reader& r, const nlohmann::json& o, const std::string& at,
                const char* key) {
  const nlohmann::json& v = r.at(o, at, key);
  if (!v.is_number_integer()) r.fail(at + "/" + key, "expected an integer, got " + v.dump());
  return v.get<int64_t>();
}

executor::MeasuredRank read_rank(const std::filesystem::path& path, int rank,
                                 executor::MeasuredRun& run) {
  const nlohmann::json doc =
      calibration::read_json_file(path.string(), "a rank's timeline", "; dtsim-rank writes it");
  const calibration::Reader r(path.string());
  if (r.text(doc, "", "format") != kFormat)
    r.fail("/format", "expected \"" + std::string(kFormat) + "\"");
  if (integer(r, doc, "", "version") != kVersion) {
    r.fail("/version", "expected " + std::to_string(kVersion));
  }
  executor::MeasuredRank m;
  m.rank = static_cast<int>(integer(r, doc, "", "rank"));
  if (m.rank != rank) r.fail("/rank", "expected " + std::to_string(rank));
  m.pid = integer(r, doc, "", "pid");
  const nlohmann::json& clock = r.at(doc, "", "clock");
  m.clock.offset_ns = integer(r, clock, "/clock", "offset_ns");
  m.clock.uncertainty_ns = integer(r, clock, "/clock", "uncertainty_ns");
  m.clock.samples = static_cast<int>(integer(r, clock, "/clock", "samples"));
  m.operand_bytes = integer(r, doc, "", "operand_bytes");
  m.peak_allocated_bytes = integer(r, doc, "", "peak_allocated_bytes");
  const nlohmann::json& tasks = r.at(doc, "", "tasks");
  if (!tasks.is_array()) r.fail("/tasks", "expected an array of task ids");
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!tasks[i].is_number_unsigned()) {
      r.fail("/tasks/" + std::to_string(i), "expected a task id, got " + tasks[i].dump());
    }
    m.tasks.push_back(tasks[i].get<TaskId>());
  }
  const nlohmann::json& steps = r.at(doc, "", "steps");
  if (!steps.is_array()) r.fail("/steps", "expected an array of steps");
  for (size_t s = 0; s < steps.size(); ++s) {
    const std::string at = "/steps/" + std::to_string(s);
    executor::MeasuredStep step;
    step.start_ns = integer(r, steps[s], at, "start_ns");
    const nlohmann::json& spans = r.at(steps[s], at, "spans");
    if (!spans.is_array() || spans.size() != m.tasks.size()) {
      r.fail(at + "/spans",
             "expected one [start_ns, end_ns] per task (" + std::to_string(m.tasks.size()) + ")");
    }
    for (size_t i = 0; i < spans.size(); ++i) {
      const nlohmann::json& p = spans[i];
      if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() ||
          !p[1].is_number_integer() || p[1].get<int64_t>() < p[0].get<int64_t>()) {
        r.fail(at + "/spans/" + std::to_string(i),
               "expected [start_ns, end_ns] with end >= start, got " + p.dump());
      }
      step.tasks.push_back({p[0].get<int64_t>(), p[1].get<int64_t>()});
    }
    const nlohmann::json& ops = r.at(steps[s], at, "op_ns");
    if (!ops.is_array() || ops.size() != m.tasks.size()) {
      r.fail(at + "/op_ns", "expected one array of op durations per task (" +
                                std::to_string(m.tasks.size()) + ")");
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      const std::string here = at + "/op_ns/" + std::to_string(i);
      if (!ops[i].is_array()) r.fail(here, "expected an array of non-negative nanoseconds");
      std::vector<int64_t> durations;
      for (const nlohmann::json& d : ops[i]) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0) {
          r.fail(here, "expected non-negative nanoseconds, got " + d.dump());
        }
        durations.push_back(d.get<int64_t>());
      }
      step.op_ns.push_back(std::move(durations));
    }
    m.steps.push_back(std::move(step));
  }
  if (rank == 0) {
    run.backend = r.text(doc, "", "backend");
    run.library = r.text(doc, "", "library");
    run.blas = r.text(doc, "", "blas");
    run.warmup = static_cast<int>(integer(r, doc, "", "warmup"));
  }
  return m;
}

}  // namespace

executor::MeasuredRun read_rank_timelines(const std::filesystem::path& folder, int ranks) {
  executor::MeasuredRun run;
  for (int rank = 0; rank < ranks; ++rank) {
    run.ranks.push_back(read_rank(rank_timeline_path(folder, rank), rank, run));
  }
  return run;
}

}  // namespace dtsim
