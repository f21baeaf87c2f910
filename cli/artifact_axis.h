// Copyright 2026 The kbisect Authors.
//
// The artifact axis (`kbisect run --artifact NAME (--find-links DIR | --index-url URL) GOOD BAD
// -- BENCH`): bisecting prebuilt nightly wheels by version or date instead of commits built from
// source (issue 47, decision 194).
//
// The revisions are the versions the index lists for NAME between GOOD and BAD, in pip's order
// (common/artifact). Each is written as one commit of a ledger repository under the cache
// directory, whose tree pins it: `artifact.json` (name, version, index, the sha256 of each of its
// files) and `requirements.txt` (`NAME==VERSION`, with `--hash` lines unless --with-deps). The
// ledger is content-addressed: the same version from the same index with the same files has the
// same tree, hence the same result-cache key, and a re-uploaded wheel or another CUDA variant's
// index is another artifact. Every part of a job (k-ary rounds, calibration, the confidence stop,
// confirmation, resume, the pages and the result cache) then applies unchanged; the edge is the
// "build", which installs the pinned artifact into the probe's own Python layer from that index
// only, imports it, and notes the commit it was built from. The benchmark runs where the user
// ran `kbisect run` (KBISECT_BENCH_DIR).
//
//   ASSIGN_OR_RETURN(ArtifactAxis axis, ArtifactAxis::Prepare(flags, good, bad, cache_dir,
//   runner)); axis.ApplyTo(&spec);                 // the job bisects the ledger
//   ... run the job ...
//   std::cout << axis.SummaryText(final_status);
#ifndef KBISECT_CLI_ARTIFACT_AXIS_H_
#define KBISECT_CLI_ARTIFACT_AXIS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/artifact/package_index.h"
#include "common/exec/exec.h"
#include "kbisect/v1/kbisect.pb.h"
#include "worker/task_runner.h"

// CLI11 is included only where flags are registered.
namespace CLI {
class App;
}  // namespace CLI

namespace kbisect {

// Where each probe's install notes the commit its artifact was built from (a file per version).
inline constexpr char kArtifactNotesEnv[] = "KBISECT_ARTIFACT_NOTES";

// The flags of the artifact axis, as given.
struct ArtifactFlags {
  std::string name;        // --artifact NAME (the distribution, e.g. torch).
  std::string find_links;  // --find-links DIR: a directory of wheels.
  std::string index_url;   // --index-url URL: a PEP 503 index (http:// or file://).
  bool with_deps = false;  // --with-deps: pip resolves the artifact's dependencies (same index).
  // --isolate-companions: when a companion pin moved, measure the first bad artifact with the last
  // good one's companions to say which of the two moved the metric.
  bool isolate_companions = false;
  std::string import_name;  // --import MODULE: what must import (default: NAME, '-' -> '_').
  std::string commit_of;    // --commit-of CMD: prints the artifact's commit in its environment.

  bool enabled() const { return !name.empty(); }
};

// Registers --artifact, --find-links, --index-url, --with-deps, --import and --commit-of.
void AddArtifactFlags(CLI::App* app, ArtifactFlags* flags);

// The two ends of an artifact range among the versions an index lists, each a version or a date
// (YYYY-MM-DD: the version whose devYYYYMMDD is that day). Returns the positions of GOOD and BAD
// in `listed`. NotFound when an end is not listed, naming the nearest versions that are;
// InvalidArgument when GOOD is not older than BAD.
struct ArtifactEnds {
  size_t good = 0;
  size_t bad = 0;
};
absl::StatusOr<ArtifactEnds> ResolveArtifactEnds(const std::vector<ArtifactVersion>& listed,
                                                 const std::string& name, const std::string& index,
                                                 const std::string& good, const std::string& bad);

// One pin of a ledger commit: distribution `name` at `version` (a companion installed beside
// the artifact).
struct ArtifactPin {
  std::string name;
  ArtifactVersion version;
};

// One ledger commit: the artifact's version and the companions installed with it (none in an
// artifact range: pip installs what --with-deps says).
struct LedgerEntry {
  ArtifactVersion version;
  std::vector<ArtifactPin> companions;

  // "kern 1.0.dev20260106" or "kern 1.0.dev20260106 with kern-triton 3.2.0+git4b3bb1f8".
  std::string Subject(const std::string& name) const;
};

// The files of one ledger commit for `version` and its `companions` (path -> contents).
std::map<std::string, std::string> LedgerFiles(const ArtifactFlags& flags,
                                               const ArtifactVersion& version,
                                               const std::vector<ArtifactPin>& companions = {});

// The shell command that installs the artifact a ledger checkout pins into the probe's layer
// (the job runs it as its build, in the checkout, with the layer active): pip from the given
// index only (--no-index --find-links DIR, or --index-url URL; pip's configuration files and
// PIP_INDEX_URL, PIP_EXTRA_INDEX_URL and PIP_FIND_LINKS are ignored, so no call can fall back to
// another index), --no-deps unless --with-deps; then the import check, and the commit the
// artifact was built from and its Requires-Dist noted in $KBISECT_ARTIFACT_NOTES (when set),
// the commit printed.
std::string ArtifactInstallCommand(const ArtifactFlags& flags);

// The Python program that prints an installed artifact's commit: the first of
// MODULE.version.git_version, MODULE.__git_version__, MODULE.__commit__, a `+g<sha>` or
// `+git<sha>` local version label, and the `Commit:`-ish fields of the wheel's metadata; prints
// nothing when there is none.
std::string CommitProbeProgram(const std::string& distribution, const std::string& module);

// The Python program that prints an installed distribution's Requires-Dist, one a line.
std::string RequiresProgram(const std::string& distribution);

// The pinned requirements (`name==version`, environment markers dropped) of Requires-Dist lines,
// by normalised name.
std::map<std::string, std::string> PinnedRequirements(const std::string& requires_dist);

// A companion that moved between two artifacts: a package both pin, to different versions (a
// `pytorch-triton==3.3.0+git96316ce5` where it was `3.2.0+git4b3bb1f8`).
struct CompanionChange {
  std::string name;
  std::string before;
  std::string after;
};

// The companions pinned by both Requires-Dist lists, `before` and `after`, whose pins differ,
// by name.
std::vector<CompanionChange> CompanionChanges(const std::string& before, const std::string& after);

// PyTorch's nightly branch: an artifact whose git_version is a commit of the `nightly` branch
// was built from the main-branch commit its subject names ("2025-06-02 nightly release
// (0123abc...)"), as pytorch's tools/nightly.py reads it. Returns that commit, or nullopt when
// `subject` is no such subject.
std::optional<std::string> NightlyReleaseCommit(const std::string& subject);

// The verdict of both isolation pairings (IsolationVerdict's words, or "error" for one that
// could not be measured): the same when they agree, the other's when one is "error"; "both"
// when one found the artifact and the other the companions (each moved part of the step, or the
// step needs the two together); else "undecided".
std::string CombineIsolationVerdicts(const std::string& forward, const std::string& reverse);

// `kbisect nightly --track-package NAME[=MODULE]`: the shell command whose first line is the
// installed NAME's version and, when the module tells it, the commit it was built from ("2.8.0
// .dev20250602+cu126 (commit 0123abc...)"), as the manifest records a tool (under
// kTrackedPackagePrefix). Run with the python3 the nightly runs its benchmark with.
// InvalidArgument for an empty name.
absl::StatusOr<std::pair<std::string, std::string>> TrackedPackageTool(const std::string& spec);

// A prepared artifact range: its ledger and what the job needs from it.
class ArtifactAxis {
 public:
  // Lists NAME in the index, resolves GOOD and BAD, and writes (or finds) the ledger under
  // `cache_dir`/artifacts. Errors: those of ResolveArtifactEnds and of the index (Unavailable:
  // it cannot be reached), InvalidArgument for flags that do not fit (both or neither of
  // --find-links and --index-url).
  static absl::StatusOr<ArtifactAxis> Prepare(const ArtifactFlags& flags, const std::string& good,
                                              const std::string& bad, const std::string& cache_dir,
                                              CommandRunner* runner);

  // Makes `spec` bisect the ledger: its repository, GOOD and BAD, the install as its build in a
  // Python layer of its own, and the benchmark run in `bench_dir` (the user's directory).
  void ApplyTo(v1::JobSpec* spec, const std::string& bench_dir) const;

  // --isolate-companions: a ledger of three commits, each installing its companions from the
  // same index. Forward (`reverse` false): `last_good` as it shipped (its companions at their
  // `before` pins), `first_bad` with those same companions, and `first_bad` as it shipped
  // (`after` pins). Reverse: `last_good` as it shipped, `last_good` with the `after` pins, and
  // `first_bad` as it shipped. Bisected, the step falls on the middle commit (the cross pairing
  // is already slow) or the last (it is still fast). NotFound when the index lacks a companion's
  // version.
  absl::StatusOr<ArtifactAxis> IsolateCompanions(const ArtifactVersion& last_good,
                                                 const ArtifactVersion& first_bad,
                                                 const std::vector<CompanionChange>& changes,
                                                 bool reverse, const std::string& cache_dir,
                                                 CommandRunner* runner) const;
  // For a finished job over an isolation ledger: which of the two moved the metric, in words,
  // and as "artifact", "companions", "none" or "undecided".
  std::string IsolationText(const v1::JobStatus& status) const;
  std::string IsolationVerdict(const v1::JobStatus& status) const;

  // The ledger repository's path.
  const std::string& ledger() const { return ledger_; }
  // The artifact's distribution name.
  const std::string& name() const { return flags_.name; }
  // The subject of ledger commit `i` ("kern 1.0.dev20260106 with kern-triton 3.2.0").
  std::string Subject(size_t i) const;
  // The artifact a ledger commit pins (nullopt for a commit of no ledger of this axis).
  std::optional<ArtifactVersion> VersionOf(const std::string& sha) const;
  // The last good and the first bad artifact a finished job over the ledger named; nullopt when
  // it named no culprit.
  struct Step {
    ArtifactVersion last_good;
    ArtifactVersion first_bad;
  };
  std::optional<Step> StepOf(const v1::JobStatus& status) const;
  // The companions whose pins moved from `last_good` to `first_bad` (versions), as their
  // installs noted what they require; none when either is unknown.
  std::vector<CompanionChange> CompanionsBetween(const std::string& last_good,
                                                 const std::string& first_bad) const;
  // The commit the artifact of `version` was built from, as its install noted it; "" unknown.
  std::string CommitOf(const std::string& version) const;

  // "Last good artifact: kern 1.0.dev20260103 (commit 4b3bb1f8...); first bad artifact: kern
  // 1.0.dev20260105 (commit 96316ce5...)" and the versions skipped, for a finished job over the
  // ledger; "" when the job named no culprit.
  std::string SummaryText(const v1::JobStatus& status) const;

  // The versions whose probes were skipped (they would not install or import), in pip's order.
  std::vector<std::string> SkippedVersions(const v1::JobStatus& status) const;

  // The JSON object the result file gains as "artifacts": name, index, the versions of the range,
  // the skipped ones and, once found, last_good and first_bad each with version, commit and
  // files.
  std::string SummaryJson(const v1::JobStatus& status) const;

 private:
  // Writes (or finds) the ledger of `entries` under `cache_dir`/artifacts.
  static absl::StatusOr<ArtifactAxis> Write(const ArtifactFlags& flags,
                                            std::vector<LedgerEntry> entries,
                                            const std::string& cache_dir, CommandRunner* runner);
  // What the flags' index lists for distribution `name`.
  static absl::StatusOr<std::vector<ArtifactVersion>> List(const ArtifactFlags& flags,
                                                           const std::string& name);

  ArtifactFlags flags_;
  std::string ledger_;
  std::string notes_;
  std::vector<LedgerEntry> entries_;
  std::vector<std::string> shas_;  // The ledger commit of each entry.
};

}  // namespace kbisect

#endif  // KBISECT_CLI_ARTIFACT_AXIS_H_
