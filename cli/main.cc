// Copyright 2026 The kbisect Authors.
//
// The `kbisect` command: dispatches to its subcommands.
#include <cstring>
#include <iostream>

#include "cli/cache_command.h"
#include "cli/client_commands.h"
#include "cli/k8s_job_command.h"
#include "cli/metrics_command.h"
#include "cli/nightly_command.h"
#include "cli/run_command.h"
#include "cli/triage_command.h"
#include "common/version.h"

namespace {

constexpr char kUsage[] = R"(kbisect: find the commit that made a GPU benchmark slower.

Usage:
  kbisect run GOOD [BAD] [options] -- BENCH_CMD [ARGS...]   bisect on this machine
  kbisect try BASE (--revert SHA | --commit SHA | --patch FILE) [options] -- BENCH_CMD
                                                           measure a change on BASE against BASE
  kbisect submit GOOD [BAD] --repo URL [options] -- BENCH_CMD [ARGS...]
                                                           bisect on a cluster's coordinator
  kbisect status [JOB]                                      list jobs, or one job's report
  kbisect watch JOB                                         follow a job's progress live
  kbisect workers                                           list the coordinator's workers
  kbisect k8s-job --job-id JOB [--workers W] [--min-workers M] [--hardware-class C]
                                                           the Kubernetes Job (Kueue) of a
                                                           submitted bisect's workers
  kbisect cancel JOB                                        cancel a job
  kbisect triage --dashboard FILE|URL --platform P [--kernel K] [--date D]
                                                           explain a dashboard move
  kbisect nightly --history FILE --benchmark B --sha SHA --repo DIR -- BENCH_CMD
                                                           record tonight, bisect a real regression
  kbisect cache stats [--cache-dir DIR]                     what the result cache holds
  kbisect cache prune --older-than AGE [--cache-dir DIR]    remove cached results older than AGE
  kbisect metrics [--suite SPEC | --metric REGEX] [FILE]    the metrics kbisect reads from a
                                                           benchmark's output (default: stdin)
  kbisect log [JOB]                                         a job's log (default: the last run's)
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
  if (command == "run" || command == "try") return kbisect::RunCommand(argc - 1, argv + 1);
  if (command == "triage") return kbisect::TriageCommand(argc - 1, argv + 1);
  if (command == "nightly") return kbisect::NightlyCommand(argc - 1, argv + 1);
  if (command == "cache") return kbisect::CacheCommand(argc - 1, argv + 1);
  if (command == "metrics") return kbisect::MetricsCommand(argc - 1, argv + 1);
  if (command == "k8s-job") return kbisect::K8sJobCommand(argc - 1, argv + 1);
  if (kbisect::IsClientCommand(command)) return kbisect::ClientCommand(argc - 1, argv + 1);
  if (command == "version" || command == "--version") {
    std::cout << "kbisect " << kbisect::kKbisectVersion << "\n";
    return 0;
  }
  std::cerr << "kbisect: unknown command '" << command << "'\n\n" << kUsage;
  return kbisect::kExitUsage;
}
