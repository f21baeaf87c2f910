// Copyright 2026 The kbisect Authors.
#include "bench/bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "google/protobuf/util/time_util.h"

namespace kbisect_bench {

Shell RunShell(const std::string& command) {
  Shell result{-1, ""};
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.out.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string ShellQuote(const std::string& s) {
  std::string quoted = "'";
  for (char c : s) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string MakeTempDir(const std::string& prefix) {
  std::string path = "/tmp/" + prefix + ".XXXXXX";
  if (mkdtemp(path.data()) == nullptr) return "";
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int CountLines(const std::string& path) {
  const std::string text = ReadFile(path);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

double Seconds(const nlohmann::json& rfc3339) {
  if (!rfc3339.is_string()) return 0;
  google::protobuf::Timestamp t;
  if (!google::protobuf::util::TimeUtil::FromString(rfc3339.get<std::string>(), &t)) return 0;
  return static_cast<double>(t.seconds()) + t.nanos() / 1e9;
}

double DurationSeconds(const nlohmann::json& duration) {
  if (!duration.is_string()) return 0;
  std::string s = duration.get<std::string>();
  if (!s.empty() && s.back() == 's') s.pop_back();
  return std::atof(s.c_str());
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace kbisect_bench
