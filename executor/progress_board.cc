// ProgressBoard: a 64-byte record in a MAP_SHARED file, updated with relaxed atomics.
#include "executor/progress_board.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>

#include "executor/shared_file.h"

namespace dtsim::executor {

namespace {
constexpr uint32_t kMagic = 0x64747062;  // "dtpb"
}

struct ProgressBoard::Cells {
  uint32_t magic;
  int32_t rank;
  int64_t pid;
  uint32_t step;
  uint32_t last_started;
  uint32_t last_finished;
  uint32_t started;
  uint32_t finished;
  uint32_t done;
  uint32_t reserved[6];
};
static_assert(sizeof(ProgressBoard::Cells) == 64);

namespace {
void store(uint32_t& cell, uint32_t value) {
  std::atomic_ref<uint32_t>(cell).store(value, std::memory_order_relaxed);
}
uint32_t bump(uint32_t& cell) {
  return std::atomic_ref<uint32_t>(cell).fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

ProgressBoard::ProgressBoard(const std::filesystem::path& path, int rank) {
  cells_ = static_cast<Cells*>(map_shared_file(path, sizeof(Cells), true, "the progress file"));
  std::memset(cells_, 0, sizeof(Cells));
  cells_->rank = rank;
  cells_->pid = ::getpid();
  cells_->last_started = kNoTask;
  cells_->last_finished = kNoTask;
  std::atomic_ref<uint32_t>(cells_->magic).store(kMagic, std::memory_order_release);
}

ProgressBoard::~ProgressBoard() { unmap_shared_file(cells_, sizeof(Cells)); }

void ProgressBoard::begin_step(uint32_t step_index) {
  store(cells_->started, 0);
  store(cells_->finished, 0);
  store(cells_->step, step_index + 1);
}

void ProgressBoard::mark_done() { store(cells_->done, 1); }

void ProgressBoard::started(TaskId id) {
  store(cells_->last_started, id);
  bump(cells_->started);
}

void ProgressBoard::finished(TaskId id) {
  store(cells_->last_finished, id);
  bump(cells_->finished);
}

std::optional<RankProgress> read_progress(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  ProgressBoard::Cells c{};
  if (!in.read(reinterpret_cast<char*>(&c), sizeof c) || c.magic != kMagic) return std::nullopt;
  RankProgress p;
  p.rank = c.rank;
  p.pid = c.pid;
  p.step = c.step;
  p.last_started = c.last_started;
  p.last_finished = c.last_finished;
  p.started = c.started;
  p.finished = c.finished;
  p.done = c.done != 0;
  return p;
}

}  // namespace dtsim::executor
