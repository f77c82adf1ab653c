// Launching dtsim-comm-probe under mpirun, in a scratch folder removed afterwards, and
// reading its samples back into a fitted link calibration.
#include "calibration/collective_probe.h"

#include <algorithm>
#include <stdexcept>

#include "calibration/calibrate.h"
#include "calibration/child_process.h"
#include "calibration/mpirun.h"
#include "calibration/json_reader.h"
#include "calibration/link_calibration_json.h"

namespace dtsim::calibration {

namespace {

// A fresh folder under the system's temporary folder, removed when it goes out of scope.
class ScratchFolder {
 public:
  ScratchFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "dtsim-probe-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("cannot make a scratch folder under " +
                               std::filesystem::temp_directory_path().string());
    }
    path_ = pattern;
  }
  ~ScratchFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

std::vector<std::string> probe_command(const CollectiveProbeOptions& o,
                                       const std::filesystem::path& out) {
  std::vector<std::string> argv =
      mpirun_command(o.ranks, {}, {o.probe.string(), "--out", out.string()});
  for (CollectiveOp op : o.ops)
    argv.insert(argv.end(), {"--op", std::string(collective_op_name(op))});
  const MeasurementPolicy& p = o.policy;
  argv.insert(
      argv.end(),
      {"--min-bytes", std::to_string(o.min_bytes.count()), "--max-bytes",
       std::to_string(o.max_bytes.count()), "--factor", std::to_string(o.factor), "--warmup",
       std::to_string(p.warmup), "--round", std::to_string(p.round), "--max-repeats",
       std::to_string(p.max_repeats), "--target-cv", std::to_string(p.target_cv)});
  return argv;
}

LinkCalibration measure_collectives(const CollectiveProbeOptions& o) {
  if (o.ranks < 2) throw std::runtime_error("--ranks: a collective needs at least 2 ranks");
  if (const int cores = std::max(usable_cores(), 1); o.ranks > cores) {
    throw std::runtime_error("--ranks " + std::to_string(o.ranks) + ": this process may use " +
                             std::to_string(cores) +
                             " cores, and ranks sharing a core would time each other's waits");
  }
  if (!std::filesystem::exists(o.probe)) {
    throw std::runtime_error("the MPI probe " + o.probe.string() +
                             " is not built (this dtsim was configured without MPI: install "
                             "libopenmpi-dev and openmpi-bin, scripts/install-deps.sh)");
  }
  const ScratchFolder scratch;
  const std::filesystem::path out = scratch.path() / "probe.json";
  const ChildResult r =
      run_child(probe_command(o, out), {}, scratch.path() / "mpirun.log", o.deadline, o.stop);
  if (r.end == ChildResult::End::kStopped) return {};
  if (r.end != ChildResult::End::kExited || r.exit_code != 0) {
    throw std::runtime_error(describe_failure("mpirun (dtsim-comm-probe)", r));
  }
  return read_probe_output(out);
}

LinkCalibration read_probe_output(const std::filesystem::path& path) {
  const nlohmann::json doc = read_json_file(path.string(), "the probe's output", "");
  const Reader r(path.string());
  if (r.text(doc, "", "format") != "dtsim-comm-probe") {
    r.fail("/format", "expected \"dtsim-comm-probe\"");
  }
  // The probe runs on one node: its calibration is of the intra-node class, the default.
  return link_calibration_from_json(doc, r, "", false);
}

}  // namespace dtsim::calibration
