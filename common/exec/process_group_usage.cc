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
  // stime cutime cstime ...": comm may hold spaces and parentheses, so fields are counted after
  // the last ')'.
  const size_t close = stat.rfind(')');
  if (close == absl::string_view::npos || ticks_per_second <= 0) return;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipEmpty());
  // After comm: [0] state, [2] pgrp, [11] utime, [12] stime, [13] cutime, [14] cstime.
  if (fields.size() < 15) return;
  int pgrp = 0;
  if (!absl::SimpleAtoi(fields[2], &pgrp) || pgrp != process_group) return;
  int64_t ticks = 0;
  for (int i = 11; i <= 14; ++i) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(fields[i], &value)) return;
    ticks += value;
  }
  ++usage->members;
  if (fields[0] == "R") ++usage->running;
  usage->cpu += absl::Seconds(static_cast<double>(ticks) / static_cast<double>(ticks_per_second));
}

ProcessGroupUsage SampleProcessGroup(int process_group) {
  ProcessGroupUsage usage;
  if (process_group <= 0) return usage;
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return usage;
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
    AddStatLine(absl::string_view(buffer, static_cast<size_t>(n)), process_group,
                ticks_per_second, &usage);
  }
  closedir(proc);
  return usage;
}

}  // namespace kbisect
