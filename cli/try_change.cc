// Copyright 2026 The kbisect Authors.
#include "cli/try_change.h"

#include <iostream>
#include <memory>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/run_command.h"
#include "common/exec/exec.h"
#include "common/git/change_commit.h"

namespace kbisect {
namespace {

// The one change of `flags`, or a usage error's words.
absl::StatusOr<ChangeSpec> ChangeOf(const TryFlags& flags) {
  const int given = !flags.revert.empty() + !flags.patch.empty() + !flags.commit.empty();
  if (given != 1) {
    return absl::InvalidArgumentError(
        "give exactly one change to try: --revert SHA (undo a commit), --commit SHA (apply "
        "another commit) or --patch FILE (apply a patch)");
  }
  if (!flags.revert.empty()) return ChangeSpec{ChangeSpec::Kind::kRevert, flags.revert};
  if (!flags.commit.empty()) return ChangeSpec{ChangeSpec::Kind::kCommit, flags.commit};
  return ChangeSpec{ChangeSpec::Kind::kPatch, flags.patch};
}

v1::TryChange::Kind WireKind(ChangeSpec::Kind kind) {
  switch (kind) {
    case ChangeSpec::Kind::kRevert:
      return v1::TryChange::KIND_REVERT;
    case ChangeSpec::Kind::kCommit:
      return v1::TryChange::KIND_COMMIT;
    case ChangeSpec::Kind::kPatch:
      return v1::TryChange::KIND_PATCH;
  }
  return v1::TryChange::KIND_UNSPECIFIED;
}

}  // namespace

void AddTryFlags(CLI::App* app, TryFlags* flags) {
  app->add_option("--revert", flags->revert,
                  "Try BASE with this commit reverted (git revert; -m 1 for a merge)");
  app->add_option("--commit", flags->commit,
                  "Try BASE with this commit's changes applied (git cherry-pick)");
  app->add_option("--patch", flags->patch, "Try BASE with this patch file applied (git apply)");
}

int PrepareTry(const TryFlags& flags, const std::string& repository, const std::string& command,
               v1::JobSpec* spec) {
  absl::StatusOr<ChangeSpec> change = ChangeOf(flags);
  if (!change.ok()) {
    std::cerr << command << ": " << change.status().message() << "\n";
    return kExitUsage;
  }
  if (!spec->bad().empty()) {
    std::cerr << command << ": give one commit, the base the change is tried on (got "
              << spec->good() << " and " << spec->bad() << ")\n";
    return kExitUsage;
  }
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  absl::StatusOr<ChangeCommit> made = MakeChangeCommit(*runner, repository, spec->good(), *change);
  if (!made.ok()) {
    std::cerr << command << ": " << made.status().message() << "\n";
    return kExitError;
  }
  if (made->conflict.has_value()) {
    std::cerr << command << ": the " << ChangeSpec::KindName(change->kind) << " of "
              << change->target << " does not apply cleanly on " << spec->good()
              << ": it conflicts in " << absl::StrJoin(made->conflict->files, ", ") << "\n";
    if (!made->conflict->later_commits.empty()) {
      std::cerr << "  later commits that touched them:\n    "
                << absl::StrJoin(made->conflict->later_commits, "\n    ") << "\n";
    }
    std::cerr << "  Resolve it by hand into a commit and try that with --commit, or a patch with "
                 "--patch.\n";
    return kExitError;
  }
  spec->set_good(made->base);
  spec->set_bad(made->sha);
  v1::TryChange& wire = *spec->mutable_try_change();
  wire.set_kind(WireKind(change->kind));
  wire.set_target(made->target);
  wire.set_description(made->description);
  wire.set_ref(made->ref);
  if (spec->description().empty()) spec->set_description(absl::StrCat("try ", made->description));
  return -1;
}

}  // namespace kbisect
