// Copyright 2026 The kbisect Authors.
#include "worker/task_manifest.h"

#include <vector>

#include "common/manifest/manifest.h"

namespace kbisect {

v1::MeasurementManifest CollectTaskManifest(const v1::Task& task, const std::string& dir,
                                            const std::map<std::string, std::string>& env,
                                            CommandRunner* runner) {
  ManifestInputs inputs;
  inputs.dir = dir;
  inputs.bench_argv.assign(task.bench_command().begin(), task.bench_command().end());
  inputs.env = env;
  inputs.runner = runner;
  // The checkout's HEAD is the commit measured in it (Worktree::Checkout detaches it there).
  inputs.tracked = TrackedInCommit(dir, "HEAD");
  absl::StatusOr<v1::MeasurementManifest> manifest =
      CollectManifest(ManifestSpecFromEnv(env), inputs);
  return manifest.ok() ? *std::move(manifest) : v1::MeasurementManifest();
}

}  // namespace kbisect
