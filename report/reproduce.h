// Copyright 2026 The kbisect Authors.
//
// The command that runs a job again: `kbisect run GOOD_SHA BAD_SHA --repo REPO [the spec's
// options that differ from the defaults] -- BENCH...`, quoted for a POSIX shell. Shown on the
// HTML page and in the Markdown summary.
#ifndef KBISECT_REPORT_REPRODUCE_H_
#define KBISECT_REPORT_REPRODUCE_H_

#include <string>

#include "absl/strings/string_view.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// `s` as one shell word: unchanged when it only has safe characters, else single-quoted.
std::string ShellWord(absl::string_view s);

// The command line above, with the resolved shas when the job has them (else the revisions as
// written). A dependency follow-up's (JobSpec.dependency) bisects the superproject's step
// `CULPRIT^ CULPRIT` with the descent that starts the follow-up again
// (`--descend-submodules`, or `--descend-pin FILE=REPOSITORY`).
std::string ReproduceCommand(const v1::JobStatus& job);

}  // namespace kbisect

#endif  // KBISECT_REPORT_REPRODUCE_H_
