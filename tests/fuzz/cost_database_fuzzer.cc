// libFuzzer target: a cost database document (what `dtsim calibrate` writes and --costs
// reads) through its reader, then the measured cost model built over it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "calibration/cost_database.h"
#include "calibration/measured_collective_model.h"
#include "calibration/measured_cost_model.h"
#include "models/cost_model.h"
#include "tests/fuzz/fuzz_outcome.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  dtsim::fuzz::expect_clean_outcome([&] {
    const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return;
    const dtsim::calibration::CostDatabase db =
        dtsim::calibration::cost_database_from_json(doc, "fuzz-costs.json");
    const dtsim::calibration::MeasuredCostModel model(
        db, db.device.catalog_name, std::make_unique<dtsim::models::RooflineCostModel>());
    const dtsim::calibration::MeasuredCollectiveModel collectives(db.links, db.device.catalog_name);
    (void)collectives.empty();
  });
  return 0;
}
