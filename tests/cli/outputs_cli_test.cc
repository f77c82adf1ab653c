// dtsim run's outputs as one set: stale files of an earlier run go, a full disk is exit 1
// naming the file and the reason and keeps the earlier set, two runs into one folder cannot
// blend (the second is refused while the first holds the folder's lock).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_helpers.h"

namespace {

using namespace cli_test;

TEST(CliOutputs, TurningTheTraceOffRemovesTheEarlierTraceAndNothingElse) {
  const fs::path out = scratch("outputs_stale");
  const std::string scenario = example("taskgraph-dp-overlap.json");
  ASSERT_EQ(dtsim("run " + scenario + " --quiet --out " + out.string()).exit_code, 0);
  ASSERT_TRUE(fs::exists(out / "trace.json"));
  std::ofstream(out / "notes.txt") << "the user's own\n";
  const Result r = dtsim("run " + scenario + " --set simulation.trace=false --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(out / "trace.json"));
  EXPECT_NE(r.output.find("removed " + (out / "trace.json").string() + ", left by an earlier run"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(slurp(out / "notes.txt"), "the user's own\n");
  const auto summary = nlohmann::json::parse(slurp(out / "summary.json"));
  const auto& files = summary["outputs"]["files"];
  EXPECT_EQ(files.size(), 2u) << files;
  EXPECT_TRUE(files.contains("ranks.csv") && files.contains("links.csv")) << files;
  EXPECT_EQ(files["ranks.csv"]["bytes"], fs::file_size(out / "ranks.csv"));
  EXPECT_EQ(summary["outputs"]["run_id"].get<std::string>().size(), 16u);
}

TEST(CliOutputs, ASecondRunIntoAFolderInUseIsRefused) {
  const fs::path out = scratch("outputs_locked");
  fs::create_directories(out);
  const int fd = ::open((out / ".dtsim.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);  // as a run in progress holds it
  const Result r = dtsim("run " + example("taskgraph-dp-overlap.json") + " --out " + out.string());
  ::close(fd);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("another dtsim run is writing to " + out.string()), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(out / "summary.json"));
  // Once the lock is free the same command runs.
  EXPECT_EQ(dtsim("run " + example("taskgraph-dp-overlap.json") + " --quiet --out " + out.string())
                .exit_code,
            0);
}

TEST(CliOutputs, AFullDiskIsExit1NamingTheFileAndKeepsTheEarlierSet) {
  // A 64 KiB file system in a private mount namespace (root only; skipped elsewhere): the
  // first run (no trace) fits, the second's trace does not.
  const fs::path dir = scratch("outputs_full");
  fs::create_directories(dir / "small");
  const std::string scenario = example("taskgraph-dp-overlap.json");
  const std::string script =
      "set -u; mount -t tmpfs -o size=64k tmpfs " + (dir / "small").string() +
      " || exit 77; o=" + (dir / "small" / "o").string() + "; " + DTSIM_BINARY + " run " +
      scenario + " --quiet --set simulation.trace=false --out $o || exit 78; cp $o/summary.json " +
      (dir / "before.json").string() + "; " + DTSIM_BINARY + " run " + scenario +
      " --quiet --out $o > " + (dir / "second.txt").string() + " 2>&1; echo $? > " +
      (dir / "rc").string() + "; cp $o/summary.json " + (dir / "after.json").string() +
      "; ls -A $o > " + (dir / "ls").string();
  const Result r = run_shell("unshare -m sh -c '" + script + "'");
  if (r.exit_code == 77 || r.output.find("unshare failed") != std::string::npos ||
      r.output.find("Operation not permitted") != std::string::npos)
    GTEST_SKIP() << "cannot mount a small file system here: " << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(slurp(dir / "rc"), "1\n") << slurp(dir / "second.txt");
  const std::string message = slurp(dir / "second.txt");
  EXPECT_NE(message.find("cannot write " + (dir / "small" / "o").string()), std::string::npos)
      << message;
  EXPECT_NE(message.find("No space left on device"), std::string::npos) << message;
  EXPECT_EQ(slurp(dir / "after.json"), slurp(dir / "before.json"));
  EXPECT_EQ(slurp(dir / "ls"), ".dtsim.lock\nlinks.csv\nranks.csv\nsummary.json\n");
}

}  // namespace
