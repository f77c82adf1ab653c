// fork + exec into a new process group, polled until it ends, its deadline passes or a stop
// is requested; then the whole group is ended, never only its leader.
#include "calibration/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace dtsim::calibration {

namespace {

// The signals of a group that has not ended yet, then the wait for its leader.
// Whether a process of group `group` is still alive (a zombie is not: it runs nothing and
// only waits to be reaped by its parent, or by init once its parent is gone).
bool group_alive(pid_t group) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    char state = 0;
    long parent = 0, pgrp = 0;
    rest >> state >> parent >> pgrp;
    if (pgrp == group && state != 'Z' && state != 'X') return true;
  }
  return false;
}

// SIGKILL reaches a process at once but its exit takes a moment (a sanitizer build unmaps
// terabytes of shadow): the run is over only once no process of the group is left.
void kill_group_and_wait(pid_t group) {
  kill(-group, SIGKILL);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (group_alive(group) && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int end_group(pid_t pid) {
  kill(-pid, SIGTERM);
  int status = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > give_up) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Ranks that outlived their launcher are still in the group.
  kill_group_and_wait(pid);
  return status;
}

std::string tail_of(const std::filesystem::path& log, size_t bytes) {
  std::ifstream in(log, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                      const std::filesystem::path& log, std::chrono::milliseconds deadline,
                      std::stop_token stop) {
  if (argv.empty()) throw std::invalid_argument("run_child: no program");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The environment is built before fork: the child may only make async-signal-safe calls.
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const std::string& x : env) replaced = replaced || x.rfind(key, 0) == 0;
    if (!replaced) environment.push_back(entry);
  }
  environment.insert(environment.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (const std::string& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    throw std::runtime_error("cannot write " + log.string() + ": " + std::strerror(errno));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(out);
    throw std::runtime_error(std::string("cannot start ") + argv[0] + ": " + std::strerror(errno));
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    execvpe(args[0], args.data(), envp.data());
    const char* why = "dtsim: cannot execute the program (not in PATH?)\n";
    [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, why, std::strlen(why));
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so the group exists before any signal is sent to it
  close(out);
  ChildResult r;
  const auto until = std::chrono::steady_clock::now() + deadline;
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (stop.stop_requested() || std::chrono::steady_clock::now() > until) {
      r.end = stop.stop_requested() ? ChildResult::End::kStopped : ChildResult::End::kTimedOut;
      end_group(pid);
      r.output = tail_of(log, 8192);
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // The leader is gone; whatever it left in its group goes with it.
  kill_group_and_wait(pid);
  if (WIFEXITED(status)) {
    r.end = ChildResult::End::kExited;
    r.exit_code = WEXITSTATUS(status);
  } else {
    r.end = ChildResult::End::kSignalled;
    r.exit_code = WTERMSIG(status);
  }
  r.output = tail_of(log, 8192);
  return r;
}

std::string describe_failure(const std::string& what, const ChildResult& r) {
  std::string how;
  switch (r.end) {
    case ChildResult::End::kExited:
      how = "exited with status " + std::to_string(r.exit_code);
      break;
    case ChildResult::End::kSignalled:
      how = std::string("was killed by signal ") + strsignal(r.exit_code);
      break;
    case ChildResult::End::kTimedOut:
      how = "did not finish before its deadline and was stopped";
      break;
    case ChildResult::End::kStopped:
      how = "was stopped";
      break;
  }
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return what + " " + how + (out.empty() ? "" : "; its output ends:\n" + out);
}

}  // namespace dtsim::calibration
