// dtsim-rank: one rank of `dtsim validate`, launched by mpirun. Each rank loads and lowers
// the scenario exactly as the simulator did (same file, overrides and cost database, so the
// same TaskGraph), runs its own tasks for real for the warm-up and measured steps, and
// writes its timeline on the clock of rank 0.
#include <mpi.h>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "calibration/mpi/mpi_version.h"
#include "executor/cpu_task_work.h"
#include "executor/doorbells.h"
#include "executor/mpi/mpi_communicator.h"
#include "executor/progress_board.h"
#include "executor/rank_executor.h"
#include "executor/rank_plan.h"
#include "kernels/kernel.h"
#include "runner/cpu_quota.h"
#include "runner/rank_timeline_file.h"
#include "runner/scenario_runner.h"
#include "scenarios/loader.h"
#include "sim/input_error.h"

namespace {

struct RankArgs {
  std::string scenario;
  std::vector<std::string> sets;
  dtsim::CostsChoice costs;
  int warmup = 2;
  int iterations = 5;
  int clock_rounds = 50;
  bool pin_core = false;  // pin to the rank-th core this process may use (mpirun did not)
  std::filesystem::path out;
  std::filesystem::path kernel_quota;  // CpuQuotas::folder(), for a KernelQuota (cgroup v1)
};

// --key value pairs, every value checked; the launcher writes them, a user rarely does.
std::optional<RankArgs> parse(int argc, char** argv, std::string& error) {
  RankArgs a;
  if (argc % 2 != 1) {
    error = "options come in --key value pairs";
    return std::nullopt;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const std::string value = argv[i + 1];
    try {
      if (key == "--scenario") {
        a.scenario = value;
      } else if (key == "--set") {
        a.sets.push_back(value);
      } else if (key == "--costs") {
        a.costs.database = value;
      } else if (key == "--costs-device") {
        a.costs.device = value;
      } else if (key == "--warmup") {
        a.warmup = std::stoi(value);
      } else if (key == "--iterations") {
        a.iterations = std::stoi(value);
      } else if (key == "--clock-rounds") {
        a.clock_rounds = std::stoi(value);
      } else if (key == "--out") {
        a.out = value;
      } else if (key == "--pin-core") {
        a.pin_core = value == "1";
      } else if (key == "--kernel-quota") {
        a.kernel_quota = value;
      } else if (key == "--cgroups") {
        // Joined before MPI_Init (main).
      } else {
        throw std::invalid_argument("unknown option " + key);
      }
    } catch (const std::exception& e) {
      error = key + " " + value + ": " + e.what();
      return std::nullopt;
    }
  }
  if (a.scenario.empty() || a.out.empty()) error = "--scenario FILE and --out DIR are required";
  if (a.warmup < 0 || a.iterations < 1 || a.clock_rounds < 1) {
    error = "--warmup must be at least 0, --iterations and --clock-rounds at least 1";
  }
  if (!error.empty()) return std::nullopt;
  return a;
}

std::string message_of(const std::exception& e) {
  if (const auto* ie = dynamic_cast<const dtsim::InputError*>(&e)) {
    std::string text;
    for (const std::string& line : ie->messages()) text += (text.empty() ? "" : "; ") + line;
    return text;
  }
  return e.what();
}

int run_rank(const RankArgs& args, int rank, int ranks) {
  using namespace dtsim;
  executor::ProgressBoard board(rank_progress_path(args.out, rank), rank);
  // One BLAS thread per rank: ranks are pinned one per core, as calibration measured.
  kernels::set_cpu_threads(1);
  Scenario scenario = load_scenario_file(args.scenario, args.sets);
  const LoweredScenario lowered = lower_with_chosen_costs(scenario, args.costs);
  const TaskGraph& graph = lowered.graph;
  if (const int want = executor::graph_ranks(graph); want != ranks) {
    throw std::runtime_error("the scenario's step runs on " + std::to_string(want) +
                             " ranks, mpirun started " + std::to_string(ranks));
  }
  const executor::RankPlan plan = executor::plan_rank(graph, rank);
  executor::Doorbells bells(args.out / "doorbells", ranks, rank);
  executor::MpiCommunicator comm(graph, plan, MPI_COMM_WORLD, bells);
  executor::CpuTaskWork work(graph, plan, comm);
  std::unique_ptr<KernelQuota> quota;
  if (!args.kernel_quota.empty()) {
    quota = std::make_unique<KernelQuota>(args.kernel_quota, rank);
    if (quota->binds()) work.bracket_kernels([&] { quota->enter(); }, [&] { quota->leave(); });
  }
  const executor::ClockOffset clock =
      executor::measure_clock_offset(MPI_COMM_WORLD, args.clock_rounds);
  // A failed task aborts the job at once: the other streams may be blocked in calls that
  // wait for peers, which only the abort ends.
  executor::RankExecutor ex(graph, plan, work, &board, [rank](TaskId id, const std::exception& e) {
    std::fprintf(stderr, "dtsim-rank: rank %d: task %u: %s\n", rank, id, message_of(e).c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  });

  executor::MeasuredRun header;
  header.backend = "cpu";
  header.library = calibration::mpi_library_version();
  header.blas = kernels::cpu_blas_identity();
  header.warmup = args.warmup;
  executor::MeasuredRank me;
  me.rank = rank;
  me.pid = ::getpid();
  me.clock = clock;
  me.tasks = plan.tasks;
  for (int step = 0; step < args.warmup + args.iterations; ++step) {
    board.begin_step(static_cast<uint32_t>(step));
    const executor::StepTimes t = ex.run_step([] { MPI_Barrier(MPI_COMM_WORLD); });
    if (step < args.warmup) continue;
    executor::MeasuredStep s;
    s.start_ns = t.start_ns + clock.offset_ns;
    for (const executor::TaskSpan& span : t.tasks) {
      s.tasks.push_back({span.start_ns + clock.offset_ns, span.end_ns + clock.offset_ns});
    }
    s.op_ns = work.op_times();
    me.steps.push_back(std::move(s));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  me.operand_bytes = work.operand_bytes();
  me.peak_allocated_bytes = work.peak_allocated_bytes();
  write_rank_timeline(rank_timeline_path(args.out, rank), header, me);
  board.mark_done();
  return 0;
}

// Ranks on hosts that are namespaces of one machine: mpirun would bind each to its host's
// core 0, so each pins itself to the rank-th core it may use, before MPI starts its threads.
bool pin_to_rank_core() {
  const char* env = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!env) return false;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
  const int want = std::atoi(env) % std::max(CPU_COUNT(&allowed), 1);
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (seen++ == want) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      return sched_setaffinity(0, sizeof one, &one) == 0;
    }
  }
  return false;
}

}  // namespace

#if defined(__SANITIZE_ADDRESS__)
// Open MPI dlclose()s its components in MPI_Finalize, so LeakSanitizer can neither
// attribute nor suppress what they keep until exit (as for dtsim-comm-probe).
extern "C" const char* __asan_default_options() { return "leak_check_at_exit=0"; }
#endif

int main(int argc, char** argv) {
  // Before MPI starts its threads, so that they are pinned and quota-bound with the rank.
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--pin-core" && std::string(argv[i + 1]) == "1" &&
        !pin_to_rank_core()) {
      std::fprintf(stderr, "dtsim-rank: cannot pin to a core of its own\n");
      return 1;
    }
    if (std::string(argv[i]) == "--cgroups") {
      const char* env = std::getenv("OMPI_COMM_WORLD_RANK");
      if (env == nullptr) {
        std::fprintf(stderr, "dtsim-rank: --cgroups needs mpirun's OMPI_COMM_WORLD_RANK\n");
        return 1;
      }
      if (!dtsim::join_rank_cgroup(argv[i + 1], std::atoi(env))) {
        std::fprintf(stderr, "dtsim-rank: cannot join its CPU quota's cgroup under %s: %s\n",
                     argv[i + 1], std::strerror(errno));
        return 1;
      }
    }
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::string error;
  const std::optional<RankArgs> args = parse(argc, argv, error);
  if (!args || provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) {
      std::fprintf(stderr, "dtsim-rank: %s\n",
                   args ? "this MPI library does not give MPI_THREAD_MULTIPLE, which the stream "
                          "threads need"
                        : error.c_str());
    }
    MPI_Finalize();
    return 2;
  }
  try {
    const int status = run_rank(*args, rank, ranks);
    MPI_Finalize();
    return status;
  } catch (const std::exception& e) {
    // The other ranks may be waiting for this one in a call that never returns: end them all.
    std::fprintf(stderr, "dtsim-rank: rank %d: %s\n", rank, message_of(e).c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return 1;
}
