// Copyright 2026 The kbisect Authors.
//
// The benchmark of user_cases_bench's case j: fmt issue #3674 ("Performance regression since
// 10.0.0"), measured by the reproducer its thread reduced it to: printing a 100,000-character
// string to an `fmt::output_file`.
#ifndef KBISECT_BENCH_FMT_ISSUE_BENCH_H_
#define KBISECT_BENCH_FMT_ISSUE_BENCH_H_

#include <string>

namespace kbisect_bench {

// Writes the reproducer's C++ source into `dir` and returns its path ("" when it cannot be
// written). Built against a checkout of fmt together with src/format.cc and src/os.cc (one
// `g++` call, FmtIssueBuild), it prints `time_ms: X`, the milliseconds 2,000 prints of the
// string to /dev/null took (lower is better). On this project's 2-core machines it takes about
// 15 ms before fmt's 192859c2 and about 270 ms from it on.
std::string WriteFmtIssueBench(const std::string& dir);

// The one `g++ -O2` call that compiles fmt's src/format.cc and src/os.cc with `source` into
// ./fmtbench in the checkout (one process, one core, nothing incremental).
std::string FmtIssueBuild(const std::string& source);

}  // namespace kbisect_bench

#endif  // KBISECT_BENCH_FMT_ISSUE_BENCH_H_
