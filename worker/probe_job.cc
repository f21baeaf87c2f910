// Copyright 2026 The kbisect Authors.
#include "worker/probe_job.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/exec/signals.h"
#include "common/sync/notification.h"

namespace kbisect {

absl::Status WriteProtoFile(const std::string& path, const google::protobuf::MessageLite& message) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out || !message.SerializeToOstream(&out)) {
      return absl::InternalError(absl::StrCat("cannot write ", temporary));
    }
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", temporary));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename ", temporary, " to ", path));
  }
  return absl::OkStatus();
}

absl::Status ReadProtoFile(const std::string& path, google::protobuf::MessageLite* message) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, " does not exist"));
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (!message->ParseFromString(bytes.str())) {
    return absl::DataLossError(absl::StrCat(path, " does not parse"));
  }
  return absl::OkStatus();
}

int RunProbeJob(const std::string& dir, const v1::RunnerIdentity& identity, TaskExecutor* executor,
                const Logger& log) {
  if (absl::Status written = WriteProtoFile(absl::StrCat(dir, "/", kProbeIdentityFile), identity);
      !written.ok()) {
    log.Error(written.message());
    return 1;
  }
  v1::Task task;
  const absl::Status read = ReadProtoFile(absl::StrCat(dir, "/", kProbeTaskFile), &task);
  if (absl::IsNotFound(read)) return 0;  // The identity job: nothing to run.
  if (!read.ok()) {
    log.Error(read.message());
    return 1;
  }
  log.Info(absl::StrCat("probe job: task ", task.task_id(), " at ", task.commit_sha().substr(0, 12),
                        " on ", identity.host(), " (", identity.hardware_class_label(),
                        ", devices ", identity.visible_devices(), ")"));
  Cancellation cancel;
  v1::TaskResult result;
  kbisect::Notification done;
  std::thread worker([&] {
    result = executor->Run(task, &cancel, nullptr);
    done.Notify();
  });
  bool signalled = false;
  while (!done.HasBeenNotified()) {
    if (WaitForTerminationSignal(absl::Milliseconds(200)) == 0 || signalled) continue;
    // Slurm ends the job (scancel, the time limit): stop the task's commands, which may sit in
    // process groups of their own that the job's process tracking would miss.
    log.Info("probe job: signalled; stopping the task, no result is written");
    signalled = true;
    cancel.Cancel();
  }
  worker.join();
  if (signalled) return 128 + SIGTERM;
  result.set_hardware_class(identity.hardware_class());
  if (absl::Status written = WriteProtoFile(absl::StrCat(dir, "/", kProbeResultFile), result);
      !written.ok()) {
    log.Error(written.message());
    return 1;
  }
  log.Info(absl::StrCat("probe job: task ", task.task_id(), " ",
                        v1::TaskOutcome_Name(result.outcome())));
  return 0;
}

}  // namespace kbisect
