// dtsim-comm-probe: the MPI program `dtsim calibrate --collectives` launches with mpirun.
// Every rank runs each collective at each message size; a sample is the slowest rank's time
// of a call after a barrier (nccl-tests' way), and rank 0 writes every sample as JSON.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/mpi/mpi_version.h"
#include "calibration/sample_stats.h"
#include "sim/collectives/collective_plan.h"

namespace {

using dtsim::CollectiveOp;

struct ProbeArgs {
  std::string out;
  std::vector<CollectiveOp> ops;
  int64_t min_bytes = 4096;
  int64_t max_bytes = 64 << 20;
  int factor = 4;
  int warmup = 2;
  int round = 5;
  int max_repeats = 40;
  double target_cv = 0.05;
  double min_sample_s = 1e-4;  // a sample averages enough calls to last at least this long
};

// --key value pairs, every value checked; the launcher writes them, a user rarely does.
std::optional<ProbeArgs> parse(int argc, char** argv, std::string& error) {
  ProbeArgs a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const std::string value = argv[i + 1];
    try {
      if (key == "--out") {
        a.out = value;
      } else if (key == "--op") {
        const auto op = dtsim::collective_op_from_name(value);
        if (!op) throw std::invalid_argument("unknown collective \"" + value + "\"");
        a.ops.push_back(*op);
      } else if (key == "--min-bytes") {
        a.min_bytes = std::stoll(value);
      } else if (key == "--max-bytes") {
        a.max_bytes = std::stoll(value);
      } else if (key == "--factor") {
        a.factor = std::stoi(value);
      } else if (key == "--warmup") {
        a.warmup = std::stoi(value);
      } else if (key == "--round") {
        a.round = std::stoi(value);
      } else if (key == "--max-repeats") {
        a.max_repeats = std::stoi(value);
      } else if (key == "--target-cv") {
        a.target_cv = std::stod(value);
      } else {
        throw std::invalid_argument("unknown option " + key);
      }
    } catch (const std::exception& e) {
      error = key + " " + value + ": " + e.what();
      return std::nullopt;
    }
  }
  if (argc % 2 != 1) error = "options come in --key value pairs";
  if (a.out.empty()) error = "--out FILE is required";
  if (a.ops.empty()) error = "name at least one --op";
  if (a.min_bytes <= 0 || a.max_bytes < a.min_bytes || a.factor < 2 || a.round < 2 ||
      a.max_repeats < a.round || a.warmup < 0) {
    error = "sizes, factor, round and repeats must be positive and ordered";
  }
  if (!error.empty()) return std::nullopt;
  return a;
}

class Probe {
 public:
  Probe(int rank, int ranks, int64_t max_bytes)
      : rank_(rank),
        ranks_(ranks),
        send_(elements(max_bytes), 1.0F),
        recv_(elements(max_bytes), 0.0F) {}

  // One call of `op` moving `bytes` (a multiple of 4 x ranks), nccl-tests' size: the whole
  // buffer of all-reduce, broadcast and send/recv, the gathered or scattered whole of
  // all-gather and reduce-scatter, every rank's whole send buffer of all-to-all.
  void call(CollectiveOp op, int64_t bytes) {
    const int n = static_cast<int>(bytes / 4);
    const int part = n / ranks_;
    float* s = send_.data();
    float* r = recv_.data();
    switch (op) {
      case CollectiveOp::kAllReduce:
        MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case CollectiveOp::kReduceScatter:
        MPI_Reduce_scatter_block(s, r, part, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case CollectiveOp::kAllGather:
        MPI_Allgather(s, part, MPI_FLOAT, r, part, MPI_FLOAT, MPI_COMM_WORLD);
        break;
      case CollectiveOp::kAllToAll:
        MPI_Alltoall(s, part, MPI_FLOAT, r, part, MPI_FLOAT, MPI_COMM_WORLD);
        break;
      case CollectiveOp::kBroadcast:
        MPI_Bcast(s, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
        break;
      case CollectiveOp::kReduce:
        MPI_Reduce(s, r, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
      case CollectiveOp::kSendRecv:
        // dtsim's send/recv: members exchange in pairs, 0 -> 1, 2 -> 3, ...
        if (rank_ % 2 == 0 && rank_ + 1 < ranks_) {
          MPI_Send(s, n, MPI_FLOAT, rank_ + 1, 0, MPI_COMM_WORLD);
        } else if (rank_ % 2 == 1) {
          MPI_Recv(r, n, MPI_FLOAT, rank_ - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        break;
    }
  }

  // The slowest rank's mean time of `calls` calls after a barrier; the same on every rank.
  double sample(CollectiveOp op, int64_t bytes, int calls) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < calls; ++i) call(op, bytes);
    double mine = (MPI_Wtime() - t0) / calls;
    double slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
  }

 private:
  static size_t elements(int64_t bytes) { return static_cast<size_t>(bytes / 4); }
  int rank_;
  int ranks_;
  std::vector<float> send_;
  std::vector<float> recv_;
};

// Warm-up, then rounds until one round's spread is under the target (every rank sees the
// same samples, so every rank decides alike), as calibration/measure.h does for kernels.
nlohmann::ordered_json measure_point(Probe& probe, CollectiveOp op, int64_t bytes,
                                     const ProbeArgs& a) {
  const double first = probe.sample(op, bytes, 1);
  const int calls =
      std::clamp(static_cast<int>(std::ceil(a.min_sample_s / std::max(first, 1e-9))), 1, 1000);
  for (int i = 0; i < a.warmup; ++i) probe.sample(op, bytes, calls);
  std::vector<double> samples;
  bool noisy = false;
  while (true) {
    std::vector<double> round;
    for (int i = 0; i < a.round; ++i) round.push_back(probe.sample(op, bytes, calls));
    samples.insert(samples.end(), round.begin(), round.end());
    if (dtsim::calibration::stats_of(round).cv <= a.target_cv) break;
    if (static_cast<int>(samples.size()) >= a.max_repeats) {
      noisy = true;
      break;
    }
  }
  return {{"bytes", bytes}, {"calls_per_sample", calls}, {"noisy", noisy}, {"samples_s", samples}};
}

}  // namespace

#if defined(__SANITIZE_ADDRESS__)
// Open MPI dlclose()s its components in MPI_Finalize, so LeakSanitizer can neither
// attribute nor suppress what they keep until exit: this process is not leak-checked at
// exit (sanitizer builds only; ASAN_OPTIONS from the environment still adds its own keys).
extern "C" const char* __asan_default_options() { return "leak_check_at_exit=0"; }
#endif

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::string error;
  const std::optional<ProbeArgs> args = parse(argc, argv, error);
  if (!args || ranks < 2) {
    if (rank == 0) {
      std::fprintf(stderr, "dtsim-comm-probe: %s\n",
                   args ? "run it on at least 2 ranks (mpirun -np 2)" : error.c_str());
    }
    MPI_Finalize();
    return 2;
  }
  Probe probe(rank, ranks, args->max_bytes);
  auto collectives = nlohmann::ordered_json::array();
  const int64_t unit = 4LL * ranks;  // whole fp32 elements for every rank's part
  for (CollectiveOp op : args->ops) {
    auto points = nlohmann::ordered_json::array();
    for (int64_t size = args->min_bytes; size <= args->max_bytes; size *= args->factor) {
      const int64_t bytes = std::max(unit, size / unit * unit);
      points.push_back(measure_point(probe, op, bytes, *args));
    }
    collectives.push_back({{"op", dtsim::collective_op_name(op)}, {"points", points}});
  }
  int status = 0;
  if (rank == 0) {
    const nlohmann::ordered_json doc = {{"format", "dtsim-comm-probe"},
                                        {"library", dtsim::calibration::mpi_library_version()},
                                        {"ranks", ranks},
                                        {"collectives", collectives}};
    std::ofstream out(args->out, std::ios::binary);
    out << doc.dump(1) << "\n";
    out.close();
    if (!out) {
      std::fprintf(stderr, "dtsim-comm-probe: cannot write %s\n", args->out.c_str());
      status = 1;
    }
  }
  MPI_Finalize();
  return status;
}
