// Copyright 2026 The kbisect Authors.
#include "worker/build_request.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/spec/job_spec.h"
#include "google/protobuf/util/time_util.h"

namespace kbisect {

std::map<std::string, std::string> TaskEnvironment(
    const v1::Task& task, const std::map<std::string, std::string>& slot_env) {
  std::map<std::string, std::string> env = slot_env;
  for (const auto& [key, value] : task.env()) env[key] = value;
  env["KBISECT_COMMIT_INDEX"] = absl::StrCat(task.commit_index());
  if (task.has_dependency()) {
    env["KBISECT_SUPERPROJECT_COMMIT"] = task.dependency().superproject_sha();
  }
  return env;
}

BuildCommand BuildCommandFor(const v1::Task& task, const std::string& sha,
                             std::map<std::string, std::string> env) {
  BuildCommand build;
  build.shell_command = task.build_command();
  build.env = std::move(env);
  build.env["KBISECT_COMMIT"] = sha;
  const int64_t nanos =
      task.has_build_timeout()
          ? google::protobuf::util::TimeUtil::DurationToNanoseconds(task.build_timeout())
          : 0;
  build.timeout = nanos > 0 ? absl::Nanoseconds(nanos) : kDefaultBuildTimeout;
  return build;
}

BuildRequest BuildRequestFor(const v1::Task& task, const std::string& sha,
                             const BuildRequestOptions& options) {
  BuildRequest request;
  request.repository = task.repository();
  request.sha = sha;
  if (options.env != nullptr) {
    request.build = BuildCommandFor(task, sha, *options.env);
  } else {
    request.build.shell_command = task.build_command();
  }
  request.key_env.insert(task.env().begin(), task.env().end());
  if (options.keep_builds) {
    request.keep_shas.assign(task.keep_build_shas().begin(), task.keep_build_shas().end());
  }
  request.isolation = task.build_isolation();
  request.build_order = options.build_order;
  return request;
}

}  // namespace kbisect
