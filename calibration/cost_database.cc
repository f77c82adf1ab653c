// The cost database's JSON form, version 3 (versions 1 and 2 are read too).
#include "calibration/cost_database.h"

#include <cmath>
#include <limits>

#include "calibration/json_reader.h"
#include "calibration/link_calibration_json.h"
#include "models/op_signature_json.h"
#include "sim/input_error.h"

namespace dtsim::calibration {

namespace {

using nlohmann::json;

const char* context_name(MeasurementContext c) {
  return c == MeasurementContext::kIsolation ? "isolation" : "in_step";
}

}  // namespace

nlohmann::ordered_json cost_database_to_json(const CostDatabase& db) {
  const DeviceIdentity& d = db.device;
  nlohmann::ordered_json device = {{"backend", d.backend},
                                   {"name", d.name},
                                   {"catalog_name", d.catalog_name},
                                   {"timer", d.timer},
                                   {"measured_at", d.measured_at}};
  if (d.backend == "cpu") {
    device["cores"] = d.cores;
    device["threads"] = d.threads;
    device["co_runners"] = d.co_runners;
    device["reference_s"] = d.reference_s;
    device["clock_mhz"] = d.clock_mhz;
    device["blas"] = d.blas;
  } else {
    device["sm_count"] = d.sm_count;
    device["sm_clock_mhz"] = d.sm_clock_mhz;
    device["memory_clock_mhz"] = d.memory_clock_mhz;
    device["memory_bytes"] = d.memory_bytes;
    device["driver"] = d.driver;
    device["cuda"] = d.cuda;
    device["cublas"] = d.cublas;
    device["cudnn"] = d.cudnn;
    device["nccl"] = d.nccl;
  }
  auto entries = nlohmann::ordered_json::array();
  for (const CostEntry& e : db.entries) {
    nlohmann::ordered_json entry = {{"op", models::op_signature_to_json(e.op)},
                                    {"context", context_name(e.context)},
                                    {"median_s", e.stats.median_s},
                                    {"p20_s", e.stats.p20_s},
                                    {"p80_s", e.stats.p80_s},
                                    {"cv", e.stats.cv},
                                    {"noisy", e.noisy},
                                    {"samples_s", e.samples_s}};
    if (!e.alone_samples_s.empty()) {
      entry["alone"] = {{"median_s", e.alone.median_s},
                        {"p20_s", e.alone.p20_s},
                        {"p80_s", e.alone.p80_s},
                        {"cv", e.alone.cv},
                        {"samples_s", e.alone_samples_s}};
    }
    entries.push_back(std::move(entry));
  }
  auto links = nlohmann::ordered_json::array();
  for (const LinkCalibration& l : db.links) links.push_back(link_calibration_to_json(l));
  return {{"format", kCostDatabaseFormat},
          {"version", kCostDatabaseVersion},
          {"device", device},
          {"entries", entries},
          {"links", links}};
}

CostDatabase cost_database_from_json(const json& doc, const std::string& source) {
  const Reader r(source);
  if (!doc.is_object()) r.fail("", "expected a cost database (a JSON object)");
  if (r.text(doc, "", "format") != kCostDatabaseFormat) {
    r.fail("/format",
           std::string("expected \"") + kCostDatabaseFormat + "\", got " + doc.at("format").dump());
  }
  const json& version = r.at(doc, "", "version");
  if (!version.is_number_integer() || version.get<int>() < 1 ||
      version.get<int>() > kCostDatabaseVersion) {
    r.fail("/version", "this dtsim reads cost databases of versions 1 to " +
                           std::to_string(kCostDatabaseVersion) + ", the file is version " +
                           version.dump() + "; measure again with `dtsim calibrate`");
  }
  CostDatabase db;
  db.version = version.get<int>();
  const json& d = r.at(doc, "", "device");
  DeviceIdentity& id = db.device;
  id.backend = r.text(d, "/device", "backend");
  if (id.backend != "cpu" && id.backend != "cuda") {
    r.fail("/device/backend", "expected \"cpu\" or \"cuda\", got \"" + id.backend + "\"");
  }
  id.name = r.text(d, "/device", "name");
  id.catalog_name = r.text(d, "/device", "catalog_name");
  id.timer = r.text(d, "/device", "timer");
  id.measured_at = r.text_or(d, "measured_at");
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  id.cores = static_cast<int>(r.whole_or(d, "/device", "cores", kMaxInt));
  id.threads = static_cast<int>(r.whole_or(d, "/device", "threads", kMaxInt));
  id.co_runners = static_cast<int>(r.whole_or(d, "/device", "co_runners", kMaxInt));
  id.reference_s = r.number_or(d, "reference_s");
  id.clock_mhz = r.number_or(d, "clock_mhz");
  id.blas = r.text_or(d, "blas");
  id.sm_count = static_cast<int>(r.whole_or(d, "/device", "sm_count", kMaxInt));
  id.sm_clock_mhz = r.number_or(d, "sm_clock_mhz");
  id.memory_clock_mhz = r.number_or(d, "memory_clock_mhz");
  id.memory_bytes = r.whole_or(d, "/device", "memory_bytes", INT64_MAX);
  id.driver = r.text_or(d, "driver");
  id.cuda = r.text_or(d, "cuda");
  id.cublas = r.text_or(d, "cublas");
  id.cudnn = r.text_or(d, "cudnn");
  id.nccl = r.text_or(d, "nccl");
  const json& entries = r.at(doc, "", "entries");
  if (!entries.is_array()) r.fail("/entries", "expected an array of measured ops");
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string at = "/entries/" + std::to_string(i);
    const json& e = entries[i];
    CostEntry entry;
    try {
      entry.op = models::op_signature_from_json(r.at(e, at, "op"));
    } catch (const std::invalid_argument& ex) {
      r.fail(at + "/op", ex.what());
    }
    const std::string context = r.text(e, at, "context");
    if (context != "isolation" && context != "in_step") {
      r.fail(at + "/context", "expected \"isolation\" or \"in_step\", got \"" + context + "\"");
    }
    entry.context =
        context == "isolation" ? MeasurementContext::kIsolation : MeasurementContext::kInStep;
    entry.samples_s = r.seconds(e, at, "samples_s");
    // The statistics are recomputed from the samples: the file's figures are for readers.
    entry.stats = stats_of(entry.samples_s);
    if (const double median = r.number(e, at, "median_s");
        std::abs(median - entry.stats.median_s) > 1e-9 * (1 + median)) {
      r.fail(at + "/median_s",
             "disagrees with the samples' median " + std::to_string(entry.stats.median_s) + " s");
    }
    entry.noisy = r.flag_or(e, at, "noisy");
    if (e.contains("alone")) {
      const json& alone = e.at("alone");
      if (!alone.is_object()) {
        r.fail(at + "/alone", "expected the kernel's timing alone (an object with samples_s)");
      }
      if (entry.context != MeasurementContext::kIsolation) {
        r.fail(at + "/alone", "only a calibration's kernel (context \"isolation\") is timed alone");
      }
      entry.alone_samples_s = r.seconds(alone, at + "/alone", "samples_s");
      entry.alone = stats_of(entry.alone_samples_s);
      if (const double median = r.number(alone, at + "/alone", "median_s");
          std::abs(median - entry.alone.median_s) > 1e-9 * (1 + median)) {
        r.fail(at + "/alone/median_s", "disagrees with the samples' median " +
                                           std::to_string(entry.alone.median_s) + " s");
      }
    }
    db.entries.push_back(std::move(entry));
  }
  if (version.get<int>() >= 2) {
    const json& links = r.at(doc, "", "links");
    if (!links.is_array()) r.fail("/links", "expected an array of measured link classes");
    for (size_t i = 0; i < links.size(); ++i) {
      db.links.push_back(
          link_calibration_from_json(links[i], r, "/links/" + std::to_string(i), true));
    }
  }
  return db;
}

CostDatabase read_cost_database(const std::string& path) {
  const json doc = read_json_file(path, "the cost database",
                                  "; a database is written whole or not at all, so this is not "
                                  "one that `dtsim calibrate` wrote");
  return cost_database_from_json(doc, path);
}

}  // namespace dtsim::calibration
