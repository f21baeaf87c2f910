// Copyright 2026 The kbisect Authors.
#include "cli/job_log.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/rpc/enum_label.h"
#include "common/text/count.h"

namespace kbisect {
namespace {

std::string Samples(const v1::Probe& probe) {
  std::vector<std::string> values;
  for (double sample : probe.samples()) values.push_back(absl::StrFormat("%.6g", sample));
  return values.empty() ? "-" : absl::StrJoin(values, ",");
}

}  // namespace

std::string FormatJobLog(const v1::JobStatus& job) {
  std::string out = absl::StrCat("# kbisect log of ", job.job_id(), ": ", job.spec().repository(),
                                 " ", job.spec().good(), "..", job.spec().bad(), " (",
                                 job.good_sha().substr(0, 12), "..", job.bad_sha().substr(0, 12),
                                 ", ", Count(job.commit_count(), "commit"), ")\n");
  absl::StrAppend(&out,
                  "# Lines: VERDICT SHA SAMPLES  # round, index, worker. `kbisect run GOOD BAD "
                  "--replay FILE -- CMD` starts from\n# these verdicts (as --mark): edit one to "
                  "correct it, delete a line to measure that commit again.\n");
  // One line per commit: the marks, then the latest final verdict of each probed commit.
  std::map<int, std::string> lines;
  for (const v1::CommitMark& mark : job.marks()) {
    lines[mark.index()] = absl::StrCat(EnumLabel(mark.verdict()), " ", mark.sha(),
                                       " -  # marked by you, index ", mark.index());
  }
  for (const v1::Probe& probe : job.probes()) {
    const bool baseline =
        probe.kind() == v1::PROBE_KIND_BASELINE_GOOD || probe.kind() == v1::PROBE_KIND_BASELINE_BAD;
    if (baseline && (probe.index() == 0 || probe.index() == job.commit_count()) &&
        probe.state() == v1::PROBE_STATE_FINISHED && lines.count(probe.index()) == 0) {
      lines[probe.index()] = absl::StrCat(
          "# ", probe.index() == 0 ? "good" : "bad", " ", probe.sha(), " ", Samples(probe), "  # ",
          probe.index() == 0 ? "GOOD" : "BAD", " baseline, worker ", probe.worker());
      continue;
    }
    if (probe.kind() != v1::PROBE_KIND_BISECT || probe.state() != v1::PROBE_STATE_FINISHED) {
      continue;
    }
    if (probe.verdict() != v1::VERDICT_GOOD && probe.verdict() != v1::VERDICT_BAD &&
        probe.verdict() != v1::VERDICT_SKIP) {
      continue;  // Undecided or superseded: nothing to replay.
    }
    const std::string verdict = EnumLabel(probe.verdict());
    lines[probe.index()] =
        absl::StrCat(verdict, " ", probe.sha(), " ", Samples(probe), "  # round ", probe.round(),
                     ", index ", probe.index(), ", ", probe.worker(),
                     probe.cached() ? ", cached" : "", probe.provisional() ? ", provisional" : "",
                     probe.message().empty() ? "" : absl::StrCat(": ", probe.message()));
  }
  for (const auto& [index, line] : lines) absl::StrAppend(&out, line, "\n");
  return out;
}

absl::StatusOr<std::vector<v1::CommitMark>> ParseJobLog(const std::string& text) {
  std::vector<v1::CommitMark> marks;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    const size_t hash = line.find('#');
    if (hash != absl::string_view::npos) line = line.substr(0, hash);
    const std::vector<absl::string_view> words =
        absl::StrSplit(absl::StripAsciiWhitespace(line), absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (words.empty()) continue;
    v1::CommitMark mark;
    const std::string verdict = absl::AsciiStrToLower(words[0]);
    if (verdict == "good") {
      mark.set_verdict(v1::VERDICT_GOOD);
    } else if (verdict == "bad") {
      mark.set_verdict(v1::VERDICT_BAD);
    } else if (verdict == "skip") {
      mark.set_verdict(v1::VERDICT_SKIP);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", number, ": '", words[0],
                       "' is not a verdict; log lines are "
                       "\"good|bad|skip SHA ...\" (after # a line is a comment)"));
    }
    if (words.size() < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", number, ": a verdict needs the commit's sha after it"));
    }
    mark.set_commit(std::string(words[1]));
    marks.push_back(std::move(mark));
  }
  return marks;
}

absl::Status AddReplayMarks(const std::string& path, v1::JobSpec* spec) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("--replay: cannot read '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::vector<v1::CommitMark>> marks = ParseJobLog(text.str());
  if (!marks.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--replay ", path, ": ", marks.status().message()));
  }
  for (v1::CommitMark& mark : *marks) *spec->add_marks() = std::move(mark);
  return absl::OkStatus();
}

std::string LastRunLogPath(const std::string& cache_dir) {
  return absl::StrCat(cache_dir, "/runs/last.log");
}

}  // namespace kbisect
