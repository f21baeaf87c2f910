// Copyright 2026 The kbisect Authors.
#include "worker/slurm_probe.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/text/shell_quote.h"
#include "worker/probe_job.h"

namespace kbisect {
namespace {

constexpr int kOutputTailLines = 20;
constexpr absl::Duration kScancelTimeout = absl::Seconds(30);

// The last `lines` lines of `text`.
std::string LastLines(const std::string& text, int lines) {
  std::vector<absl::string_view> all = absl::StrSplit(text, '\n', absl::SkipEmpty());
  const size_t from = all.size() > static_cast<size_t>(lines) ? all.size() - lines : 0;
  return absl::StrJoin(all.begin() + from, all.end(), "\n");
}

// The job id `sbatch --parsable` printed on a line of its own ("1234", or "1234;cluster"), or ""
// when it submitted nothing (its other lines are warnings or errors).
std::string SubmittedJobId(const std::string& sbatch_output) {
  for (absl::string_view line : absl::StrSplit(sbatch_output, '\n', absl::SkipEmpty())) {
    const absl::string_view id = line.substr(0, line.find(';'));
    uint64_t number = 0;
    if (absl::SimpleAtoi(id, &number)) return std::string(id);
  }
  return "";
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A new directory under `parent` for a job of `slot`: "slot<slot>-XXXXXX".
absl::StatusOr<std::string> MakeJobDirectory(const std::string& parent, int slot) {
  std::error_code error;
  std::filesystem::create_directories(parent, error);
  std::string pattern = absl::StrCat(parent, "/slot", slot, "-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("cannot make a job directory under ", parent,
                                            " (--slurm-jobs-dir must be writable)"));
  }
  return pattern;
}

absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

// Stops the job named `name` (queued or running); best effort.
void Scancel(const std::string& name, CommandRunner* runner) {
  ExecRequest request;
  request.argv = {"scancel", absl::StrCat("--name=", name)};
  request.timeout = kScancelTimeout;
  (void)runner->Run(request);
}

v1::TaskResult InfraError(std::string message, std::string log_tail) {
  v1::TaskResult result;
  result.set_outcome(v1::TASK_OUTCOME_INFRA_ERROR);
  result.set_message(std::move(message));
  result.set_log_tail(std::move(log_tail));
  return result;
}

}  // namespace

SlurmNodeChoice SlurmNodes::Choice() const {
  kbisect::MutexLock lock(&mu_);
  return SlurmNodeChoice{pinned_, std::vector<std::string>(excluded_.begin(), excluded_.end())};
}

void SlurmNodes::Ran(const std::string& node) {
  kbisect::MutexLock lock(&mu_);
  if (pin_ && pinned_.empty()) pinned_ = node;
}

void SlurmNodes::Exclude(const std::string& node) {
  kbisect::MutexLock lock(&mu_);
  excluded_.insert(node);
}

std::string ProbeBatchScript(const SlurmProbeOptions& options, const std::string& job_dir,
                             int slot) {
  const std::string cache = options.node_cache_dir.empty()
                                ? std::string(
                                      "\"${SLURM_TMPDIR:-${TMPDIR:-/tmp}}/kbisect-"
                                      "${USER:-$(id -un)}\"")
                                : ShellQuote(options.node_cache_dir);
  std::string flags;
  for (const std::string& flag : options.probe_flags)
    absl::StrAppend(&flags, " ", ShellQuote(flag));
  const std::string exit_code = ShellQuote(absl::StrCat(job_dir, "/", kProbeExitCodeFile));
  return absl::StrCat(
      "#!/bin/bash\n"
      "# One probe of kbisect-worker --slurm-per-probe: runs the task in this directory on the\n"
      "# node's GPU and writes its result; the exit code goes to a file, read by the launcher.\n"
      "# A job killed before the probe returned (time limit, memory, scancel) writes none.\n",
      ShellQuote(options.worker_binary), " --slurm-probe-job ", ShellQuote(job_dir),
      " --slurm-probe-slot ", slot, " --cache-dir ", cache, flags, "\n", "code=$?\n",
      "printf '%s\\n' \"$code\" >", exit_code, ".tmp && mv ", exit_code, ".tmp ", exit_code, "\n",
      "exit \"$code\"\n");
}

std::vector<std::string> SbatchCommand(const SlurmProbeOptions& options,
                                       const std::string& job_name, const std::string& job_dir,
                                       const SlurmNodeChoice& nodes) {
  std::vector<std::string> argv = {"sbatch", "--wait", "--parsable"};
  argv.insert(argv.end(), options.sbatch_options.begin(), options.sbatch_options.end());
  argv.push_back(absl::StrCat("--job-name=", job_name));
  argv.push_back(absl::StrCat("--output=", job_dir, "/", kProbeOutputFile));
  if (!options.gres.empty()) argv.push_back(absl::StrCat("--gres=", options.gres));
  if (!nodes.pinned.empty()) argv.push_back(absl::StrCat("--nodelist=", nodes.pinned));
  if (!nodes.excluded.empty()) {
    argv.push_back(absl::StrCat("--exclude=", absl::StrJoin(nodes.excluded, ",")));
  }
  argv.push_back(absl::StrCat(job_dir, "/", kProbeScriptFile));
  return argv;
}

ProbeJobOutput ReadProbeJob(const std::string& job_dir) {
  ProbeJobOutput output;
  int code = 0;
  const std::string exit_code = ReadWholeFile(absl::StrCat(job_dir, "/", kProbeExitCodeFile));
  if (absl::SimpleAtoi(absl::StripAsciiWhitespace(exit_code), &code)) output.exit_code = code;
  v1::TaskResult result;
  if (ReadProtoFile(absl::StrCat(job_dir, "/", kProbeResultFile), &result).ok()) {
    output.result = std::move(result);
  }
  v1::RunnerIdentity identity;
  if (ReadProtoFile(absl::StrCat(job_dir, "/", kProbeIdentityFile), &identity).ok()) {
    output.identity = std::move(identity);
  }
  output.output_tail =
      LastLines(ReadWholeFile(absl::StrCat(job_dir, "/", kProbeOutputFile)), kOutputTailLines);
  return output;
}

ProbeJobVerdict JudgeProbeJob(const ProbeJobOutput& output, const std::string& job,
                              const std::string& hardware_class) {
  ProbeJobVerdict verdict;
  if (!output.exit_code.has_value()) {
    verdict.result = InfraError(
        absl::StrCat(job,
                     " ended before its probe did (Slurm's time limit, a memory limit, a "
                     "node failure or scancel): no exit code was written; the task runs "
                     "again"),
        output.output_tail);
    return verdict;
  }
  if (!output.result.has_value()) {
    verdict.result = InfraError(
        absl::StrCat(job, ": the probe exited with code ", *output.exit_code, " without a result"),
        output.output_tail);
    return verdict;
  }
  if (output.identity.has_value() && output.identity->hardware_class() != hardware_class) {
    const std::string node = output.identity->placement().node().empty()
                                 ? output.identity->host()
                                 : output.identity->placement().node();
    verdict.avoid_node = node;
    verdict.result = InfraError(
        absl::StrCat(job, " ran on node ", node, " whose hardware class ",
                     output.identity->hardware_class(), " (",
                     output.identity->hardware_class_label(), ") is not the launcher's ",
                     hardware_class, "; later probes avoid that node and the task runs again"),
        "");
    return verdict;
  }
  verdict.result = *output.result;
  return verdict;
}

absl::StatusOr<SlurmProbeJob> RunSlurmProbeJob(const SlurmProbeOptions& options, int slot,
                                               const v1::Task* task, const SlurmNodes& nodes,
                                               CommandRunner* runner, const Cancellation* cancel) {
  absl::StatusOr<std::string> dir = MakeJobDirectory(options.jobs_dir, slot);
  if (!dir.ok()) return dir.status();
  // The directory goes with the job: what it left is read before this returns.
  struct RemoveDirectory {
    std::string path;
    ~RemoveDirectory() {
      std::error_code error;
      std::filesystem::remove_all(path, error);
    }
  } remove{*dir};
  absl::Status written = WriteTextFile(absl::StrCat(*dir, "/", kProbeScriptFile),
                                       ProbeBatchScript(options, *dir, slot));
  if (written.ok() && task != nullptr) {
    written = WriteProtoFile(absl::StrCat(*dir, "/", kProbeTaskFile), *task);
  }
  if (!written.ok()) return written;
  SlurmProbeJob job;
  job.name = absl::StrCat("kbisect-probe-", std::filesystem::path(*dir).filename().string());
  ExecRequest request;
  request.argv = SbatchCommand(options, job.name, *dir, nodes.Choice());
  absl::StatusOr<ExecResult> sbatch = runner->Run(request, cancel);
  if (!sbatch.ok()) return sbatch.status();
  job.sbatch = *std::move(sbatch);
  if (job.sbatch.cancelled) {
    // sbatch --wait stopped; the job it submitted is not: cancel it by name, queued or running.
    Scancel(job.name, runner);
    return job;
  }
  job.output = ReadProbeJob(*dir);
  return job;
}

absl::StatusOr<v1::RunnerIdentity> ProbeSlurmIdentity(const SlurmProbeOptions& options,
                                                      SlurmNodes* nodes, CommandRunner* runner,
                                                      const Cancellation* cancel) {
  absl::StatusOr<SlurmProbeJob> job =
      RunSlurmProbeJob(options, /*slot=*/0, nullptr, *nodes, runner, cancel);
  if (!job.ok()) return job.status();
  if (job->sbatch.cancelled) return absl::CancelledError("stopped before the identity job ended");
  if (!job->output.identity.has_value()) {
    return absl::UnavailableError(absl::StrCat("the identity job ", job->name, " (sbatch ",
                                               job->sbatch.Describe(), ") wrote no identity:\n",
                                               job->sbatch.Tail(5), "\n", job->output.output_tail));
  }
  nodes->Ran(job->output.identity->placement().node());
  return *job->output.identity;
}

SlurmProbeExecutor::SlurmProbeExecutor(SlurmProbeOptions options, int slot,
                                       std::string hardware_class, SlurmNodes* nodes,
                                       CommandRunner* runner, const Logger* log)
    : options_(std::move(options)),
      slot_(slot),
      hardware_class_(std::move(hardware_class)),
      nodes_(nodes),
      runner_(runner),
      log_(log) {}

v1::TaskResult SlurmProbeExecutor::Run(const v1::Task& task, const Cancellation* cancel,
                                       const ProgressCallback& /*progress*/) {
  absl::StatusOr<SlurmProbeJob> job =
      RunSlurmProbeJob(options_, slot_, &task, *nodes_, runner_, cancel);
  if (!job.ok()) return InfraError(std::string(job.status().message()), "");
  if (job->sbatch.cancelled) {
    // sbatch printed the job's id when it submitted it, unless it was stopped before that.
    const std::string submitted = SubmittedJobId(job->sbatch.output);
    log_->Info(
        absl::StrCat("slot ", slot_, ": task ", task.task_id(), " stopped; Slurm job ",
                     submitted.empty() ? job->name : absl::StrCat(submitted, " (", job->name, ")"),
                     " cancelled"));
    v1::TaskResult cancelled;
    cancelled.set_outcome(v1::TASK_OUTCOME_CANCELLED);
    return cancelled;
  }
  const std::string job_id = SubmittedJobId(job->sbatch.output);
  if (job_id.empty()) {
    return InfraError(
        absl::StrCat("sbatch could not submit the probe job (sbatch ", job->sbatch.Describe(), ")"),
        job->sbatch.Tail(kOutputTailLines));
  }
  const std::string described = absl::StrCat("Slurm job ", job_id, " (", job->name, ")");
  ProbeJobVerdict verdict = JudgeProbeJob(job->output, described, hardware_class_);
  if (!verdict.avoid_node.empty()) nodes_->Exclude(verdict.avoid_node);
  const std::string node =
      job->output.identity.has_value() ? job->output.identity->placement().node() : "";
  if (!node.empty() && verdict.avoid_node.empty()) nodes_->Ran(node);
  log_->Info(absl::StrCat("slot ", slot_, ": task ", task.task_id(), " ran as ", described,
                          node.empty() ? "" : absl::StrCat(" on node ", node), ": ",
                          v1::TaskOutcome_Name(verdict.result.outcome()),
                          verdict.result.message().empty()
                              ? ""
                              : absl::StrCat(" (", verdict.result.message(), ")")),
             {{"slot", absl::StrCat(slot_)}, {"job", job->name}, {"node", node}});
  return std::move(verdict.result);
}

}  // namespace kbisect
