// PairMap: what is inserted is found, across growth; what is not is not.
#include "sim/pair_map.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <unordered_map>

namespace dtsim {
namespace {

TEST(PairMap, FindsWhatWasInsertedAcrossGrowth) {
  PairMap<uint64_t> m;
  std::unordered_map<uint64_t, uint64_t> reference;
  EXPECT_EQ(m.find(PairMap<uint64_t>::key(1, 2)), nullptr);
  // Pairs that differ in one half only, as a ring's (src, src + 1) do.
  for (uint32_t a = 0; a < 300; ++a) {
    for (uint32_t b : {a + 1, a + 8, a * 3 + 7}) {
      const uint64_t k = PairMap<uint64_t>::key(a, b);
      if (reference.count(k) > 0) continue;
      reference[k] = a * 1000003ULL + b;
      EXPECT_EQ(m.insert(k, reference[k]), reference[k]);
    }
  }
  EXPECT_EQ(m.size(), reference.size());
  for (const auto& [k, v] : reference) {
    const uint64_t* found = m.find(k);
    ASSERT_NE(found, nullptr) << k;
    EXPECT_EQ(*found, v);
  }
  EXPECT_EQ(m.find(PairMap<uint64_t>::key(2, 1)), nullptr);
  EXPECT_EQ(m.find(PairMap<uint64_t>::key(5000, 5001)), nullptr);
}

TEST(PairMap, KeysOrderTheirHalves) {
  EXPECT_NE(PairMap<int>::key(1, 2), PairMap<int>::key(2, 1));
  EXPECT_EQ(PairMap<int>::key(1, 2), (uint64_t{1} << 32) | 2);
}

TEST(PairMap, RefusesAKeyTwice) {
  PairMap<int> m;
  m.insert(PairMap<int>::key(3, 4), 1);
  EXPECT_THROW(m.insert(PairMap<int>::key(3, 4), 2), InternalError);
  EXPECT_EQ(*m.find(PairMap<int>::key(3, 4)), 1);
}

}  // namespace
}  // namespace dtsim
