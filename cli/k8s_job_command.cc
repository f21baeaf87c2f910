// Copyright 2026 The kbisect Authors.
#include "cli/k8s_job_command.h"

#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "cli/k8s_job.h"
#include "cli/run_command.h"
#include "common/flags/flag_checks.h"

namespace kbisect {
namespace {

constexpr char kFooter[] = R"(
Prints one Kubernetes Indexed Job (batch/v1) for a bisect already submitted with `kbisect
submit`: W pods, one GPU each, running `kbisect-worker --until-job JOB`, which exit 0 once the
bisect has ended, so that the Job completes. It is labelled for Kueue: the LocalQueue (--queue),
the WorkloadPriorityClass kbisect-nightly or kbisect-interactive (--priority), and partial
admission (--min-workers: Kueue may start it with as few pods when the queue has no more GPUs).
Install deploy/k8s/kueue and deploy/k8s/overlays/kueue first (docs/operations.md, "Kueue").

  id=$(kbisect submit GOOD BAD --repo URL -- ./bench.sh)
  kbisect k8s-job --job-id "$id" --workers 8 --min-workers 2 | kubectl create -f -

More GPUs later: another Job for the same bisect under another --name.

Exit codes: 0 printed, 2 usage error (an empty --job-id, --workers < 1, --min-workers outside
1..W, an unknown --priority or --hardware-class).
)";

}  // namespace

int K8sJobCommand(int argc, char** argv) {
  CLI::App app{"Print the Kubernetes Indexed Job that runs one bisect's workers under Kueue.",
               "kbisect k8s-job"};
  app.footer(kFooter);
  K8sJobOptions options;
  app.add_option("--job-id", options.job_id, "The bisect's job id, as `kbisect submit` printed it")
      ->required();
  app.add_option("--workers", options.workers,
                 "W: pods (one GPU each); completions = parallelism = W")
      ->capture_default_str();
  app.add_option("--min-workers", options.min_workers,
                 "The fewest pods Kueue may start the Job with (kueue.x-k8s.io/"
                 "job-min-parallelism)")
      ->capture_default_str();
  app.add_option("--queue", options.queue, "The Kueue LocalQueue (kueue.x-k8s.io/queue-name)")
      ->capture_default_str();
  app.add_option("--priority", options.priority,
                 "nightly or interactive: the WorkloadPriorityClass kbisect-PRIORITY")
      ->capture_default_str();
  app.add_option("--hardware-class", options.hardware_class,
                 "h100, b200 or mi300x: the GPU resource, the node label and the image's tag")
      ->capture_default_str();
  app.add_option("--image", options.image,
                 "The worker image (default: the base kustomization's, with -rocm for mi300x)")
      ->envname("KBISECT_IMAGE");
  app.add_option("--coordinator", options.coordinator,
                 "The coordinator's address as the pods reach it")
      ->capture_default_str();
  app.add_option("--name", options.name,
                 "The Job's name (default: kbisect-JOB, made DNS-safe; see the manual)");
  app.add_option("--namespace", options.k8s_namespace, "The Job's namespace")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ReportParseError(app, e);
  }
  absl::StatusOr<std::string> manifest = K8sJobManifest(options);
  if (!manifest.ok()) {
    std::cerr << "kbisect k8s-job: " << manifest.status().message() << "\n";
    return kExitUsage;
  }
  std::cout << *manifest;
  return 0;
}

}  // namespace kbisect
