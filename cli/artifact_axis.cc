// Copyright 2026 The kbisect Authors.
#include "cli/artifact_axis.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "common/artifact/pep440.h"
#include "common/git/object_hash.h"
#include "common/manifest/manifest.h"
#include "common/status_macros.h"
#include "common/text/shell_quote.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"
#include "worker/build_step.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

// How many listed versions an error names around a missing end.
constexpr int kNearestNamed = 4;

std::string IndexOf(const ArtifactFlags& flags) {
  return flags.find_links.empty() ? flags.index_url : flags.find_links;
}

std::string ModuleOf(const ArtifactFlags& flags) {
  if (!flags.import_name.empty()) return flags.import_name;
  return absl::StrReplaceAll(absl::AsciiStrToLower(flags.name), {{"-", "_"}, {".", "_"}});
}

// The position of one end (a version or a date) in `listed`, or NotFound naming the nearest.
absl::StatusOr<size_t> FindEnd(const std::vector<ArtifactVersion>& listed, const std::string& name,
                               const std::string& index, const std::string& end,
                               const char* which) {
  if (LooksLikeDate(end)) {
    if (std::optional<size_t> found = FindByDate(listed, end)) return *found;
    // The nearest nightlies on either side of that day.
    const std::string day = absl::StrReplaceAll(end, {{"-", ""}});
    std::string before, after;
    for (const ArtifactVersion& v : listed) {
      const std::optional<std::string> date = NightlyDate(v.parsed);
      if (!date.has_value()) continue;
      if (*date < day) before = v.version;
      if (*date > day && after.empty()) after = v.version;
    }
    std::vector<std::string> nearest;
    if (!before.empty()) nearest.push_back(before);
    if (!after.empty()) nearest.push_back(after);
    return absl::NotFoundError(absl::StrCat(
        which, " ", end, ": ", index, " lists no ", name,
        " nightly of that day (no version with dev", day, ")",
        nearest.empty() ? "; it lists no dated nightly at all"
                        : absl::StrCat("; the nearest it lists: ", absl::StrJoin(nearest, ", "))));
  }
  absl::StatusOr<Pep440Version> wanted = ParsePep440(end);
  if (!wanted.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(which, " ", end, " is neither a version of ",
                                                   name, " nor a date (YYYY-MM-DD)"));
  }
  for (size_t i = 0; i < listed.size(); ++i) {
    if (ComparePep440(listed[i].parsed, *wanted) == 0) return i;
  }
  const std::vector<std::string> nearest = NearestVersions(listed, *wanted, kNearestNamed);
  return absl::NotFoundError(absl::StrCat(
      which, " ", end, ": ", index, " has no ", name, " ", end,
      nearest.empty() ? absl::StrCat("; it lists no version of ", name)
                      : absl::StrCat("; the nearest it lists: ", absl::StrJoin(nearest, ", "))));
}

// A ledger commit's date: its nightly's day (00:00 UTC), else a fixed day plus a minute per
// position, so that the same range always gives the same commits.
int64_t LedgerTime(const ArtifactVersion& version, size_t position) {
  if (std::optional<std::string> day = NightlyDate(version.parsed)) {
    absl::CivilDay civil(std::stoi(day->substr(0, 4)), std::stoi(day->substr(4, 2)),
                         std::stoi(day->substr(6, 2)));
    return absl::ToUnixSeconds(absl::FromCivil(civil, absl::UTCTimeZone()));
  }
  return 1767225600 + static_cast<int64_t>(position) * 60;
}

// The git fast-import stream of the ledger: one commit per entry, each the child of the one
// before, dated at its nightly's day (else a fixed date), so that the same range gives the same
// commits every time.
std::string LedgerStream(const ArtifactFlags& flags, const std::vector<LedgerEntry>& entries) {
  std::string stream;
  for (size_t i = 0; i < entries.size(); ++i) {
    const LedgerEntry& entry = entries[i];
    absl::StrAppend(&stream, "commit refs/heads/main\nmark :", i + 1, "\n");
    const std::string message =
        absl::StrCat(entry.Subject(flags.name), "\n\nFrom ", IndexOf(flags), "\n");
    const std::string who =
        absl::StrCat("kbisect <kbisect@localhost> ", LedgerTime(entry.version, i), " +0000\n");
    absl::StrAppend(&stream, "author ", who, "committer ", who, "data ", message.size(), "\n",
                    message);
    if (i > 0) absl::StrAppend(&stream, "from :", i, "\n");
    absl::StrAppend(&stream, "deleteall\n");
    for (const auto& [path, contents] : LedgerFiles(flags, entry.version, entry.companions)) {
      absl::StrAppend(&stream, "M 100644 inline ", path, "\ndata ", contents.size(), "\n", contents,
                      "\n");
    }
  }
  return stream;
}

// Reads `git fast-import --export-marks` output: mark i -> sha.
std::vector<std::string> ReadMarks(const std::string& path, size_t count) {
  std::vector<std::string> shas(count);
  std::ifstream in(path);
  std::string mark;
  std::string sha;
  while (in >> mark >> sha) {
    const size_t i = std::stoul(mark.substr(1));
    if (i >= 1 && i <= count) shas[i - 1] = sha;
  }
  return shas;
}

absl::Status WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace

void AddArtifactFlags(CLI::App* app, ArtifactFlags* flags) {
  auto* artifact = app->add_option(
      "--artifact", flags->name,
      "Bisect the prebuilt versions of this package (nightly wheels) instead of commits: GOOD "
      "and BAD are versions or dates (YYYY-MM-DD: the version carrying devYYYYMMDD), each probe "
      "installs one into a layer of its own from the index given, and the benchmark runs in "
      "the current directory");
  auto* links = app->add_option("--find-links", flags->find_links,
                                "With --artifact: a directory of wheels (the only index used)");
  auto* index = app->add_option("--index-url", flags->index_url,
                                "With --artifact: a PEP 503 index, http:// or file:// (the only "
                                "index used)");
  links->excludes(index);
  links->needs(artifact);
  index->needs(artifact);
  app->add_flag("--with-deps", flags->with_deps,
                "With --artifact: install the artifact's dependencies too (from the same index)")
      ->needs(artifact);
  app->add_flag("--isolate-companions", flags->isolate_companions,
                "With --artifact: when the first bad artifact pins a companion (a Triton in a "
                "torch nightly) at another version than the last good one, measure the first bad "
                "one with the last good one's companions, from the same index, to say which of "
                "the two moved the metric")
      ->needs(artifact);
  app->add_option("--import", flags->import_name,
                  "With --artifact: the module that must import after the install (default: the "
                  "package's name with '-' as '_')")
      ->needs(artifact);
  app->add_option("--commit-of", flags->commit_of,
                  "With --artifact: a command that prints the commit an installed artifact was "
                  "built from, run in its environment (default: MODULE.version.git_version, "
                  "__git_version__, __commit__, or a +g<sha> version label)")
      ->needs(artifact);
}

absl::StatusOr<ArtifactEnds> ResolveArtifactEnds(const std::vector<ArtifactVersion>& listed,
                                                 const std::string& name, const std::string& index,
                                                 const std::string& good, const std::string& bad) {
  ArtifactEnds ends;
  ASSIGN_OR_RETURN(ends.good, FindEnd(listed, name, index, good, "GOOD"));
  ASSIGN_OR_RETURN(ends.bad, FindEnd(listed, name, index, bad, "BAD"));
  if (ends.good >= ends.bad) {
    return absl::InvalidArgumentError(
        absl::StrCat("GOOD (", listed[ends.good].version, ") must be older than BAD (",
                     listed[ends.bad].version, ") in pip's version order"));
  }
  return ends;
}

std::map<std::string, std::string> LedgerFiles(const ArtifactFlags& flags,
                                               const ArtifactVersion& version,
                                               const std::vector<ArtifactPin>& companions) {
  // pip checks every requirement's hash once one has one: only what it installs alone is pinned.
  auto requirement = [&](const std::string& name, const ArtifactVersion& v) {
    std::string line = absl::StrCat(name, "==", v.version);
    for (const ArtifactFile& file : v.files) {
      if (!flags.with_deps && !file.sha256.empty()) {
        absl::StrAppend(&line, " --hash=sha256:", file.sha256);
      }
    }
    return line + "\n";
  };
  auto files_of = [](const ArtifactVersion& v) {
    nlohmann::json files = nlohmann::json::array();
    for (const ArtifactFile& file : v.files) {
      files.push_back({{"filename", file.filename}, {"sha256", file.sha256}});
    }
    return files;
  };
  nlohmann::json artifact = {{"name", flags.name},
                             {"version", version.version},
                             {"index", IndexOf(flags)},
                             {"files", files_of(version)}};
  std::string requirements = requirement(flags.name, version);
  if (!companions.empty()) {
    nlohmann::json pinned = nlohmann::json::array();
    for (const ArtifactPin& pin : companions) {
      pinned.push_back(
          {{"name", pin.name}, {"version", pin.version.version}, {"files", files_of(pin.version)}});
      requirements += requirement(pin.name, pin.version);
    }
    artifact["companions"] = pinned;
  }
  return {{"artifact.json", artifact.dump(2) + "\n"},
          {"requirements.txt", requirements},
          {"version.txt", version.version + "\n"}};
}

std::string CommitProbeProgram(const std::string& distribution, const std::string& module) {
  return absl::StrCat(R"py(import importlib, re, sys
from importlib import metadata
def sha(text):
    text = str(text or "").strip()
    return text if re.fullmatch(r"[0-9a-f]{7,40}", text) else ""
m = importlib.import_module()py",
                      "'", module, "'", R"py()
for get in (lambda: m.version.git_version, lambda: m.__git_version__, lambda: m.__commit__):
    try:
        found = sha(get())
    except Exception:
        found = ""
    if found:
        print(found)
        sys.exit(0)
try:
    version = metadata.version()py",
                      "'", distribution, "'", R"py()
except Exception:
    version = ""
label = re.search(r"\+(?:[^+]*[._-])?g(?:it)?([0-9a-f]{7,40})(?:[._-]|$)", version)
if label:
    print(label.group(1))
)py");
}

std::string RequiresProgram(const std::string& distribution) {
  return absl::StrCat("from importlib import metadata\nprint('\\n'.join(metadata.requires('",
                      distribution, "') or []))\n");
}

std::map<std::string, std::string> PinnedRequirements(const std::string& requires_dist) {
  std::map<std::string, std::string> pins;
  for (absl::string_view line : absl::StrSplit(requires_dist, '\n', absl::SkipWhitespace())) {
    // "name==1.2", "name (==1.2)", "name==1.2; extra == 'x'": the marker is not a pin.
    const absl::string_view requirement = line.substr(0, line.find(';'));
    const size_t pin = requirement.find("==");
    if (pin == absl::string_view::npos || requirement.substr(pin, 3) == "===") continue;
    size_t name_end = 0;
    while (name_end < requirement.size() &&
           (absl::ascii_isalnum(requirement[name_end]) || requirement[name_end] == '-' ||
            requirement[name_end] == '_' || requirement[name_end] == '.')) {
      ++name_end;
    }
    if (name_end == 0) continue;
    absl::string_view version = requirement.substr(pin + 2);
    version = absl::StripAsciiWhitespace(version.substr(0, version.find_first_of(" ,)")));
    if (version.empty()) continue;
    pins[NormalizeProjectName(std::string(requirement.substr(0, name_end)))] = std::string(version);
  }
  return pins;
}

std::vector<CompanionChange> CompanionChanges(const std::string& before, const std::string& after) {
  const std::map<std::string, std::string> was = PinnedRequirements(before);
  std::vector<CompanionChange> changes;
  for (const auto& [name, version] : PinnedRequirements(after)) {
    auto it = was.find(name);
    if (it != was.end() && it->second != version) changes.push_back({name, it->second, version});
  }
  return changes;
}

std::optional<std::string> NightlyReleaseCommit(const std::string& subject) {
  static const LazyRE2 kNightly = {R"(nightly release \(([0-9a-f]{40})\))"};
  std::string commit;
  if (!RE2::PartialMatch(subject, *kNightly, &commit)) return std::nullopt;
  return commit;
}

absl::StatusOr<std::pair<std::string, std::string>> TrackedPackageTool(const std::string& spec) {
  const size_t eq = spec.find('=');
  ArtifactFlags flags;
  flags.name = std::string(absl::StripAsciiWhitespace(spec.substr(0, eq)));
  if (eq != std::string::npos) flags.import_name = spec.substr(eq + 1);
  if (flags.name.empty() || (eq != std::string::npos && flags.import_name.empty())) {
    return absl::InvalidArgumentError(absl::StrCat("--track-package ", spec,
                                                   ": expected NAME or NAME=MODULE (e.g. torch, "
                                                   "pytorch-triton=triton)"));
  }
  const std::string version =
      absl::StrCat("from importlib import metadata\nprint(metadata.version('", flags.name, "'))\n");
  std::string command = absl::StrCat("v=$(python3 -c ", ShellQuote(version), ") && c=$(python3 -c ",
                                     ShellQuote(CommitProbeProgram(flags.name, ModuleOf(flags))),
                                     " 2>/dev/null | head -n 1); echo \"$v${c:+ (commit $c)}\"");
  return std::make_pair(absl::StrCat(kTrackedPackagePrefix, NormalizeProjectName(flags.name)),
                        command);
}

// A shell condition true when the index can be reached from here.
std::string IndexReachableCheck(const ArtifactFlags& flags) {
  if (!flags.find_links.empty()) return absl::StrCat("[ -d ", ShellQuote(flags.find_links), " ]");
  return absl::StrCat(
      "python -c ",
      ShellQuote("import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=30)"),
      " ", ShellQuote(absl::StrCat(flags.index_url, "/", NormalizeProjectName(flags.name), "/")),
      " >/dev/null 2>&1");
}

std::string ArtifactInstallCommand(const ArtifactFlags& flags) {
  const std::string index =
      flags.find_links.empty()
          ? absl::StrCat("--index-url ", ShellQuote(flags.index_url))
          : absl::StrCat("--no-index --find-links ", ShellQuote(flags.find_links));
  const std::string module = ModuleOf(flags);
  const std::string commit =
      flags.commit_of.empty()
          ? absl::StrCat("python -c ", ShellQuote(CommitProbeProgram(flags.name, module)))
          : flags.commit_of;
  const std::string notes = absl::StrCat("\"$", kArtifactNotesEnv, "\"");
  const std::string note = absl::StrCat(notes, "/$(cat version.txt)");
  return absl::StrJoin(
      {
          std::string("set -e"),
          // Only the index given: no configuration file, no variable adds another.
          absl::StrCat("if ! env -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL -u PIP_FIND_LINKS ",
                       "-u PIP_NO_INDEX PIP_CONFIG_FILE=/dev/null ",
                       "PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 ",
                       "python -m pip install --quiet ", flags.with_deps ? "" : "--no-deps ", index,
                       " -r requirements.txt; then"),
          // An index out of reach says nothing of this version: the worker's problem.
          absl::StrCat("  ", IndexReachableCheck(flags), " || { echo \"kbisect: ", IndexOf(flags),
                       " cannot be reached from this worker\" >&2; exit ",
                       kBuildCannotRunHereExitCode, "; }"),
          std::string("  exit 1"),
          std::string("fi"),
          absl::StrCat("python -c ", ShellQuote(absl::StrCat("import ", module))),
          absl::StrCat("commit=$(", commit, ") || commit="),
          absl::StrCat("echo \"kbisect: ", flags.name,
                       " $(cat version.txt) was built from commit ${commit:-unknown}\""),
          // The commit, and what it pins (a companion such as a Triton inside a torch nightly).
          absl::StrCat("if [ -n ", notes, " ]; then mkdir -p ", notes,
                       " && { [ -z \"$commit\" ] || printf '%s\\n' \"$commit\" > ", note,
                       "; } && { python -c ", ShellQuote(RequiresProgram(flags.name)), " > ", note,
                       ".requires || true; }; fi"),
      },
      "\n");
}

absl::StatusOr<ArtifactAxis> ArtifactAxis::Prepare(const ArtifactFlags& flags,
                                                   const std::string& good, const std::string& bad,
                                                   const std::string& cache_dir,
                                                   CommandRunner* runner) {
  if (flags.find_links.empty() == flags.index_url.empty()) {
    return absl::InvalidArgumentError(
        "--artifact needs its index: --find-links DIR or --index-url URL (one of them)");
  }
  if (bad.empty()) {
    return absl::InvalidArgumentError("--artifact needs GOOD and BAD (versions or dates)");
  }
  ArtifactFlags resolved = flags;
  if (!flags.find_links.empty()) {
    std::error_code error;
    resolved.find_links = fs::absolute(flags.find_links, error).lexically_normal().string();
  }
  ASSIGN_OR_RETURN(std::vector<ArtifactVersion> listed, List(resolved, resolved.name));
  ASSIGN_OR_RETURN(ArtifactEnds ends,
                   ResolveArtifactEnds(listed, resolved.name, IndexOf(resolved), good, bad));
  std::vector<LedgerEntry> entries;
  for (size_t i = ends.good; i <= ends.bad; ++i) entries.push_back({listed[i], {}});
  return Write(resolved, std::move(entries), cache_dir, runner);
}

absl::StatusOr<ArtifactAxis> ArtifactAxis::Write(const ArtifactFlags& flags,
                                                 std::vector<LedgerEntry> entries,
                                                 const std::string& cache_dir,
                                                 CommandRunner* runner) {
  ArtifactAxis axis;
  axis.flags_ = flags;
  axis.entries_ = std::move(entries);
  const std::string stream = LedgerStream(flags, axis.entries_);
  const std::string key = GitBlobId(stream).substr(0, 16);
  axis.ledger_ = absl::StrCat(cache_dir, "/artifacts/", NormalizeProjectName(flags.name), "-", key);
  axis.notes_ =
      absl::StrCat(cache_dir, "/artifacts/notes/", GitBlobId(IndexOf(flags)).substr(0, 16), "/",
                   NormalizeProjectName(flags.name));
  std::error_code error;
  fs::create_directories(axis.ledger_, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot make ", axis.ledger_, ": ", error.message()));
  }
  RETURN_IF_ERROR(WriteFile(axis.ledger_ + ".stream", stream));
  ExecRequest import;
  import.shell_command = absl::StrCat(
      "git init -q ", ShellQuote(axis.ledger_), " && git -C ", ShellQuote(axis.ledger_),
      " fast-import --quiet --force --export-marks=", ShellQuote(axis.ledger_ + ".marks"), " < ",
      ShellQuote(axis.ledger_ + ".stream"), " && git -C ", ShellQuote(axis.ledger_),
      " -c advice.detachedHead=false checkout -q -f main");
  import.env = {{"GIT_CONFIG_NOSYSTEM", "1"}, { "GIT_CONFIG_GLOBAL", "/dev/null" }};
  import.timeout = absl::Minutes(2);
  ASSIGN_OR_RETURN(ExecResult written, runner->Run(import, nullptr));
  if (written.exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("cannot write the artifact ledger ", axis.ledger_, ": ", written.output));
  }
  axis.shas_ = ReadMarks(axis.ledger_ + ".marks", axis.entries_.size());
  return axis;
}

absl::StatusOr<std::vector<ArtifactVersion>> ArtifactAxis::List(const ArtifactFlags& flags,
                                                                const std::string& name) {
  return flags.find_links.empty() ? ListIndex(flags.index_url, name)
                                  : ListFindLinks(flags.find_links, name);
}

absl::StatusOr<ArtifactAxis> ArtifactAxis::IsolateCompanions(
    const ArtifactVersion& last_good, const ArtifactVersion& first_bad,
    const std::vector<CompanionChange>& changes, bool reverse, const std::string& cache_dir,
    CommandRunner* runner) const {
  std::vector<ArtifactPin> before;
  std::vector<ArtifactPin> after;
  for (const CompanionChange& change : changes) {
    ASSIGN_OR_RETURN(std::vector<ArtifactVersion> listed, List(flags_, change.name));
    auto find = [&](const std::string& version) -> absl::StatusOr<ArtifactPin> {
      for (const ArtifactVersion& v : listed) {
        if (v.version == version) return ArtifactPin{change.name, v};
      }
      return absl::NotFoundError(absl::StrCat("--isolate-companions: ", IndexOf(flags_), " has no ",
                                              change.name, " ", version));
    };
    ASSIGN_OR_RETURN(ArtifactPin old_pin, find(change.before));
    ASSIGN_OR_RETURN(ArtifactPin new_pin, find(change.after));
    before.push_back(std::move(old_pin));
    after.push_back(std::move(new_pin));
  }
  // Last good as it shipped, the cross pairing, first bad as it shipped: the step lies on the
  // cross pairing (it took what moved the metric) or after it (it lacks it).
  ArtifactFlags flags = flags_;
  flags.with_deps = false;
  LedgerEntry cross = reverse ? LedgerEntry{last_good, after} : LedgerEntry{first_bad, before};
  return Write(flags, {{last_good, before}, std::move(cross), {first_bad, after}}, cache_dir,
               runner);
}

std::string CombineIsolationVerdicts(const std::string& forward, const std::string& reverse) {
  if (forward == reverse) return forward;
  if (forward == "error") return reverse;
  if (reverse == "error") return forward;
  const bool split = (forward == "artifact" && reverse == "companions") ||
                     (forward == "companions" && reverse == "artifact");
  return split ? "both" : "undecided";
}

std::string ArtifactAxis::IsolationText(const v1::JobStatus& status) const {
  if (entries_.size() != 3) return "";
  const std::string cross = entries_[1].Subject(flags_.name);
  const bool reverse = entries_[1].version.version == entries_[0].version.version;
  if (status.status() == v1::OUTCOME_NO_REGRESSION) {
    return absl::StrCat("Companions isolated", reverse ? " (reversed)" : "", ": no step between ",
                        entries_[0].Subject(flags_.name), " and ", entries_[2].Subject(flags_.name),
                        " when the companions are installed as pinned: the step needs the "
                        "environment the artifact stage ran in\n");
  }
  std::vector<std::string> moved;
  for (size_t i = 0; i < entries_[2].companions.size(); ++i) {
    moved.push_back(absl::StrCat(entries_[2].companions[i].name, " ",
                                 entries_[0].companions[i].version.version, " -> ",
                                 entries_[2].companions[i].version.version));
  }
  const std::string verdict = IsolationVerdict(status);
  if (verdict == "artifact") {
    return reverse ? absl::StrCat("Companions isolated (reversed): the step is ", flags_.name,
                                  "'s own: ", cross, " is as fast as the last good artifact\n")
                   : absl::StrCat("Companions isolated: the step is ", flags_.name,
                                  "'s own: ", cross, " is already slow\n");
  }
  if (verdict == "companions") {
    return absl::StrCat("Companions isolated", reverse ? " (reversed)" : "",
                        ": the step came with ", absl::StrJoin(moved, ", "), ": ", cross,
                        reverse ? " is already slow\n" : " is as fast as the last good artifact\n");
  }
  return absl::StrCat("Companions isolated", reverse ? " (reversed)" : "",
                      ": the measurement did not decide\n");
}

std::string ArtifactAxis::Subject(size_t i) const { return entries_[i].Subject(flags_.name); }

std::string ArtifactAxis::IsolationVerdict(const v1::JobStatus& status) const {
  if (entries_.size() != 3) return "";
  if (status.status() == v1::OUTCOME_NO_REGRESSION) return "none";
  // The cross pairing took the artifact from the first bad one (forward) or the companions
  // (reverse); slow, what it took moved the metric; fast, what it lacks did.
  const bool reverse = entries_[1].version.version == entries_[0].version.version;
  const char* taken = reverse ? "companions" : "artifact";
  const char* lacked = reverse ? "artifact" : "companions";
  if (status.culprit().sha() == shas_[1]) return taken;
  if (status.culprit().sha() == shas_[2]) return lacked;
  return "undecided";
}

void ArtifactAxis::ApplyTo(v1::JobSpec* spec, const std::string& bench_dir) const {
  spec->set_repository(ledger_);
  spec->set_good(shas_.front());
  spec->set_bad(shas_.back());
  spec->set_build_command(ArtifactInstallCommand(flags_));
  spec->set_build_isolation(v1::BUILD_ISOLATION_PYTHON);
  (*spec->mutable_env())[kBenchDirEnv] = bench_dir;
  (*spec->mutable_env())[kArtifactNotesEnv] = notes_;
}

std::optional<ArtifactVersion> ArtifactAxis::VersionOf(const std::string& sha) const {
  for (size_t i = 0; i < shas_.size(); ++i) {
    if (shas_[i] == sha) return entries_[i].version;
  }
  return std::nullopt;
}

std::vector<CompanionChange> ArtifactAxis::CompanionsBetween(const std::string& last_good,
                                                             const std::string& first_bad) const {
  auto read = [&](const std::string& version) {
    std::ifstream in(absl::StrCat(notes_, "/", version, ".requires"));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  return CompanionChanges(read(last_good), read(first_bad));
}

std::string ArtifactAxis::CommitOf(const std::string& version) const {
  std::ifstream in(absl::StrCat(notes_, "/", version));
  std::string commit;
  in >> commit;
  return commit;
}

std::string LedgerEntry::Subject(const std::string& name) const {
  std::string subject = absl::StrCat(name, " ", version.version);
  for (size_t i = 0; i < companions.size(); ++i) {
    absl::StrAppend(&subject, i == 0 ? " with " : ", ", companions[i].name, " ",
                    companions[i].version.version);
  }
  return subject;
}

std::vector<std::string> ArtifactAxis::SkippedVersions(const v1::JobStatus& status) const {
  std::vector<std::string> skipped;
  for (size_t i = 0; i < shas_.size(); ++i) {
    const bool skip =
        std::any_of(status.probes().begin(), status.probes().end(), [&](const v1::Probe& probe) {
          return probe.sha() == shas_[i] && probe.verdict() == v1::VERDICT_SKIP;
        });
    if (skip) skipped.push_back(entries_[i].version.version);
  }
  return skipped;
}

std::optional<ArtifactAxis::Step> ArtifactAxis::StepOf(const v1::JobStatus& status) const {
  std::optional<ArtifactVersion> last_good = VersionOf(status.last_good().sha());
  std::optional<ArtifactVersion> first_bad = VersionOf(status.culprit().sha());
  if (!last_good.has_value() || !first_bad.has_value()) return std::nullopt;
  return Step{*std::move(last_good), *std::move(first_bad)};
}

std::string ArtifactAxis::SummaryText(const v1::JobStatus& status) const {
  const std::optional<Step> step = StepOf(status);
  if (!step.has_value()) return "";
  const ArtifactVersion* last_good = &step->last_good;
  const ArtifactVersion* first_bad = &step->first_bad;
  auto named = [&](const ArtifactVersion& v) {
    const std::string commit = CommitOf(v.version);
    return absl::StrCat(flags_.name, " ", v.version, " (",
                        commit.empty() ? "commit unknown" : absl::StrCat("commit ", commit), ")");
  };
  std::string text = absl::StrCat("Last good artifact: ", named(*last_good),
                                  "\nFirst bad artifact: ", named(*first_bad), "\n");
  for (const CompanionChange& change : CompanionsBetween(last_good->version, first_bad->version)) {
    absl::StrAppend(&text, "Companion pin changed: ", change.name, " ", change.before, " -> ",
                    change.after, " (", flags_.name, " ", first_bad->version,
                    " pins it): the step may be that package's, not ", flags_.name, "'s own\n");
  }
  const std::vector<std::string> skipped = SkippedVersions(status);
  if (!skipped.empty()) {
    absl::StrAppend(&text, "Skipped (would not install or import): ", flags_.name, " ",
                    absl::StrJoin(skipped, ", "), "\n");
  }
  return text;
}

std::string ArtifactAxis::SummaryJson(const v1::JobStatus& status) const {
  auto describe = [&](const ArtifactVersion& v) {
    nlohmann::json files = nlohmann::json::array();
    for (const ArtifactFile& f : v.files) {
      files.push_back({{"filename", f.filename}, {"sha256", f.sha256}, {"url", f.url}});
    }
    return nlohmann::json{
        {"version", v.version}, {"commit", CommitOf(v.version)}, {"files", files}};
  };
  nlohmann::json out = {{"name", flags_.name}, {"index", IndexOf(flags_)}};
  nlohmann::json versions = nlohmann::json::array();
  for (const LedgerEntry& entry : entries_) versions.push_back(entry.version.version);
  out["versions"] = versions;
  out["skipped"] = SkippedVersions(status);
  nlohmann::json companions = nlohmann::json::array();
  if (const std::optional<Step> step = StepOf(status)) {
    out["last_good"] = describe(step->last_good);
    out["first_bad"] = describe(step->first_bad);
    for (const CompanionChange& c :
         CompanionsBetween(step->last_good.version, step->first_bad.version)) {
      companions.push_back({{"name", c.name}, {"before", c.before}, {"after", c.after}});
    }
  }
  out["companions"] = companions;
  return out.dump();
}

}  // namespace kbisect
