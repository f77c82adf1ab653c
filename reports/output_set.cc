// The output set: lock, stage, journal, rename into place, summary with its manifest last.
#include "reports/output_set.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "reports/sha256.h"

namespace dtsim {

namespace fs = std::filesystem;

namespace {

// A name the set may create or remove: a plain file in the folder, never the lock, the
// journal or a temporary (a manifest edited by hand cannot point outside the folder).
bool is_plain_output_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos && name.rfind(".dtsim", 0) != 0;
}

// The document's last member `member`, read from the file's last 64 KiB: a summary of
// 16,384 ranks is 11 MB and ends with its manifest of a few hundred bytes. A candidate key
// must follow a `{` or a `,` (not an escaped quote inside another key), and the text from
// it to the end must parse as that one member, which only a top-level key's does. Nothing
// when no candidate does (the member is longer than the tail, or absent): the caller then
// reads the whole file.
std::optional<nlohmann::json> read_last_member(const fs::path& path, const char* member) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return std::nullopt;
  constexpr std::streamoff kTail = 64 * 1024;
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - kTail);
  std::string tail(static_cast<size_t>(size - from), '\0');
  if (!in.seekg(from) || !in.read(tail.data(), static_cast<std::streamsize>(tail.size())))
    return std::nullopt;
  const std::string key = "\"" + std::string(member) + "\":";
  for (size_t end = tail.size(); end > 0;) {
    const size_t at = tail.rfind(key, end - 1);
    if (at == std::string::npos || at == 0) return std::nullopt;
    const size_t before = tail.find_last_not_of(" \t\r\n", at - 1);
    if (before != std::string::npos && (tail[before] == '{' || tail[before] == ',')) {
      nlohmann::json doc =
          nlohmann::json::parse("{" + tail.substr(at), nullptr, /*allow_exceptions=*/false);
      if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
      return doc;
    }
    end = at;
  }
  return std::nullopt;
}

// With `only_member`, the top-level object keeps only that member.
std::optional<nlohmann::json> read_json(const fs::path& path, const char* only_member = nullptr) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json::parser_callback_t keep = nullptr;
  if (only_member != nullptr) {
    keep = [only_member](int depth, nlohmann::json::parse_event_t event,
                         nlohmann::json& parsed) {
      return depth != 1 || event != nlohmann::json::parse_event_t::key || parsed == only_member;
    };
  }
  nlohmann::json doc = nlohmann::json::parse(text.str(), keep, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return std::nullopt;
  return doc;
}

// The names an earlier run's summary lists under outputs.files, or its journal under files.
void add_listed_names(const std::optional<nlohmann::json>& doc, const char* outer,
                      std::set<std::string>& names) {
  if (!doc || !doc->is_object()) return;
  const nlohmann::json* files = &*doc;
  if (outer != nullptr) {
    const auto o = doc->find(outer);
    if (o == doc->end() || !o->is_object()) return;
    files = &*o;
  }
  const auto f = files->find("files");
  if (f == files->end()) return;
  if (f->is_object()) {
    for (const auto& [name, entry] : f->items())
      if (is_plain_output_name(name)) names.insert(name);
  } else if (f->is_array()) {
    for (const auto& name : *f)
      if (name.is_string() && is_plain_output_name(name.get<std::string>()))
        names.insert(name.get<std::string>());
  }
}

void remove_or_throw(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
  if (ec) throw std::runtime_error("cannot remove " + path.string() + ": " + ec.message());
}

// Temporaries of writers that no longer run (killed mid-write); a live writer's are kept.
void remove_orphaned_temporaries(const fs::path& folder) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    int owner = 0;
    const std::string name = entry.path().filename().string();
    if (!is_staged_temporary(name, &owner) || owner == ::getpid()) continue;
    if (::kill(owner, 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove(entry.path(), ignored);
    }
  }
}

}  // namespace

OutputSet::OutputSet(fs::path folder, std::string summary_name)
    : folder_(std::move(folder)), summary_name_(std::move(summary_name)) {
  std::error_code ec;
  created_folder_ = !fs::exists(folder_, ec);
  fs::create_directories(folder_, ec);
  if (ec)
    throw std::runtime_error("cannot create the folder " + folder_.string() + ": " + ec.message());
  const fs::path lock = folder_ / kOutputLock;
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0)
    throw std::runtime_error("cannot write to " + folder_.string() + ": " + std::strerror(errno));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (error == EWOULDBLOCK)
      throw std::runtime_error("another dtsim run is writing to " + folder_.string() +
                               " (it holds " + lock.string() +
                               "); wait for it to finish or write to another folder");
    throw std::runtime_error("cannot lock " + lock.string() + ": " + std::strerror(error));
  }
  // The names to replace, from the earlier summary's manifest, its last member: read from
  // the file's end (check_output_set, which vouches for a folder, parses the whole file).
  auto earlier = read_last_member(folder_ / summary_name_, "outputs");
  if (!earlier) earlier = read_json(folder_ / summary_name_, "outputs");
  add_listed_names(earlier, "outputs", earlier_);
  add_listed_names(read_json(folder_ / kOutputJournal), nullptr, earlier_);
  remove_orphaned_temporaries(folder_);
  // libcrypto sets itself up on its first digest (its providers: about 3 MB resident). Done
  // now, before the work whose files it will hash, so that a broken OpenSSL stops the run
  // first and the memory estimate made before lowering sees that memory already held.
  sha256_hex("");
}

OutputSet::~OutputSet() {
  staged_.clear();  // removes the temporaries of a set that was never committed
  // A run that failed before writing anything leaves no folder it made (remove() of a
  // folder that is not empty fails and keeps it).
  if (created_folder_ && !committed_ && lock_fd_ >= 0) {
    std::error_code ignored;
    fs::remove(folder_ / kOutputLock, ignored);
    fs::remove(folder_, ignored);
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void OutputSet::write(const std::string& name, const std::function<void(std::ostream&)>& writer) {
  if (!is_plain_output_name(name) || name == summary_name_)
    throw std::invalid_argument("OutputSet::write: '" + name + "' is not an output name");
  staged_[name] = stage_file(folder_ / name, writer);
}

std::string OutputSet::commit(nlohmann::ordered_json summary, int indent) {
  std::set<std::string> names;
  nlohmann::ordered_json files = nlohmann::ordered_json::object();
  for (const auto& [name, staged] : staged_) {  // by name
    names.insert(name);
    files[name] = {{"bytes", staged.file().bytes}, {"sha256", staged.file().sha256}};
  }
  summary.erase("outputs");
  const std::string run_id = sha256_hex(summary.dump() + "\n" + files.dump()).substr(0, 16);
  summary["outputs"] = {{"run_id", run_id}, {"files", files}};

  // Everything that needs space is staged before anything is replaced: a full disk fails
  // here and leaves the earlier set whole.
  StagedFile summary_file = stage_file(
      folder_ / summary_name_, [&](std::ostream& out) { out << summary.dump(indent) << "\n"; });
  std::set<std::string> journal_names = earlier_;
  journal_names.insert(names.begin(), names.end());
  nlohmann::json journal = {
      {"format", "dtsim-pending-outputs"}, {"summary", summary_name_}, {"files", journal_names}};
  StagedFile journal_file = stage_file(folder_ / kOutputJournal,
                                       [&](std::ostream& out) { out << journal.dump(1) << "\n"; });

  journal_file.commit();
  remove_or_throw(folder_ / summary_name_);
  sync_folder(folder_);
  for (auto& [name, staged] : staged_) staged.commit();
  removed_stale_.clear();
  for (const std::string& name : earlier_) {
    if (names.count(name) != 0) continue;
    if (fs::exists(fs::symlink_status(folder_ / name))) removed_stale_.push_back(name);
    remove_or_throw(folder_ / name);
  }
  sync_folder(folder_);
  summary_file.commit();
  sync_folder(folder_);
  remove_or_throw(folder_ / kOutputJournal);
  staged_.clear();
  earlier_ = names;
  committed_ = true;
  return run_id;
}

OutputSetCheck check_output_set(const fs::path& folder, const std::string& summary_name) {
  OutputSetCheck check;
  const fs::path summary_path = folder / summary_name;
  if (!fs::exists(summary_path)) return check;
  check.has_summary = true;
  const auto summary = read_json(summary_path, "outputs");
  if (!summary || !summary->is_object()) {
    check.problems.push_back(summary_path.string() + " is not a JSON object");
    return check;
  }
  const auto outputs = summary->find("outputs");
  if (outputs == summary->end() || !outputs->is_object() || !outputs->contains("files") ||
      !(*outputs)["files"].is_object()) {
    check.problems.push_back(summary_path.string() + " has no outputs manifest");
    return check;
  }
  check.run_id = outputs->value("run_id", "");
  for (const auto& [name, entry] : (*outputs)["files"].items()) {
    check.files.push_back(name);
    const fs::path path = folder / name;
    if (!is_plain_output_name(name)) {
      check.problems.push_back("the manifest names '" + name + "', which is not a file name");
      continue;
    }
    std::error_code ec;
    const uintmax_t bytes = fs::file_size(path, ec);
    if (ec) {
      check.problems.push_back(name + " is missing");
      continue;
    }
    const uint64_t expected = entry.value("bytes", uint64_t{0});
    if (bytes != expected) {
      check.problems.push_back(name + " has " + std::to_string(bytes) + " bytes, the manifest " +
                               std::to_string(expected));
      continue;
    }
    if (sha256_of_file(path) != entry.value("sha256", ""))
      check.problems.push_back(name + " differs from the manifest's SHA-256");
  }
  return check;
}

}  // namespace dtsim
