// The output set: files of one run stay together, a killed run leaves the earlier set whole
// or no summary, stale files of an earlier run go, other files stay, two runs cannot blend.
#include "reports/output_set.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "reports/sha256.h"

namespace dtsim {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("dtsim_output_set_" + name);
  fs::remove_all(dir);
  return dir;
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// One run's outputs: a summary naming `tag`, ranks.csv, and trace.json when `trace`.
std::string write_run(const fs::path& dir, const std::string& tag, bool trace) {
  OutputSet set(dir, "summary.json");
  set.write("ranks.csv", [&](std::ostream& o) { o << "rank,time\n0," << tag << "\n"; });
  if (trace)
    set.write("trace.json", [&](std::ostream& o) { o << "{\"run\": \"" << tag << "\"}\n"; });
  return set.commit({{"tag", tag}});
}

TEST(Sha256, MatchesTheStandardTestVector) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(OutputSet, TheSummaryCarriesAManifestThatMatchesTheFiles) {
  const fs::path dir = fresh_dir("manifest");
  const std::string id = write_run(dir, "a", true);
  const auto summary = nlohmann::json::parse(slurp(dir / "summary.json"));
  EXPECT_EQ(summary["tag"], "a");
  EXPECT_EQ(summary["outputs"]["run_id"], id);
  EXPECT_EQ(summary["outputs"]["files"]["ranks.csv"]["sha256"], sha256_of_file(dir / "ranks.csv"));
  EXPECT_EQ(summary["outputs"]["files"]["trace.json"]["bytes"], fs::file_size(dir / "trace.json"));
  const OutputSetCheck check = check_output_set(dir, "summary.json");
  EXPECT_TRUE(check.complete()) << (check.problems.empty() ? "" : check.problems[0]);
  EXPECT_EQ(check.files, (std::vector<std::string>{"ranks.csv", "trace.json"}));
  // No temporaries or journal stay behind; the lock file does.
  EXPECT_EQ(names_in(dir),
            (std::set<std::string>{".dtsim.lock", "ranks.csv", "summary.json", "trace.json"}));
}

TEST(OutputSet, IdenticalOutputsGetTheSameRunIdAndDifferentOnesDoNot) {
  const fs::path dir = fresh_dir("run_id");
  const std::string first = write_run(dir, "a", true);
  const std::string same = write_run(dir, "a", true);
  const std::string other = write_run(dir, "b", true);
  EXPECT_EQ(first, same);
  EXPECT_NE(first, other);
  EXPECT_EQ(first.size(), 16u);
}

TEST(OutputSet, ACheckFindsAFileOfAnotherRun) {
  const fs::path dir = fresh_dir("mixed");
  write_run(dir, "a", true);
  const std::string old_trace = slurp(dir / "trace.json");
  write_run(dir, "b", true);
  std::ofstream(dir / "trace.json", std::ios::binary) << old_trace;
  const OutputSetCheck check = check_output_set(dir, "summary.json");
  EXPECT_FALSE(check.complete());
  ASSERT_EQ(check.problems.size(), 1u);
  EXPECT_NE(check.problems[0].find("trace.json"), std::string::npos) << check.problems[0];
}

TEST(OutputSet, AStaleFileOfTheEarlierRunIsRemovedAndOtherFilesStay) {
  const fs::path dir = fresh_dir("stale");
  write_run(dir, "a", true);
  std::ofstream(dir / "notes.txt") << "mine\n";
  {
    OutputSet set(dir, "summary.json");
    set.write("ranks.csv", [](std::ostream& o) { o << "rank\n"; });
    set.commit({{"tag", "b"}});
    EXPECT_EQ(set.removed_stale(), (std::vector<std::string>{"trace.json"}));
  }
  EXPECT_FALSE(fs::exists(dir / "trace.json"));
  EXPECT_EQ(slurp(dir / "notes.txt"), "mine\n");
  EXPECT_TRUE(check_output_set(dir, "summary.json").complete());
}

// The set reads only the earlier summary's top-level manifest (a 16,384-rank summary is
// mostly per-rank figures): an "outputs" member deeper down names nothing.
TEST(OutputSet, OnlyTheTopLevelManifestOfTheEarlierSummaryCounts) {
  const fs::path dir = fresh_dir("nested_manifest");
  write_run(dir, "a", true);
  nlohmann::json summary = nlohmann::json::parse(slurp(dir / "summary.json"));
  summary["training"] = {{"ranks", {{{"outputs", {{"files", {{"notes.txt", {}}}}}}}}}};
  std::ofstream(dir / "summary.json") << summary.dump(1);
  std::ofstream(dir / "notes.txt") << "mine\n";
  EXPECT_TRUE(check_output_set(dir, "summary.json").complete());
  {
    OutputSet set(dir, "summary.json");
    set.write("ranks.csv", [](std::ostream& o) { o << "rank\n"; });
    set.commit({{"tag", "b"}});
    EXPECT_EQ(set.removed_stale(), (std::vector<std::string>{"trace.json"}));
  }
  EXPECT_EQ(slurp(dir / "notes.txt"), "mine\n");
}

// The manifest is read from the summary's end, behind however many megabytes of figures;
// a manifest longer than the part read there is read from the whole file.
TEST(OutputSet, TheManifestIsFoundBehindMegabytesOfFiguresAndWhenLongerThanTheTail) {
  const fs::path dir = fresh_dir("long_summary");
  {
    OutputSet set(dir, "summary.json");
    set.write("trace.json", [](std::ostream& o) { o << "{}\n"; });
    set.commit({{"figures", std::string(4 << 20, 'x')}});
  }
  {
    OutputSet set(dir, "summary.json");
    set.write("ranks.csv", [](std::ostream& o) { o << "rank\n"; });
    set.commit({{"tag", "b"}});
    EXPECT_EQ(set.removed_stale(), (std::vector<std::string>{"trace.json"}));
  }
  nlohmann::json files = {{"trace.json", nlohmann::json::object()}};
  for (int i = 0; i < 5000; ++i) files["never-written-" + std::to_string(i)] = {{"sha256", "0"}};
  std::ofstream(dir / "summary.json") << nlohmann::json{{"outputs", {{"files", files}}}}.dump(2);
  std::ofstream(dir / "trace.json") << "{}\n";
  ASSERT_GT(fs::file_size(dir / "summary.json"), 64u * 1024);
  OutputSet set(dir, "summary.json");
  set.write("ranks.csv", [](std::ostream& o) { o << "rank\n"; });
  set.commit({{"tag", "c"}});
  EXPECT_FALSE(fs::exists(dir / "trace.json"));
}

// Read from the summary's end, only the top-level manifest counts: not a later key that
// ends in an escaped quote and "outputs". A summary broken before its last 64 KiB is still
// no result to a check, which reads the whole file.
TEST(OutputSet, TheManifestReadFromTheEndIsTheTopLevelOneAndACheckReadsItAll) {
  const fs::path dir = fresh_dir("tail_key");
  fs::create_directories(dir);
  std::ofstream(dir / "notes.txt") << "mine\n";
  std::ofstream(dir / "ranks.csv") << "rank\n";
  std::ofstream(dir / "summary.json")
      << R"({"outputs": {"files": {"ranks.csv": {}}}, "x\"outputs": {"files": {"notes.txt": {}}}})";
  {
    OutputSet set(dir, "summary.json");
    set.write("links.csv", [](std::ostream& o) { o << "link\n"; });
    set.commit({{"tag", "a"}});
    EXPECT_EQ(set.removed_stale(), (std::vector<std::string>{"ranks.csv"}));
  }
  EXPECT_EQ(slurp(dir / "notes.txt"), "mine\n");
  EXPECT_TRUE(check_output_set(dir, "summary.json").complete());
  const std::string whole = slurp(dir / "summary.json");
  std::ofstream(dir / "summary.json") << "not json " << whole;
  const OutputSetCheck broken = check_output_set(dir, "summary.json");
  EXPECT_FALSE(broken.complete());
  ASSERT_EQ(broken.problems.size(), 1u);
  EXPECT_NE(broken.problems[0].find("is not a JSON object"), std::string::npos);
}

TEST(OutputSet, AManifestEditedToPointOutsideTheFolderRemovesNothingThere) {
  const fs::path dir = fresh_dir("outside");
  const fs::path victim = fresh_dir("outside_victim");
  fs::create_directories(victim);
  std::ofstream(victim / "keep.txt") << "keep\n";
  fs::create_directories(dir);
  std::ofstream(dir / "summary.json")
      << R"({"outputs": {"files": {"../dtsim_output_set_outside_victim/keep.txt": {}}}})";
  write_run(dir, "a", false);
  EXPECT_TRUE(fs::exists(victim / "keep.txt"));
}

TEST(OutputSet, ARunThatFailsBeforeCommitLeavesTheEarlierSetWhole) {
  const fs::path dir = fresh_dir("failed");
  write_run(dir, "a", true);
  const std::string summary = slurp(dir / "summary.json");
  EXPECT_THROW(
      {
        OutputSet set(dir, "summary.json");
        set.write("ranks.csv", [](std::ostream& o) { o << "new\n"; });
        set.write("trace.json", [](std::ostream& o) {
          o << "{";
          throw std::runtime_error("the writer stopped");
        });
      },
      std::runtime_error);
  EXPECT_EQ(slurp(dir / "summary.json"), summary);
  EXPECT_TRUE(check_output_set(dir, "summary.json").complete());
  EXPECT_EQ(names_in(dir).size(), 4u);  // no temporary left: lock, summary, ranks, trace
}

TEST(OutputSet, AKilledRunLeavesTheEarlierSetOrNoSummaryAndTheNextRunClearsUp) {
  const fs::path dir = fresh_dir("killed");
  write_run(dir, "a", true);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    OutputSet set(dir, "summary.json");
    set.write("ranks.csv", [](std::ostream& o) { o << "new\n"; });
    set.write("trace.json", [](std::ostream& o) {
      o << "{\"half\": ";
      o.flush();
      raise(SIGKILL);
    });
    _exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  // The earlier set is whole; the killed writer's temporaries are there until the next run.
  EXPECT_TRUE(check_output_set(dir, "summary.json").complete());
  EXPECT_GT(names_in(dir).size(), 4u);
  write_run(dir, "b", false);
  EXPECT_EQ(names_in(dir), (std::set<std::string>{".dtsim.lock", "ranks.csv", "summary.json"}));
}

TEST(OutputSet, ARunThatCommitsNothingLeavesNoFolderItMade) {
  const fs::path dir = fresh_dir("never");
  { OutputSet set(dir, "summary.json"); }
  EXPECT_FALSE(fs::exists(dir));
  fs::create_directories(dir);
  { OutputSet set(dir, "summary.json"); }
  EXPECT_TRUE(fs::exists(dir));  // the user's folder stays
}

TEST(OutputSet, ASecondWriterIntoTheSameFolderIsRefused) {
  const fs::path dir = fresh_dir("locked");
  OutputSet first(dir, "summary.json");
  // flock locks belong to the open file description: a second open in this process
  // conflicts like another process would.
  try {
    OutputSet second(dir, "summary.json");
    FAIL() << "expected a refusal";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("another dtsim run is writing to " + dir.string()),
              std::string::npos)
        << e.what();
  }
}

TEST(OutputSet, AJournalLeftByARunKilledWhileRenamingNamesTheFilesTheNextRunRemoves) {
  const fs::path dir = fresh_dir("journal");
  write_run(dir, "a", true);
  // The state a kill between the renames leaves: the journal, no summary, a new ranks.csv.
  std::ofstream(dir / kOutputJournal) << R"({"files": ["ranks.csv", "trace.json", "extra.csv"]})";
  std::ofstream(dir / "extra.csv") << "from the killed run\n";
  fs::remove(dir / "summary.json");
  EXPECT_FALSE(check_output_set(dir, "summary.json").has_summary);
  write_run(dir, "b", false);
  EXPECT_EQ(names_in(dir), (std::set<std::string>{".dtsim.lock", "ranks.csv", "summary.json"}));
}

}  // namespace
}  // namespace dtsim
