// A run's outputs in one folder, written as one set: every file staged whole first, then
// renamed into place, the summary last carrying a manifest (each file's size and SHA-256,
// and a run id), so that a summary on disk always describes the files beside it.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/atomic_file.h"

namespace dtsim {

// The journal of a set being put in place: the names that may be half-replaced, so that the
// next run into the folder removes them if this one was killed in between.
inline constexpr const char* kOutputJournal = ".dtsim-pending.json";
inline constexpr const char* kOutputLock = ".dtsim.lock";

// Writes one run's outputs into `folder`. Holds the folder's lock (flock on .dtsim.lock)
// from construction to destruction, so two runs into one folder cannot blend their files.
//
// While files are staged (write()), the earlier run's set stays whole and readable. commit()
// then records the journal, removes the earlier summary, renames every staged file into
// place, removes the earlier run's files that this run does not write (only names its
// manifest or journal lists, never other files), writes the summary with the manifest under
// "outputs" and drops the journal. A run killed at any point leaves either a summary whose
// manifest matches every file it lists, or no summary (the folder then holds no result, and
// the journal names the leftovers the next run removes).
class OutputSet {
 public:
  // Creates `folder` and takes its lock; throws std::runtime_error naming the folder when
  // another process holds it. Removes temporaries that killed writers left there. A folder
  // it created is removed again when no set was committed into it.
  OutputSet(std::filesystem::path folder, std::string summary_name);
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  const std::filesystem::path& folder() const { return folder_; }

  // Stages `name` (a plain file name in the folder). Throws naming the file on failure.
  void write(const std::string& name, const std::function<void(std::ostream&)>& writer);

  // Puts the staged files and then `summary` (with its "outputs" manifest added) in place.
  // Returns the run id: a digest of the summary and the manifest, so that reruns with
  // identical outputs (--no-timing) stay byte-identical.
  // `indent` is the summary's JSON indentation.
  std::string commit(nlohmann::ordered_json summary, int indent = 2);

  // The files the earlier run's manifest or journal named that commit() removed.
  const std::vector<std::string>& removed_stale() const { return removed_stale_; }

 private:
  std::filesystem::path folder_;
  std::string summary_name_;
  int lock_fd_ = -1;
  bool created_folder_ = false;  // this run made the folder
  bool committed_ = false;
  std::set<std::string> earlier_;  // names the earlier manifest or journal listed
  std::map<std::string, StagedFile> staged_;  // by name, as the manifest lists them
  std::vector<std::string> removed_stale_;
};

// What a reader finds in a folder: a complete set (the summary's manifest matches every
// file it lists), no result (no summary), or an inconsistent one (the problems say which
// file differs and how).
struct OutputSetCheck {
  bool has_summary = false;
  std::string run_id;
  std::vector<std::string> files;     // the manifest's names
  std::vector<std::string> problems;  // empty for a complete set or no summary
  bool complete() const { return has_summary && problems.empty(); }
};
OutputSetCheck check_output_set(const std::filesystem::path& folder,
                                const std::string& summary_name);

}  // namespace dtsim
