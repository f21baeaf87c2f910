// Copyright 2026 The kbisect Authors.
//
// `kbisect k8s-job`: prints the Kubernetes Indexed Job that runs one submitted bisect's workers
// under Kueue (the manifest is cli/k8s_job.h's), for `kubectl create -f -`:
//
//   id=$(kbisect submit GOOD BAD --repo URL -- ./bench.sh)
//   kbisect k8s-job --job-id "$id" --workers 8 --min-workers 2 | kubectl create -f -
#ifndef KBISECT_CLI_K8S_JOB_COMMAND_H_
#define KBISECT_CLI_K8S_JOB_COMMAND_H_

namespace kbisect {

// Runs `kbisect k8s-job` with argv starting at "k8s-job". Prints the manifest to stdout and
// returns 0, or says what is wrong on stderr and returns 2 (kExitUsage) for any bad option.
int K8sJobCommand(int argc, char** argv);

}  // namespace kbisect

#endif  // KBISECT_CLI_K8S_JOB_COMMAND_H_
