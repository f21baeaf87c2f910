// Copyright 2026 The kbisect Authors.
#include "common/exec/process_group_usage.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kbisect {

void AddStatLine(absl::string_view stat, int process_group, long ticks_per_second,
                 ProcessGroupUsage* usage) {
  // "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
  // stime cutime cstime priority nice threads itrealvalue starttime ...": comm may hold spaces
  // and parentheses, so fields are counted after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == absl::string_view::npos || ticks_per_second <= 0) return;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipEmpty());
  // After comm: [0] state, [2] pgrp, [11] utime, [12] stime, [13] cutime, [14] cstime,
  // [19] starttime.
  if (fields.size() < 20) return;
  int pgrp = 0;
  if (!absl::SimpleAtoi(fields[2], &pgrp) || pgrp != process_group) return;
  int64_t ticks = 0;
  for (int i = 11; i <= 14; ++i) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(fields[i], &value)) return;
    ticks += value;
  }
  ++usage->members;
  if (fields[0] == "R" || fields[0] == "D") ++usage->running;
  usage->cpu += absl::Seconds(static_cast<double>(ticks) / static_cast<double>(ticks_per_second));
  int pid = 0;
  uint64_t start = 0;
  if (absl::SimpleAtoi(stat.substr(0, stat.find(' ')), &pid) && pid == process_group &&
      absl::SimpleAtoi(fields[19], &start)) {
    usage->leader_start_ticks = start;
  }
}

std::map<int, ProcessGroupUsage> SampleProcessGroups(const std::vector<int>& groups) {
  std::map<int, ProcessGroupUsage> usages;
  for (int group : groups) usages[group];
  if (usages.empty()) return usages;
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return usages;
  while (const dirent* entry = readdir(proc)) {
    if (!std::isdigit(static_cast<unsigned char>(entry->d_name[0]))) continue;
    // read(2), not a stream: a process that ends between the open and the read makes the read
    // fail (ESRCH), and libstdc++'s filebuf throws on a failed read whatever the stream's
    // exception mask says.
    const int fd = open(absl::StrCat("/proc/", entry->d_name, "/stat").c_str(), O_RDONLY);
    if (fd < 0) continue;  // The process ended since the scan saw it.
    char buffer[1024];
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    close(fd);
    if (n <= 0) continue;
    const absl::string_view stat(buffer, static_cast<size_t>(n));
    // The group id is the 5th field; only a member of a sampled group is parsed further.
    const size_t after = stat.rfind(')');
    if (after == absl::string_view::npos) continue;
    const std::vector<absl::string_view> head =
        absl::StrSplit(stat.substr(after + 1), absl::MaxSplits(' ', 4), absl::SkipEmpty());
    int group = 0;
    if (head.size() < 3 || !absl::SimpleAtoi(head[2], &group)) continue;
    auto it = usages.find(group);
    if (it != usages.end()) AddStatLine(stat, group, ticks_per_second, &it->second);
  }
  closedir(proc);
  return usages;
}

uint64_t ProcessStartTicks(int pid) {
  if (pid <= 0) return 0;
  const int fd = open(absl::StrCat("/proc/", pid, "/stat").c_str(), O_RDONLY);
  if (fd < 0) return 0;
  char buffer[1024];
  const ssize_t n = read(fd, buffer, sizeof(buffer));
  close(fd);
  if (n <= 0) return 0;
  // Its own group or not, the line's leader start is what AddStatLine reads for pid == group.
  const absl::string_view stat(buffer, static_cast<size_t>(n));
  const size_t after = stat.rfind(')');
  if (after == absl::string_view::npos) return 0;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(after + 1), ' ', absl::SkipEmpty());
  uint64_t start = 0;
  if (fields.size() < 20 || !absl::SimpleAtoi(fields[19], &start)) return 0;
  return start;
}

ProcessGroupUsage SampleProcessGroup(int process_group) {
  if (process_group <= 0) return ProcessGroupUsage();
  return SampleProcessGroups({process_group})[process_group];
}

}  // namespace kbisect
