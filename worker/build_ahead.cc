// Copyright 2026 The kbisect Authors.
#include "worker/build_ahead.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/build_request.h"

namespace kbisect {
namespace {

// A build ahead's place among the builds waiting for a slot (Task.build_order): after any
// probe's, whose orders are at most 1001.
constexpr int kBuildAheadOrder = 1000000;

// What identifies one build ahead: repository, commit, command and the job's environment.
std::string KeyOf(const v1::Task& task) {
  std::string key;
  for (const std::string* part : {&task.repository(), &task.commit_sha(), &task.build_command()}) {
    absl::StrAppend(&key, part->size(), ":", *part, ",");
  }
  const std::map<std::string, std::string> env(task.env().begin(), task.env().end());
  for (const auto& [name, value] : env) {
    absl::StrAppend(&key, name.size(), ":", name, ",", value.size(), ":", value, ",");
  }
  return key;
}

// Lowers the calling thread's priority by `nice`; the processes it starts inherit it (Linux
// keeps a nice value per thread, and a child starts with its parent thread's).
void LowerThreadPriority(int nice) {
  if (nice <= 0) return;
  const id_t tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int current = getpriority(PRIO_PROCESS, tid);
  if (errno != 0) return;
  (void)setpriority(PRIO_PROCESS, tid, std::min(19, current + nice));
}

}  // namespace

int DefaultBuildAhead(int cores) { return std::max(0, cores / 2 - 1); }

int DefaultBuildAhead() {
  return DefaultBuildAhead(static_cast<int>(std::thread::hardware_concurrency()));
}

BuildAhead::BuildAhead(BuildCache* cache, int max_builds, int nice)
    : cache_(cache), max_builds_(std::max(0, max_builds)), nice_(nice) {
  for (int i = 0; i < max_builds_; ++i) threads_.emplace_back([this] { Loop(); });
}

BuildAhead::~BuildAhead() {
  {
    kbisect::MutexLock lock(&mu_);
    stop_ = true;
    for (auto& [key, running] : running_) running->cancel.Cancel();
  }
  for (std::thread& thread : threads_) thread.join();
}

void BuildAhead::Update(const std::string& source, const std::vector<v1::Task>& hints,
                        const std::vector<std::string>& in_use) {
  kbisect::MutexLock lock(&mu_);
  std::vector<v1::Task>& kept = hints_[source];
  kept.clear();
  for (const v1::Task& hint : hints) {
    if (hint.kind() == v1::PROBE_KIND_BUILD && !hint.build_command().empty()) kept.push_back(hint);
  }
  if (kept.empty()) hints_.erase(source);
  in_use_[source] = std::set<std::string>(in_use.begin(), in_use.end());
  if (in_use.empty()) in_use_.erase(source);
  PruneLocked();
}

BuildAhead::Counts BuildAhead::counts() const {
  kbisect::MutexLock lock(&mu_);
  return counts_;
}

bool BuildAhead::WaitIdle(absl::Duration timeout) const {
  kbisect::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(kbisect::Condition(this, &BuildAhead::IdleLocked), timeout);
}

bool BuildAhead::IdleLocked() const {
  std::string key;
  return running_.empty() && (max_builds_ == 0 || NextLocked(&key) == nullptr);
}

bool BuildAhead::HasWorkLocked() const {
  std::string key;
  return stop_ || NextLocked(&key) != nullptr;
}

std::vector<std::pair<std::string, const v1::Task*>> BuildAhead::WantedLocked() const {
  std::vector<std::pair<std::string, const v1::Task*>> wanted;
  std::set<std::string> seen;
  for (size_t rank = 0;; ++rank) {
    bool any = false;
    for (const auto& [source, hints] : hints_) {
      if (rank >= hints.size()) continue;
      any = true;
      std::string key = KeyOf(hints[rank]);
      if (seen.insert(key).second) wanted.emplace_back(std::move(key), &hints[rank]);
    }
    if (!any) break;
  }
  return wanted;
}

const v1::Task* BuildAhead::NextLocked(std::string* key) const {
  for (auto& [wanted_key, task] : WantedLocked()) {
    if (running_.count(wanted_key) || attempted_.count(wanted_key)) continue;
    bool used = false;
    for (const auto& [source, shas] : in_use_) used = used || shas.count(task->commit_sha()) > 0;
    if (used) continue;  // A slot's task builds (or uses) it itself.
    *key = wanted_key;
    return task;
  }
  return nullptr;
}

void BuildAhead::PruneLocked() {
  std::set<std::string> wanted;
  for (const auto& [key, task] : WantedLocked()) wanted.insert(key);
  for (auto it = attempted_.begin(); it != attempted_.end();) {
    it = wanted.count(*it) ? std::next(it) : attempted_.erase(it);
  }
  for (auto& [key, running] : running_) {
    if (wanted.count(key)) continue;
    bool used = false;
    for (const auto& [source, shas] : in_use_) used = used || shas.count(running->sha) > 0;
    // A probe of this commit is waiting for the build: let it finish.
    if (!used) running->cancel.Cancel();
  }
}

void BuildAhead::Loop() {
  LowerThreadPriority(nice_);
  kbisect::MutexLock lock(&mu_);
  while (true) {
    mu_.Await(kbisect::Condition(this, &BuildAhead::HasWorkLocked));
    if (stop_) return;
    std::string key;
    const v1::Task* next = NextLocked(&key);
    const v1::Task task = *next;  // A copy: the hint lists change while it builds.
    auto running = std::make_unique<Running>();
    running->sha = task.commit_sha();
    Running* mine = running.get();
    running_[key] = std::move(running);
    ++counts_.started;
    counts_.running = static_cast<int>(running_.size());
    counts_.peak_running = std::max(counts_.peak_running, counts_.running);

    mu_.Unlock();
    const BuildStep step = Build(task, &mine->cancel);
    mu_.Lock();

    if (mine->cancel.IsCancelled()) {
      ++counts_.cancelled;
    } else if (step.ok()) {
      ++counts_.built;
      attempted_.insert(key);
    } else {
      ++counts_.failed;
      attempted_.insert(key);
    }
    running_.erase(key);
    counts_.running = static_cast<int>(running_.size());
    PruneLocked();  // Forget the attempt at once if the hint went away meanwhile.
  }
}

BuildStep BuildAhead::Build(const v1::Task& task, const Cancellation* cancel) {
  // What a probe's build gets, less the slot's device variables (not part of the key; a build
  // ahead belongs to no slot).
  const std::map<std::string, std::string> env = TaskEnvironment(task, {});
  BuildRequestOptions options;
  options.env = &env;
  // Behind every build a probe waits for: a build ahead is a guess.
  options.build_order = kBuildAheadOrder;
  // The entry is not held: the build is the result; a probe acquires it when it comes.
  return cache_->Acquire(BuildRequestFor(task, task.commit_sha(), options), cancel, nullptr).step;
}

}  // namespace kbisect
