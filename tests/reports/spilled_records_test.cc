// SpilledRecords: past its buffer, records go to an unnamed temporary file and come back in
// the order they were added, buffered ones last.
#include "reports/spilled_records.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "sim/observer.h"

namespace dtsim {
namespace {

TEST(SpilledRecords, GiveBackEveryRecordInOrderAcrossSpills) {
  SpilledRecords<LinkBusyRecord> records;
  EXPECT_TRUE(records.empty());
  // Three and a half buffers: three spills, half a buffer still in memory.
  const size_t n = SpilledRecords<LinkBusyRecord>::kBuffered * 7 / 2;
  for (size_t i = 0; i < n; ++i) {
    records.push_back(LinkBusyRecord{static_cast<LinkId>(i % 1000),
                                     Time::ns(static_cast<int64_t>(i)),
                                     Time::ns(static_cast<int64_t>(i) + 5), static_cast<double>(i),
                                     static_cast<int64_t>(i % 7)});
  }
  EXPECT_EQ(records.size(), n);
  // Twice: a writer reads them once for the track names and once for the spans.
  for (int pass = 0; pass < 2; ++pass) {
    size_t next = 0;
    bool in_order = true;
    records.for_each([&](const LinkBusyRecord& r) {
      in_order = in_order && r.bytes == static_cast<double>(next) && r.link == next % 1000 &&
                 r.end.count_ns() == static_cast<int64_t>(next) + 5 &&
                 r.rounds == static_cast<int64_t>(next % 7);
      ++next;
    });
    EXPECT_EQ(next, n) << "pass " << pass;
    EXPECT_TRUE(in_order) << "pass " << pass;
  }
}

TEST(SpilledRecords, AFewRecordsStayInMemory) {
  SpilledRecords<LinkBusyRecord> records;
  records.push_back(LinkBusyRecord{3, Time::ns(1), Time::ns(2), 64, 1});
  int seen = 0;
  records.for_each([&](const LinkBusyRecord& r) {
    EXPECT_EQ(r.link, 3u);
    ++seen;
  });
  EXPECT_EQ(seen, 1);
}

}  // namespace
}  // namespace dtsim
