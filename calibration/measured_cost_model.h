// The measured cost model: op signatures priced from a cost database, exactly where the
// kernel was measured, interpolated between measured sizes of its family, extrapolated
// beyond them, and by the roofline where the database has nothing of its family or the
// device is not the one it measured.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "calibration/cost_database.h"
#include "calibration/measured_curve.h"
#include "sim/cost_model.h"

namespace dtsim::calibration {

class MeasuredCostModel final : public CostModel {
 public:
  // Prices ops on devices whose spec is named `device` (DeviceSpec::name; the database's
  // catalog_name unless the user maps it to another) from `db`, and everything else by
  // `fallback`.
  MeasuredCostModel(const CostDatabase& db, std::string device,
                    std::unique_ptr<CostModel> fallback);
  std::string name() const override { return "measured"; }
  OpCost price(const OpSignature& op, const DeviceSpec& device) const override;
  bool prices_crowding() const override { return co_runners_ > 0 || fallback_->prices_crowding(); }
  const std::string& device() const { return device_; }

 private:
  struct Exact {
    double median_s = 0;
    double alone_s = 0;  // 0: not timed alone
  };
  std::string device_;
  std::unique_ptr<CostModel> fallback_;
  int co_runners_ = 0;  // the database's kernels were timed beside this many (and alone)
  std::map<std::string, Exact> exact_;                 // by cost key
  std::map<std::string, MeasuredCurve> family_;        // time against work
  std::map<std::string, MeasuredCurve> alone_family_;  // the same alone, where every member was
};

// One held-out check: the entry's measured median against what the model built from the
// other entries predicts for it by interpolation.
struct HoldoutError {
  OpSignature op;
  double measured_s = 0;
  double predicted_s = 0;
  double error = 0;  // predicted / measured - 1
};

// Holds out every `every`-th entry of each family (ordered by work) that has a measured
// size below and above it, and predicts it from the rest.
std::vector<HoldoutError> holdout_errors(const CostDatabase& db, int every = 5);

}  // namespace dtsim::calibration
