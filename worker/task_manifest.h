// Copyright 2026 The kbisect Authors.
//
// The measurement manifest of one task (common/manifest/manifest.h), as the task runner records
// it in TaskResult.manifest before the first benchmark run: the harness files of the checkout
// that its commit holds (globs from the task's KBISECT_MANIFEST_HARNESS, default benchmarks/**,
// bench/** and .github/workflows/**; never a file the build wrote), the bench command line and its
// script files, the environment variables KBISECT_MANIFEST_ENV names and the tool versions
// KBISECT_MANIFEST_TOOLS asks for.
#ifndef KBISECT_WORKER_TASK_MANIFEST_H_
#define KBISECT_WORKER_TASK_MANIFEST_H_

#include <map>
#include <string>

#include "common/exec/exec.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// Returns the manifest of `task` measured in `dir` with `env` (the benchmark's environment);
// `runner` runs the tool commands. A manifest that cannot be taken (no directory) is returned
// empty: it never fails a task.
v1::MeasurementManifest CollectTaskManifest(const v1::Task& task, const std::string& dir,
                                            const std::map<std::string, std::string>& env,
                                            CommandRunner* runner);

}  // namespace kbisect

#endif  // KBISECT_WORKER_TASK_MANIFEST_H_
