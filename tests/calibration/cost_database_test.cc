// The cost database's JSON form: a round trip keeps every field, and a document of another
// format, version or shape is refused naming the file and the field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "calibration/cost_database.h"
#include "sim/input_error.h"
#include "tests/calibration/measured_figures.h"

namespace dtsim::calibration {
namespace {

CostDatabase sample_database() {
  CostDatabase db;
  db.device.backend = "cpu";
  db.device.name = "Test CPU";
  db.device.catalog_name = "CPU";
  db.device.timer = "steady_clock";
  db.device.measured_at = "2026-12-01T00:00:00Z";
  db.device.cores = 2;
  db.device.threads = 1;
  db.device.co_runners = 1;
  db.device.reference_s = 6.5e-4;
  db.device.clock_mhz = 2450;
  db.device.blas = "OpenBLAS 0.3.21";
  CostEntry gemm;
  gemm.op.name = "mlp.fc1";
  gemm.op.kind = KernelKind::kGemm;
  gemm.op.storage = gemm.op.math = DType::kFp32;
  gemm.op.gemm = {256, 1024, 256, 1, false, true};
  gemm.op.flops = gemm.op.gemm.flops();
  gemm.samples_s = {1.0e-3, 1.1e-3, 0.9e-3};
  gemm.stats = stats_of(gemm.samples_s);
  gemm.alone_samples_s = {0.8e-3, 0.85e-3, 0.9e-3};
  gemm.alone = stats_of(gemm.alone_samples_s);
  CostEntry norm;
  norm.op.kind = KernelKind::kLayerNorm;
  norm.op.pass = OpPass::kBackward;
  norm.op.storage = norm.op.math = DType::kFp32;
  norm.op.rows = 256;
  norm.op.width = 512;
  norm.context = MeasurementContext::kInStep;
  norm.samples_s = {2e-5};
  norm.stats = stats_of(norm.samples_s);
  norm.noisy = true;
  db.entries = {gemm, norm};
  LinkCalibration links;
  links.ranks = 2;
  links.library = "Open MPI v4.1.4";
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kSendRecv}) {
    CollectiveMeasurement m;
    m.op = op;
    for (int64_t bytes : {4096, 65536, 1048576}) {
      const double t =
          2e-6 + static_cast<double>(bytes) / 5e9 * (op == CollectiveOp::kAllReduce ? 1.1 : 1);
      m.points.push_back(figures::point(Bytes(bytes), {t, t * 1.02, t * 0.99}));
    }
    links.collectives.push_back(m);
  }
  links.fit = fit_link(links);
  db.links = {links};
  return db;
}

std::string error_of(const nlohmann::json& doc) {
  try {
    cost_database_from_json(doc, "db.json");
  } catch (const InputError& e) {
    return e.messages().front();
  }
  return "";
}

TEST(CostDatabase, RoundTripsEveryField) {
  const CostDatabase a = sample_database();
  const nlohmann::json doc = nlohmann::json::parse(cost_database_to_json(a).dump());
  EXPECT_EQ(doc["format"], "dtsim-cost-database");
  EXPECT_EQ(doc["version"], 3);
  const CostDatabase b = cost_database_from_json(doc, "db.json");
  EXPECT_EQ(b.device.name, "Test CPU");
  EXPECT_EQ(b.device.catalog_name, "CPU");
  EXPECT_EQ(b.device.cores, 2);
  EXPECT_EQ(b.device.threads, 1);
  EXPECT_EQ(b.device.co_runners, 1);
  EXPECT_DOUBLE_EQ(b.device.reference_s, 6.5e-4);
  EXPECT_EQ(b.device.clock_mhz, 2450);
  EXPECT_EQ(b.device.blas, "OpenBLAS 0.3.21");
  EXPECT_EQ(b.device.measured_at, "2026-12-01T00:00:00Z");
  ASSERT_EQ(b.entries.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(b.entries[i].op, a.entries[i].op);
    EXPECT_EQ(b.entries[i].samples_s, a.entries[i].samples_s);
    EXPECT_EQ(b.entries[i].context, a.entries[i].context);
    EXPECT_EQ(b.entries[i].noisy, a.entries[i].noisy);
    EXPECT_DOUBLE_EQ(b.entries[i].stats.median_s, a.entries[i].stats.median_s);
    EXPECT_EQ(b.entries[i].alone_samples_s, a.entries[i].alone_samples_s);
    EXPECT_DOUBLE_EQ(b.entries[i].alone.median_s, a.entries[i].alone.median_s);
  }
  EXPECT_DOUBLE_EQ(b.entries[0].alone.median_s, 0.85e-3);
  EXPECT_FALSE(doc["entries"][1].contains("alone"));  // the in-step time was not timed alone
  ASSERT_EQ(b.links.size(), 1u);
  const LinkCalibration& l = b.links.front();
  EXPECT_EQ(l.link_class, "intra_node");
  EXPECT_EQ(l.ranks, 2);
  EXPECT_EQ(l.library, "Open MPI v4.1.4");
  ASSERT_EQ(l.collectives.size(), 2u);
  EXPECT_EQ(l.collectives[1].op, CollectiveOp::kSendRecv);
  ASSERT_EQ(l.collectives[0].points.size(), 3u);
  EXPECT_EQ(l.collectives[0].points[2].bytes, Bytes(1048576));
  EXPECT_EQ(l.collectives[0].points[2].samples_s, a.links[0].collectives[0].points[2].samples_s);
  EXPECT_EQ(l.fit.base, a.links[0].fit.base);
  EXPECT_EQ(l.fit.hop, a.links[0].fit.hop);
  EXPECT_DOUBLE_EQ(l.fit.bandwidth.bytes_per_second(), a.links[0].fit.bandwidth.bytes_per_second());
}

TEST(CostDatabase, KeepsTheCallsTimedInsideStepsAndChecksThemLikeTheProbes) {
  CostDatabase a = sample_database();
  EXPECT_FALSE(cost_database_to_json(a)["links"][0].contains("in_step"));  // none: no key
  CollectiveMeasurement in_step;
  in_step.op = CollectiveOp::kAllReduce;
  in_step.points = {figures::point(Bytes(65536), {4e-5, 5e-5, 6e-5}),
                    figures::point(Bytes(524288), {4.6e-4, 5e-4})};
  a.links[0].in_step = {in_step};
  const nlohmann::json doc = nlohmann::json::parse(cost_database_to_json(a).dump());
  const CostDatabase b = cost_database_from_json(doc, "db.json");
  ASSERT_EQ(b.links[0].in_step.size(), 1u);
  EXPECT_EQ(b.links[0].in_step[0].op, CollectiveOp::kAllReduce);
  ASSERT_EQ(b.links[0].in_step[0].points.size(), 2u);
  EXPECT_EQ(b.links[0].in_step[0].points[1].bytes, Bytes(524288));
  EXPECT_EQ(b.links[0].in_step[0].points[0].samples_s, in_step.points[0].samples_s);
  EXPECT_DOUBLE_EQ(b.links[0].in_step[0].points[0].stats.median_s, 5e-5);
  // The fit is the probe's alone: in-step calls do not move it.
  EXPECT_EQ(b.links[0].fit.base, a.links[0].fit.base);
  EXPECT_DOUBLE_EQ(b.links[0].fit.bandwidth.bytes_per_second(),
                   a.links[0].fit.bandwidth.bytes_per_second());
  nlohmann::json order = doc;
  std::swap(order["links"][0]["in_step"][0]["points"][0],
            order["links"][0]["in_step"][0]["points"][1]);
  EXPECT_NE(error_of(order).find("db.json: /links/0/in_step/0/points/1/bytes: sizes must ascend"),
            std::string::npos)
      << error_of(order);
  nlohmann::json empty = doc;
  empty["links"][0]["in_step"] = nlohmann::json::array();
  EXPECT_NE(error_of(empty).find("/links/0/in_step: expected a non-empty array of measured "
                                 "collectives"),
            std::string::npos)
      << error_of(empty);
}

TEST(CostDatabase, ReadsVersionOneWithoutLinks) {
  nlohmann::json doc = nlohmann::json::parse(cost_database_to_json(sample_database()).dump());
  doc["version"] = 1;
  doc.erase("links");
  doc["device"].erase("co_runners");
  doc["device"].erase("reference_s");
  const CostDatabase db = cost_database_from_json(doc, "db.json");
  EXPECT_EQ(db.entries.size(), 2u);
  EXPECT_TRUE(db.links.empty());
  // A database from before co-runners timed every kernel alone, and took no reference.
  EXPECT_EQ(db.device.co_runners, 0);
  EXPECT_EQ(db.device.reference_s, 0);
}

TEST(CostDatabase, ReadsVersionTwoWithoutAloneTimes) {
  nlohmann::json doc = nlohmann::json::parse(cost_database_to_json(sample_database()).dump());
  doc["version"] = 2;
  doc["entries"][0].erase("alone");
  const CostDatabase db = cost_database_from_json(doc, "db.json");
  ASSERT_EQ(db.entries.size(), 2u);
  EXPECT_TRUE(db.entries[0].alone_samples_s.empty());
  EXPECT_EQ(db.entries[0].alone.count, 0);
}

TEST(CostDatabase, RefusesAloneTimesThatAreNotAKernelsOwnNamingTheField) {
  const nlohmann::json good =
      nlohmann::json::parse(cost_database_to_json(sample_database()).dump());
  nlohmann::json doc = good;
  doc["entries"][0]["alone"]["median_s"] = 1.0;
  EXPECT_NE(error_of(doc).find("/entries/0/alone/median_s"), std::string::npos) << error_of(doc);
  doc = good;
  doc["entries"][0]["alone"]["samples_s"] = nlohmann::json::array();
  EXPECT_NE(error_of(doc).find("/entries/0/alone/samples_s"), std::string::npos) << error_of(doc);
  doc = good;
  doc["entries"][0]["alone"] = 0.85e-3;
  EXPECT_NE(error_of(doc).find("/entries/0/alone"), std::string::npos) << error_of(doc);
  doc = good;
  doc["entries"][1]["alone"] = good["entries"][0]["alone"];
  EXPECT_NE(error_of(doc).find("only a calibration's kernel"), std::string::npos) << error_of(doc);
}

TEST(CostDatabase, RefusesLinksWhoseFiguresTheSamplesDoNotGive) {
  const nlohmann::json doc = nlohmann::json::parse(cost_database_to_json(sample_database()).dump());
  nlohmann::json fit = doc;
  fit["links"][0]["fit"]["bandwidth_bytes_per_s"] = 1e12;  // edited by hand
  EXPECT_NE(error_of(fit).find("db.json: /links/0/fit/bandwidth_bytes_per_s: disagrees with the "
                               "fit of the samples"),
            std::string::npos)
      << error_of(fit);
  nlohmann::json median = doc;
  median["links"][0]["collectives"][0]["points"][1]["median_s"] = 1.0;
  EXPECT_NE(error_of(median).find("/links/0/collectives/0/points/1/median_s: disagrees with the "
                                  "samples' median"),
            std::string::npos);
  nlohmann::json op = doc;
  op["links"][0]["collectives"][1]["op"] = "gossip";
  EXPECT_NE(error_of(op).find("/links/0/collectives/1/op: expected a collective"),
            std::string::npos);
  nlohmann::json order = doc;
  std::swap(order["links"][0]["collectives"][0]["points"][0],
            order["links"][0]["collectives"][0]["points"][2]);
  EXPECT_NE(error_of(order).find("/links/0/collectives/0/points/1/bytes: sizes must ascend"),
            std::string::npos)
      << error_of(order);
  nlohmann::json cls = doc;
  cls["links"][0]["class"] = "wan";
  EXPECT_NE(error_of(cls).find("/links/0/class: expected \"intra_node\" or \"inter_node\""),
            std::string::npos);
  nlohmann::json missing = doc;
  missing.erase("links");
  EXPECT_NE(error_of(missing).find("db.json: /links: missing"), std::string::npos);
}

TEST(CostDatabase, RefusesAnotherVersionOrFormatNamingTheField) {
  nlohmann::json doc = nlohmann::json::parse(cost_database_to_json(sample_database()).dump());
  nlohmann::json v4 = doc;
  v4["version"] = 4;
  EXPECT_NE(error_of(v4).find("db.json: /version: this dtsim reads cost databases of versions 1 "
                              "to 3, the file is version 4"),
            std::string::npos)
      << error_of(v4);
  nlohmann::json other = doc;
  other["format"] = "dtsim-lowered-graph";
  EXPECT_NE(error_of(other).find("db.json: /format: expected \"dtsim-cost-database\""),
            std::string::npos);
  nlohmann::json missing = doc;
  missing["entries"][0].erase("samples_s");
  EXPECT_NE(error_of(missing).find("db.json: /entries/0/samples_s: missing"), std::string::npos);
  nlohmann::json negative = doc;
  negative["entries"][1]["samples_s"] = {-1.0};
  EXPECT_NE(error_of(negative).find("/entries/1/samples_s: expected non-negative numbers"),
            std::string::npos);
  nlohmann::json edited = doc;
  edited["entries"][0]["median_s"] = 5.0;  // a figure edited by hand, not the samples'
  EXPECT_NE(error_of(edited).find("/entries/0/median_s: disagrees with the samples' median"),
            std::string::npos);
  nlohmann::json backend = doc;
  backend["device"]["backend"] = "tpu";
  EXPECT_NE(error_of(backend).find("/device/backend: expected \"cpu\" or \"cuda\""),
            std::string::npos);
  nlohmann::json op = doc;
  op["entries"][0]["op"]["kind"] = "fft";
  EXPECT_NE(error_of(op).find("db.json: /entries/0/op: "), std::string::npos) << error_of(op);
}

// Found by reading the reader when the cost-database fuzz target was added: a "noisy"
// that is not a boolean let nlohmann's type_error escape, and a count or size beyond an
// integer (cores 1e300, ranks 1e300, bytes 1e300) was cast to one, which is undefined
// (UBSan: "1e+300 is outside the range of representable values of type 'int'").
TEST(CostDatabase, RefusesFlagsAndCountsOfTheWrongKindAtTheirField) {
  const nlohmann::json doc = nlohmann::json::parse(cost_database_to_json(sample_database()).dump());
  nlohmann::json noisy = doc;
  noisy["entries"][0]["noisy"] = 3;
  EXPECT_NE(error_of(noisy).find("db.json: /entries/0/noisy: expected true or false, got 3"),
            std::string::npos)
      << error_of(noisy);
  nlohmann::json point_noisy = doc;
  point_noisy["links"][0]["collectives"][0]["points"][0]["noisy"] = "yes";
  EXPECT_NE(error_of(point_noisy)
                .find("/links/0/collectives/0/points/0/noisy: expected true or "
                      "false"),
            std::string::npos)
      << error_of(point_noisy);
  nlohmann::json cores = doc;
  cores["device"]["cores"] = 1e300;
  EXPECT_NE(error_of(cores).find("/device/cores: expected a whole number from 0 to 2147483647"),
            std::string::npos)
      << error_of(cores);
  nlohmann::json ranks = doc;
  ranks["links"][0]["ranks"] = 1e300;
  EXPECT_NE(error_of(ranks).find("/links/0/ranks: expected a whole number from 2 to"),
            std::string::npos)
      << error_of(ranks);
  nlohmann::json bytes = doc;
  bytes["links"][0]["collectives"][0]["points"][2]["bytes"] = 1e300;
  EXPECT_NE(error_of(bytes).find("/links/0/collectives/0/points/2/bytes: expected a whole number "
                                 "from 1 to 9007199254740992"),
            std::string::npos)
      << error_of(bytes);
}

TEST(CostDatabase, AFileCutShortIsNotADatabase) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "dtsim_cost_db_test";
  std::filesystem::create_directories(dir);
  const std::string text = cost_database_to_json(sample_database()).dump(1);
  std::ofstream(dir / "cut.json") << text.substr(0, text.size() / 2);
  try {
    read_cost_database((dir / "cut.json").string());
    FAIL() << "a truncated database was read";
  } catch (const InputError& e) {
    EXPECT_NE(e.messages().front().find("cut.json: not a JSON document"), std::string::npos)
        << e.messages().front();
  }
  EXPECT_THROW(read_cost_database((dir / "absent.json").string()), InputError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dtsim::calibration
