// A rank's timeline file: what dtsim-rank writes reads back whole (tasks, spans, op times,
// clock), and a malformed one is refused naming the file and the field.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runner/rank_timeline_file.h"
#include "sim/input_error.h"

namespace dtsim {
namespace {

std::filesystem::path folder(const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("dtsim-timeline-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

executor::MeasuredRank rank0() {
  executor::MeasuredRank r;
  r.rank = 0;
  r.pid = 1234;
  r.clock = {-250, 40, 50};
  r.tasks = {0, 2};
  r.steps.push_back({1000, {{1000, 5000}, {5000, 6000}}, {{1500, 2500}, {}}});
  r.operand_bytes = 4096;
  r.peak_allocated_bytes = 1 << 20;
  return r;
}

TEST(RankTimelineFile, ReadsBackWhatTheRankWrote) {
  const auto dir = folder("round-trip");
  executor::MeasuredRun header;
  header.backend = "cpu";
  header.library = "Open MPI v4.1.4";
  header.blas = "OpenBLAS";
  header.warmup = 2;
  write_rank_timeline(rank_timeline_path(dir, 0), header, rank0());
  const executor::MeasuredRun run = read_rank_timelines(dir, 1);
  EXPECT_EQ(run.backend, "cpu");
  EXPECT_EQ(run.library, "Open MPI v4.1.4");
  EXPECT_EQ(run.warmup, 2);
  ASSERT_EQ(run.ranks.size(), 1u);
  const executor::MeasuredRank& r = run.ranks[0];
  EXPECT_EQ(r.pid, 1234);
  EXPECT_EQ(r.clock.offset_ns, -250);
  EXPECT_EQ(r.clock.uncertainty_ns, 40);
  EXPECT_EQ(r.tasks, (std::vector<TaskId>{0, 2}));
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].start_ns, 1000);
  EXPECT_EQ(r.steps[0].tasks[0].end_ns, 5000);
  EXPECT_EQ(r.steps[0].op_ns[0], (std::vector<int64_t>{1500, 2500}));
  EXPECT_TRUE(r.steps[0].op_ns[1].empty());
  EXPECT_EQ(r.peak_allocated_bytes, 1 << 20);
  std::filesystem::remove_all(dir);
}

// The InputError's pointer for a file whose text is `text`.
std::string pointer_of(const std::string& text) {
  const auto dir = folder("bad");
  std::ofstream(rank_timeline_path(dir, 0)) << text;
  try {
    read_rank_timelines(dir, 1);
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), rank_timeline_path(dir, 0).string());
    std::filesystem::remove_all(dir);
    return e.problems().at(0).pointer;
  }
  std::filesystem::remove_all(dir);
  return "(accepted)";
}

TEST(RankTimelineFile, RefusesAMalformedFileNamingTheField) {
  EXPECT_EQ(pointer_of("not json"), "");
  EXPECT_EQ(pointer_of(R"({"format": "other"})"), "/format");
  const std::string head =
      R"({"format": "dtsim-rank-timeline", "version": 1, "rank": 0, "pid": 1, "backend": "cpu",
          "library": "x", "blas": "y", "warmup": 0, "operand_bytes": 0, "peak_allocated_bytes": 0,
          "clock": {"offset_ns": 0, "uncertainty_ns": 0, "samples": 1}, "tasks": [0], )";
  EXPECT_EQ(pointer_of(head + R"("steps": [{"start_ns": 0, "spans": [[5, 1]], "op_ns": [[]]}]})"),
            "/steps/0/spans/0");
  EXPECT_EQ(pointer_of(head + R"("steps": [{"start_ns": 0, "spans": [[1, 5]], "op_ns": [[-3]]}]})"),
            "/steps/0/op_ns/0");
  EXPECT_EQ(pointer_of(head + R"("steps": [{"start_ns": 0, "spans": [], "op_ns": []}]})"),
            "/steps/0/spans");
  const auto dir = folder("missing");
  EXPECT_THROW(read_rank_timelines(dir, 1), InputError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dtsim
