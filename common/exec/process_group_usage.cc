// Copyright 2026 The kbisect Authors.
#include "common/exec/process_group_usage.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kbisect {

namespace {

// One /proc/<pid>/stat line, the fields read here.
struct StatLine {
  int pid = 0;
  char state = 0;
  int pgrp = 0;
  int64_t ticks = 0;   // utime + stime + cutime + cstime.
  uint64_t start = 0;  // starttime.
};

// "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
// cutime cstime priority nice threads itrealvalue starttime ...": comm may hold spaces and
// parentheses, so fields are counted after the last ')'. nullopt for a line cut short.
std::optional<StatLine> ParseStat(absl::string_view stat) {
  const size_t close = stat.rfind(')');
  if (close == absl::string_view::npos) return std::nullopt;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipEmpty());
  // After comm: [0] state, [2] pgrp, [11] utime, [12] stime, [13] cutime, [14] cstime,
  // [19] starttime.
  StatLine line;
  if (fields.size() < 20 || fields[0].empty() ||
      !absl::SimpleAtoi(stat.substr(0, stat.find(' ')), &line.pid) ||
      !absl::SimpleAtoi(fields[2], &line.pgrp) || !absl::SimpleAtoi(fields[19], &line.start)) {
    return std::nullopt;
  }
  line.state = fields[0][0];
  for (int i = 11; i <= 14; ++i) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(fields[i], &value)) return std::nullopt;
    line.ticks += value;
  }
  return line;
}

// /proc/<pid>/stat of `pid` (a decimal string), or nullopt when the process is gone. read(2),
// not a stream: a process that ends between the open and the read makes the read fail (ESRCH),
// and libstdc++'s filebuf throws on a failed read whatever the stream's exception mask says.
std::optional<StatLine> ReadStat(absl::string_view pid) {
  const int fd = open(absl::StrCat("/proc/", pid, "/stat").c_str(), O_RDONLY);
  if (fd < 0) return std::nullopt;
  char buffer[1024];
  const ssize_t n = read(fd, buffer, sizeof(buffer));
  close(fd);
  if (n <= 0) return std::nullopt;
  return ParseStat(absl::string_view(buffer, static_cast<size_t>(n)));
}

void Add(const StatLine& line, long ticks_per_second, ProcessGroupUsage* usage) {
  ++usage->members;
  if (line.state != 'Z' && line.state != 'X') ++usage->live;
  if (line.state == 'R' || line.state == 'D') ++usage->running;
  usage->cpu +=
      absl::Seconds(static_cast<double>(line.ticks) / static_cast<double>(ticks_per_second));
  if (line.pid == line.pgrp) usage->leader_start_ticks = line.start;
}

}  // namespace

void AddStatLine(absl::string_view stat, int process_group, long ticks_per_second,
                 ProcessGroupUsage* usage) {
  const std::optional<StatLine> line = ParseStat(stat);
  if (!line.has_value() || line->pgrp != process_group || ticks_per_second <= 0) return;
  Add(*line, ticks_per_second, usage);
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
    const std::optional<StatLine> line = ReadStat(entry->d_name);
    if (!line.has_value()) continue;  // The process ended since the scan saw it.
    auto it = usages.find(line->pgrp);
    if (it != usages.end() && ticks_per_second > 0) Add(*line, ticks_per_second, &it->second);
  }
  closedir(proc);
  return usages;
}

uint64_t ProcessStartTicks(int pid) {
  if (pid <= 0) return 0;
  const std::optional<StatLine> line = ReadStat(absl::StrCat(pid));
  return line.has_value() ? line->start : 0;
}

ProcessGroupUsage SampleProcessGroup(int process_group) {
  if (process_group <= 0) return ProcessGroupUsage();
  return SampleProcessGroups({process_group})[process_group];
}

}  // namespace kbisect
