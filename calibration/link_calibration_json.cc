// Link calibrations to and from JSON: every sample kept, statistics and fit recomputed on
// reading so the file cannot say something its samples do not.
#include "calibration/link_calibration_json.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace dtsim::calibration {

namespace {

bool agrees(double file, double computed) {
  return std::abs(file - computed) <= 1e-6 * (std::abs(file) + std::abs(computed)) + 1e-15;
}

nlohmann::ordered_json measurements_to_json(const std::vector<CollectiveMeasurement>& all) {
  auto collectives = nlohmann::ordered_json::array();
  for (const CollectiveMeasurement& c : all) {
    auto points = nlohmann::ordered_json::array();
    for (const CollectivePoint& p : c.points) {
      points.push_back({{"bytes", p.bytes.count()},
                        {"median_s", p.stats.median_s},
                        {"p20_s", p.stats.p20_s},
                        {"p80_s", p.stats.p80_s},
                        {"cv", p.stats.cv},
                        {"noisy", p.noisy},
                        {"samples_s", p.samples_s}});
    }
    collectives.push_back({{"op", collective_op_name(c.op)},
                           {"algorithm", algorithm_name(calibrated_algorithm(c.op))},
                           {"points", points}});
  }
  return collectives;
}

// The measured collectives under `key` of `o`: a non-empty array, each a collective op of
// sizes that ascend, every sample kept and its median checked.
std::vector<CollectiveMeasurement> measurements_from_json(const nlohmann::json& o, const Reader& r,
                                                          const std::string& pointer,
                                                          const char* key) {
  std::vector<CollectiveMeasurement> out;
  const nlohmann::json& collectives = r.at(o, pointer, key);
  if (!collectives.is_array() || collectives.empty()) {
    r.fail(pointer + "/" + key, "expected a non-empty array of measured collectives");
  }
  for (size_t i = 0; i < collectives.size(); ++i) {
    const std::string at = pointer + "/" + key + "/" + std::to_string(i);
    const nlohmann::json& c = collectives[i];
    CollectiveMeasurement m;
    const std::string op = r.text(c, at, "op");
    const auto parsed = collective_op_from_name(op);
    if (!parsed) r.fail(at + "/op", "expected a collective (all_reduce, ...), got \"" + op + "\"");
    m.op = *parsed;
    const nlohmann::json& points = r.at(c, at, "points");
    if (!points.is_array() || points.empty()) {
      r.fail(at + "/points", "expected a non-empty array of message sizes");
    }
    for (size_t k = 0; k < points.size(); ++k) {
      const std::string pt = at + "/points/" + std::to_string(k);
      const nlohmann::json& p = points[k];
      CollectivePoint point;
      point.bytes = Bytes(r.whole(p, pt, "bytes", 1, INT64_MAX));
      if (!m.points.empty() && !(m.points.back().bytes < point.bytes)) {
        r.fail(pt + "/bytes", "sizes must ascend");
      }
      point.samples_s = r.seconds(p, pt, "samples_s");
      point.stats = stats_of(point.samples_s);
      if (p.contains("median_s") && !agrees(r.number(p, pt, "median_s"), point.stats.median_s)) {
        r.fail(pt + "/median_s",
               "disagrees with the samples' median " + std::to_string(point.stats.median_s) + " s");
      }
      point.noisy = r.flag_or(p, pt, "noisy");
      m.points.push_back(std::move(point));
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

nlohmann::ordered_json link_calibration_to_json(const LinkCalibration& links) {
  const LinkFit& f = links.fit;
  nlohmann::ordered_json j = {{"class", links.link_class},
                              {"ranks", links.ranks},
                              {"library", links.library},
                              {"fit",
                               {{"base_s", f.base.seconds()},
                                {"hop_s", f.hop.seconds()},
                                {"bandwidth_bytes_per_s", f.bandwidth.bytes_per_second()},
                                {"median_error", f.median_error},
                                {"worst_error", f.worst_error},
                                {"reducing_median_error", f.reducing_median_error}}},
                              {"collectives", measurements_to_json(links.collectives)}};
  if (!links.in_step.empty()) j["in_step"] = measurements_to_json(links.in_step);
  return j;
}

LinkCalibration link_calibration_from_json(const nlohmann::json& o, const Reader& r,
                                           const std::string& pointer, bool with_fit) {
  LinkCalibration links;
  if (with_fit) {
    links.link_class = r.text(o, pointer, "class");
    if (links.link_class != "intra_node" && links.link_class != "inter_node") {
      r.fail(pointer + "/class",
             "expected \"intra_node\" or \"inter_node\", got \"" + links.link_class + "\"");
    }
  }
  links.ranks = static_cast<int>(r.whole(o, pointer, "ranks", 2, std::numeric_limits<int>::max()));
  links.library = r.text(o, pointer, "library");
  links.collectives = measurements_from_json(o, r, pointer, "collectives");
  if (o.contains("in_step")) links.in_step = measurements_from_json(o, r, pointer, "in_step");
  try {
    links.fit = fit_link(links);
  } catch (const std::invalid_argument& e) {
    r.fail(pointer + "/collectives", e.what());
  }
  if (with_fit) {
    const std::string at = pointer + "/fit";
    const nlohmann::json& f = r.at(o, pointer, "fit");
    const auto check = [&](const char* key, double computed) {
      if (!agrees(r.number(f, at, key), computed)) {
        r.fail(at + "/" + key,
               "disagrees with the fit of the samples, " + std::to_string(computed));
      }
    };
    check("base_s", links.fit.base.seconds());
    check("hop_s", links.fit.hop.seconds());
    check("bandwidth_bytes_per_s", links.fit.bandwidth.bytes_per_second());
  }
  return links;
}

}  // namespace dtsim::calibration
