// Copyright 2026 The kbisect Authors.
//
// `kbisect try BASE (--revert SHA | --patch FILE | --commit SHA)` and `kbisect submit --try`
// (issue 50): the change is made into a commit on BASE (common/git/change_commit.h, in a scratch
// clone, pushed under refs/kbisect/try/), and the job is an A/B of BASE against it
// (JobSpec.try_change): interleaved pairs over the workers, the change's ratio with its 95%
// interval. Exit 0 when the change is significant, 3 when it is not, 1 for a change that cannot
// be made (a patch that does not apply names its file and hunk; a revert that conflicts names
// the files and the later commits that touched them).
#ifndef KBISECT_CLI_TRY_CHANGE_H_
#define KBISECT_CLI_TRY_CHANGE_H_

#include <string>

#include "kbisect/v1/kbisect.pb.h"

// CLI11 is included only where flags are registered.
namespace CLI {
class App;
}  // namespace CLI

namespace kbisect {

// The change a try measures: exactly one of the three.
struct TryFlags {
  std::string revert;  // --revert SHA
  std::string patch;   // --patch FILE
  std::string commit;  // --commit SHA
  // `submit --try`: the flags above make this a try (run's `try` command always is one).
  bool enabled() const { return !revert.empty() || !patch.empty() || !commit.empty(); }
};

// Registers --revert, --patch and --commit on `app`.
void AddTryFlags(CLI::App* app, TryFlags* flags);

// Makes the change of `flags` on `spec`'s GOOD (the base; BAD must not be given) in the
// repository at `repository`, and makes `spec` the try job: GOOD the base's full sha, BAD the
// change's commit, try_change set. `command` names the command in messages ("kbisect try").
// Returns -1 to go on, else the exit code after saying on stderr what was wrong and what to do.
int PrepareTry(const TryFlags& flags, const std::string& repository, const std::string& command,
               v1::JobSpec* spec);

}  // namespace kbisect

#endif  // KBISECT_CLI_TRY_CHANGE_H_
