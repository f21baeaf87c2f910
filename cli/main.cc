// Copyright 2026 The kbisect Authors.
//
// The `kbisect` command: dispatches to its subcommands.
#include <cstring>
#include <iostream>

#include "cli/run_command.h"

namespace {

constexpr char kUsage[] = R"(kbisect: find the commit that made a GPU benchmark slower.

Usage:
  kbisect run GOOD [BAD] [options] -- BENCH_CMD [ARGS...]   bisect on this machine
  kbisect version

Run `kbisect run --help` for the options and exit codes.
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    std::cout << kUsage;
    return argc < 2 ? kbisect::kExitUsage : 0;
  }
  const std::string command = argv[1];
  if (command == "run") return kbisect::RunCommand(argc - 1, argv + 1);
  if (command == "version" || command == "--version") {
    std::cout << "kbisect 0.1.0\n";
    return 0;
  }
  std::cerr << "kbisect: unknown command '" << command << "'\n\n" << kUsage;
  return kbisect::kExitUsage;
}
