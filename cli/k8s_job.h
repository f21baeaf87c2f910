// Copyright 2026 The kbisect Authors.
//
// The Kubernetes Indexed Job that runs one bisect's workers under Kueue (`kbisect k8s-job`,
// docs/operations.md "Kueue"): W pods with one GPU each, whose `kbisect-worker --until-job JOB`
// exits 0 once the bisect has ended, so the Job completes and its GPUs go back to the queue.
// Built as text by a pure function from K8sJobOptions; the command (cli/k8s_job_command.h) only
// reads the flags and prints it.
//
// The Job is labelled for a Kueue LocalQueue (kueue.x-k8s.io/queue-name) with a
// WorkloadPriorityClass (kueue.x-k8s.io/priority-class: kbisect-nightly or kbisect-interactive)
// and carries kueue.x-k8s.io/job-min-parallelism, so Kueue may admit it with fewer pods than W
// (partial admission), and kueue.x-k8s.io/job-completions-equal-parallelism, so completions
// follow. Its pods select their hardware class's nodes with the same node label as the class's
// ResourceFlavor (deploy/k8s/kueue): with several flavors of one GPU resource in a ClusterQueue
// (h100 and b200 both count nvidia.com/gpu), the selector is what restricts Kueue to the class's
// flavor; the flavor's tolerations are injected by Kueue.
#ifndef KBISECT_CLI_K8S_JOB_H_
#define KBISECT_CLI_K8S_JOB_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kbisect {

// One hardware class as deploy/k8s names it: its overlay, its ResourceFlavor and the GPU its
// pods ask for.
struct K8sHardwareClass {
  std::string name;              // "h100": the overlay, the flavor, kbisect.dev/hardware-class.
  std::string gpu_resource;      // The device plugin's resource: "nvidia.com/gpu".
  std::string node_label_key;    // The node label the class's nodes carry ...
  std::string node_label_value;  // ... with this value (the overlay's nodeSelector).
  std::string image_tag_suffix;  // Appended to the image's tag: "-rocm" for AMD, else "".
};

// The classes deploy/k8s knows: h100, b200 (NVIDIA GPU feature discovery's product label) and
// mi300x (the AMD GPU operator's node labeller), in that order.
const std::vector<K8sHardwareClass>& K8sHardwareClasses();

// What `kbisect k8s-job` builds the Job from; the defaults are the flags'.
struct K8sJobOptions {
  std::string job_id;   // The bisect's job id, as `kbisect submit` printed it. Required.
  int workers = 1;      // W: completions = parallelism = W, one GPU per pod.
  int min_workers = 1;  // kueue.x-k8s.io/job-min-parallelism: the fewest pods it starts with.
  std::string queue = "kbisect";         // The LocalQueue.
  std::string priority = "interactive";  // "nightly" or "interactive".
  std::string hardware_class = "h100";   // One of K8sHardwareClasses().
  std::string image;                     // Empty: kDefaultK8sImage with the class's tag suffix.
  std::string coordinator = "kbisect-coordinator.kbisect.svc:7070";
  std::string name;  // The Job's name; empty: K8sJobName(job_id).
  std::string k8s_namespace = "kbisect";
};

// The image a Job's pods run when --image is not given: the base kustomization's.
inline constexpr char kDefaultK8sImage[] = "registry.example.com/kbisect:0.1.0";

// The Job's name for `job_id`: "kbisect-" and the id lower-cased, each run of characters outside
// [a-z0-9] made one '-', trimmed of '-'. When that changed the id (its case included), or the
// name would pass 52 characters (Indexed pods' host names are NAME-INDEX, at most 63), it is cut
// to 45 and given "-" and 6 hex digits of the id's FNV-1a hash, so that two ids differing only in
// what was cleaned away get different names (but for a 1 in 16 million chance).
std::string K8sJobName(const std::string& job_id);

// Returns the Job's manifest, one YAML document, or InvalidArgument saying which option is wrong:
// an empty job id, W < 1, M < 1 or M > W, an unknown priority or hardware class, an empty queue,
// image or coordinator, or a --name that is not a DNS-1123 label of at most 52 characters.
absl::StatusOr<std::string> K8sJobManifest(const K8sJobOptions& options);

}  // namespace kbisect

#endif  // KBISECT_CLI_K8S_JOB_H_
