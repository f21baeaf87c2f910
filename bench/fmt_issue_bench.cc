// Copyright 2026 The kbisect Authors.
#include "bench/fmt_issue_bench.h"

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace kbisect_bench {

std::string WriteFmtIssueBench(const std::string& dir) {
  const std::string source = dir + "/fmt_issue_3674.cc";
  std::ofstream out(source);
  out << R"(#include <fmt/os.h>
#include <chrono>
#include <cstdio>
#include <string>
int main() {
  const std::string line(100000, '1');
  const auto start = std::chrono::steady_clock::now();
  {
    auto out = fmt::output_file("/dev/null");
    for (int i = 0; i < 2000; ++i) out.print("{}", line);
  }
  const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
  std::printf("time_ms: %.3f\n", took.count());
}
)";
  out.close();
  return out ? source : "";
}

std::string FmtIssueBuild(const std::string& source) {
  return absl::StrCat("g++ -O2 -std=c++17 -Iinclude src/format.cc src/os.cc ", source,
                      " -o fmtbench");
}

}  // namespace kbisect_bench
