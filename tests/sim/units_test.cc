// Unit types and the unit-string parser.
#include <gtest/gtest.h>

#include "sim/unit_parse.h"
#include "sim/units.h"

namespace dtsim {
namespace {

TEST(Units, TransferTimeRoundsUpToWholeNanoseconds) {
  // 1 MiB at 1 GB/s = 1,048,576 ns exactly; 1 byte at 3 B/s = 333,333,333.3 ns -> ...334.
  EXPECT_EQ((MiB(1) / Bandwidth::gb_per_s(1)).count_ns(), 1048576);
  EXPECT_EQ((Bytes(1) / Bandwidth::bytes_per_s(3)).count_ns(), 333333334);
  EXPECT_EQ((Flops(1e12) / FlopRate::tflops(2)).count_ns(), 500000000);
}

TEST(Units, DurationArithmeticIsExact) {
  const Duration d = Duration::us(1.5) + Duration::ns(1);
  EXPECT_EQ(d.count_ns(), 1501);
  EXPECT_EQ((d * 4).count_ns(), 6004);
  EXPECT_TRUE(Duration::infinite().is_infinite());
  EXPECT_LT(Duration::ms(1), Duration::from_seconds(0.0011));
}

TEST(UnitParse, Durations) {
  EXPECT_EQ(parse_duration("1.5us").value->count_ns(), 1500);
  EXPECT_EQ(parse_duration("30 ms").value->count_ns(), 30000000);
  EXPECT_EQ(parse_duration("2s").value->count_ns(), 2000000000);
  EXPECT_EQ(parse_duration("1min").value->count_ns(), 60000000000);
  EXPECT_EQ(parse_duration("250ns").value->count_ns(), 250);
}

TEST(UnitParse, Sizes) {
  EXPECT_EQ(parse_bytes("80GiB").value->count(), 80LL << 30);
  EXPECT_EQ(parse_bytes("1MiB").value->count(), 1 << 20);
  EXPECT_EQ(parse_bytes("1MB").value->count(), 1000000);
  EXPECT_EQ(parse_bytes("8B").value->count(), 8);
  EXPECT_EQ(parse_bytes("1.5KiB").value->count(), 1536);
}

TEST(UnitParse, Bandwidths) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gbps").value->bytes_per_second(), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("25GB/s").value->bytes_per_second(), 25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("10 Gbps").value->bytes_per_second(), 1.25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1GiB/s").value->bytes_per_second(), 1073741824.0);
}

TEST(UnitParse, FlopRatesAndCounts) {
  EXPECT_DOUBLE_EQ(parse_flop_rate("312TFLOPS").value->flops_per_second(), 312e12);
  EXPECT_DOUBLE_EQ(parse_flop_rate("1.5PFLOPS").value->flops_per_second(), 1.5e15);
  EXPECT_DOUBLE_EQ(parse_flops("2TFLOP").value->count(), 2e12);
  EXPECT_DOUBLE_EQ(parse_flops("1000").value->count(), 1000);
}

TEST(UnitParse, ErrorsSayWhatWasExpected) {
  const auto bad_unit = parse_bandwidth("40OGbps");
  ASSERT_FALSE(bad_unit);
  EXPECT_NE(bad_unit.error.find("unknown unit \"OGbps\""), std::string::npos) << bad_unit.error;
  EXPECT_NE(bad_unit.error.find("Gbps"), std::string::npos);

  const auto no_number = parse_bytes("GiB");
  ASSERT_FALSE(no_number);
  EXPECT_NE(no_number.error.find("does not start with a number"), std::string::npos);

  EXPECT_FALSE(parse_duration("-1us"));
  EXPECT_FALSE(parse_duration("5"));  // a duration needs a unit
  EXPECT_FALSE(parse_bandwidth("0Gbps"));
  EXPECT_FALSE(parse_bytes("1 parsec"));
  EXPECT_FALSE(parse_bytes("nanGiB"));
  EXPECT_FALSE(parse_flop_rate("312TFLOP"));  // a count is not a rate
}

TEST(UnitParse, FormattingRoundTripsCommonValues) {
  EXPECT_EQ(format_bytes(MiB(1)), "1MiB");
  EXPECT_EQ(format_bytes(GiB(80)), "80GiB");
  EXPECT_EQ(format_duration(Duration::us(1.5)), "1.5us");
  EXPECT_EQ(format_bandwidth(Bandwidth::gbps(400)), "50GB/s");
  EXPECT_EQ(format_flop_rate(FlopRate::tflops(312)), "312TFLOPS");
}

}  // namespace
}  // namespace dtsim
