// Copyright 2026 The kbisect Authors.
#include "cli/report/report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "cli/report/status_json.h"
#include "common/metric/percent.h"
#include "common/rpc/enum_label.h"
#include "common/text/count.h"
#include "coordinator/root_cause/root_cause.h"
#include "report/event_words.h"
#include "report/gpu_during_job.h"
#include "report/submodule_bump.h"
#include "report/suite_groups.h"
#include "report/words.h"

namespace kbisect {
namespace {

constexpr char kBanner[] = "============================================================";
constexpr int kMaxLogTailLines = 10;
constexpr size_t kMaxSamplesShown = 10;

// Shortens shas to the length the coordinator chose for the culprit's short sha (7 otherwise),
// so that one commit reads the same everywhere in the report.
class Shortener {
 public:
  explicit Shortener(const v1::JobStatus& job) {
    for (const v1::CommitRef* ref : {&job.culprit(), &job.last_good(), &job.merged_culprit()}) {
      if (!ref->short_sha().empty()) {
        length_ = ref->short_sha().size();
        break;
      }
    }
  }
  std::string operator()(const std::string& sha) const { return sha.substr(0, length_); }
  std::string operator()(const v1::CommitRef& ref) const {
    return ref.short_sha().empty() ? (*this)(ref.sha()) : ref.short_sha();
  }

 private:
  size_t length_ = 7;
};

bool IsTimeUnit(absl::string_view unit) {
  const std::string lower = absl::AsciiStrToLower(unit);
  return lower == "s" || lower == "ms" || lower == "us" || lower == "ns" || lower == "\xc2\xb5s" ||
         lower == "sec" || lower == "min" || lower == "seconds";
}

// "52.0% slower", "12.5% lower": the size of a regression (positive `pct` = worse) in words.
std::string DescribeChange(double pct, const v1::JobStatus& job) {
  const bool higher_is_better = job.direction() == v1::DIRECTION_HIGHER_IS_BETTER;
  const bool worse = pct >= 0;
  std::string word;
  if (!higher_is_better && IsTimeUnit(job.metric_unit())) {
    word = worse ? "slower" : "faster";
  } else if (higher_is_better) {
    word = worse ? "lower" : "higher";
  } else {
    word = worse ? "higher" : "lower";
  }
  std::string out = absl::StrCat(FormatPercent(std::fabs(pct)), " ", word);
  if (!IsTimeUnit(job.metric_unit()) || higher_is_better) {
    absl::StrAppend(&out, higher_is_better ? " (higher is better)" : " (lower is better)");
  }
  if (!worse) absl::StrAppend(&out, ", an improvement");
  return out;
}

double PercentChange(double before, double after, const v1::JobStatus& job) {
  if (before == 0) return 0;
  const double pct = (after - before) / std::fabs(before) * 100.0;
  return job.direction() == v1::DIRECTION_HIGHER_IS_BETTER ? -pct : pct;
}

std::string MetricName(const v1::JobStatus& job) {
  return job.metric_name().empty() ? "metric" : job.metric_name();
}

std::string Value(double value, const v1::JobStatus& job) {
  return FormatMetricValue(value, job.metric_unit());
}

// A posterior probability as the report prints it: one decimal, and "> 99.9%" above that.
std::string ProbabilityText(double p) { return p >= 0.9995 ? "> 99.9%" : FormatPercent(100 * p); }

std::string FirstLine(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  const size_t newline = text.find('\n');
  return std::string(newline == absl::string_view::npos ? text : text.substr(0, newline));
}

std::vector<std::string> LastLines(absl::string_view text, int count) {
  std::vector<std::string> lines =
      absl::StrSplit(absl::StripTrailingAsciiWhitespace(text), '\n', absl::SkipEmpty());
  if (static_cast<int>(lines.size()) > count) lines.erase(lines.begin(), lines.end() - count);
  for (std::string& line : lines) absl::StripTrailingAsciiWhitespace(&line);
  return lines;
}

std::string FormatWallTime(double seconds) {
  if (seconds < 60) return absl::StrFormat("%.1fs", seconds);
  const int64_t total = static_cast<int64_t>(std::llround(seconds));
  if (total < 3600) return absl::StrFormat("%dm%02ds", total / 60, total % 60);
  return absl::StrFormat("%dh%02dm%02ds", total / 3600, (total / 60) % 60, total % 60);
}

std::string SampleList(const google::protobuf::RepeatedField<double>& samples,
                       const v1::JobStatus& job) {
  std::vector<std::string> shown;
  for (int i = 0; i < samples.size() && shown.size() < kMaxSamplesShown; ++i) {
    shown.push_back(Value(samples.Get(i), job));
  }
  std::string out = absl::StrJoin(shown, ", ");
  if (static_cast<size_t>(samples.size()) > shown.size()) {
    absl::StrAppend(&out, ", ... (", samples.size(), " in all)");
  }
  return out;
}

bool HasValue(const v1::Probe& probe) { return probe.samples_size() > 0 || probe.median() != 0; }

// Probes of the bisect proper that finished, in the order they finished.
std::vector<const v1::Probe*> FinishedBisectProbes(const v1::JobStatus& job) {
  std::vector<const v1::Probe*> probes;
  bool all_timed = true;
  for (const v1::Probe& probe : job.probes()) {
    if (probe.kind() != v1::PROBE_KIND_BISECT && probe.kind() != v1::PROBE_KIND_UNSPECIFIED) {
      continue;
    }
    const bool finished = probe.state() == v1::PROBE_STATE_FINISHED ||
                          (probe.state() == v1::PROBE_STATE_UNSPECIFIED &&
                           probe.verdict() != v1::VERDICT_UNSPECIFIED);
    if (!finished) continue;
    if (!probe.has_end_time()) all_timed = false;
    probes.push_back(&probe);
  }
  if (all_timed) {
    std::stable_sort(probes.begin(), probes.end(), [](const v1::Probe* a, const v1::Probe* b) {
      if (a->end_time().seconds() != b->end_time().seconds()) {
        return a->end_time().seconds() < b->end_time().seconds();
      }
      return a->end_time().nanos() < b->end_time().nanos();
    });
  }
  return probes;
}

bool IsFailedProbe(const v1::Probe& probe) {
  if (probe.verdict() == v1::VERDICT_SKIP || probe.verdict() == v1::VERDICT_AMBIGUOUS) return true;
  switch (probe.outcome()) {
    case v1::TASK_OUTCOME_UNSPECIFIED:
    case v1::TASK_OUTCOME_SUCCEEDED:
    case v1::TASK_OUTCOME_PASSED:
    case v1::TASK_OUTCOME_FAILED:
    case v1::TASK_OUTCOME_CANCELLED:
      return false;
    default:
      return true;
  }
}

std::string ProbeKindLabel(v1::ProbeKind kind) {
  switch (kind) {
    case v1::PROBE_KIND_BASELINE_GOOD:
      return "GOOD baseline";
    case v1::PROBE_KIND_BASELINE_BAD:
      return "BAD baseline";
    case v1::PROBE_KIND_CONTROL:
      return "control";
    case v1::PROBE_KIND_CONFIRM:
      return "confirmation";
    case v1::PROBE_KIND_SUITE:
      return "suite probe";
    default:
      return "probe";
  }
}

std::string WorkerRound(const v1::Probe& probe) {
  std::vector<std::string> parts;
  if (!probe.worker().empty()) parts.push_back(absl::StrCat("worker ", probe.worker()));
  parts.push_back(absl::StrCat("round ", probe.round()));
  if (probe.cached()) parts.push_back(absl::StrCat("cached from ", probe.cached_job_id()));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

class ReportWriter {
 public:
  explicit ReportWriter(const v1::JobStatus& job) : job_(job), short_(job) {}

  std::string Write() {
    Line(kBanner);
    Line(Title());
    Line(kBanner);
    const bool try_answered =
        job_.spec().has_try_change() &&
        (job_.status() == v1::OUTCOME_CULPRIT_FOUND || job_.status() == v1::OUTCOME_NO_REGRESSION);
    switch (try_answered ? v1::OUTCOME_UNSPECIFIED : job_.status()) {
      case v1::OUTCOME_UNSPECIFIED:
        TryResult();
        break;
      case v1::OUTCOME_CULPRIT_FOUND:
        Culprit();
        break;
      case v1::OUTCOME_CANDIDATES_FOUND:
        Candidates();
        break;
      case v1::OUTCOME_NO_REGRESSION:
        NoRegression();
        break;
      case v1::OUTCOME_INCONCLUSIVE:
        Problem("Bisect inconclusive: ", "the probes could not single out a commit");
        break;
      case v1::OUTCOME_ERROR:
        Problem("Bisect failed: ", "unknown error");
        break;
      case v1::OUTCOME_CANCELLED:
        Problem("Bisect cancelled: ", "cancelled by request");
        break;
      default:
        Running();
        break;
    }
    RevertCheck();
    Suite();
    Marks();
    Baselines();
    Confirmation();
    Workers();
    Warnings();
    Summary();
    Line(kBanner);
    return out_;
  }

 private:
  void Line(absl::string_view text = "") { absl::StrAppend(&out_, text, "\n"); }

  // Writes `text` after `prefix`, wrapped at kWidth columns; continuation lines are indented to
  // line up with the text.
  void Wrapped(absl::string_view prefix, absl::string_view text) {
    constexpr size_t kWidth = 100;
    const std::string indent(prefix.size(), ' ');
    std::string line(prefix);
    bool empty = true;
    for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
      if (!empty && line.size() + 1 + word.size() > kWidth) {
        Line(line);
        line = indent;
        empty = true;
      }
      if (!empty) line.push_back(' ');
      absl::StrAppend(&line, word);
      empty = false;
    }
    Line(line);
  }

  void Commit(const v1::CommitRef& commit, const std::string& indent) {
    Line(absl::StrCat(indent, "Commit:  ", commit.sha(), commit.is_merge() ? " (merge)" : ""));
    if (!commit.author().empty()) Line(absl::StrCat(indent, "Author:  ", commit.author()));
    if (!commit.date().empty()) Line(absl::StrCat(indent, "Date:    ", commit.date()));
    Line(absl::StrCat(indent, "Message: ", commit.subject()));
    int shown = 0;
    for (absl::string_view body_line :
         absl::StrSplit(absl::StripTrailingAsciiWhitespace(commit.body()), '\n')) {
      if (shown == 0 && absl::StripAsciiWhitespace(body_line).empty()) continue;
      if (++shown > 8) {
        Line(absl::StrCat(indent, "         ..."));
        break;
      }
      Line(absl::StrCat(indent, "         ", absl::StripTrailingAsciiWhitespace(body_line)));
    }
  }

  void Impact(const std::string& before_label, const std::string& after_label, bool required) {
    if (job_.before() == 0 && job_.after() == 0) {
      if (!required) return;
      Line();
      Line("Performance impact:");
      Line("  (no metric values were recorded for the last good commit and the culprit)");
      return;
    }
    double pct = job_.culprit_regression_pct();
    if (pct == 0) pct = PercentChange(job_.before(), job_.after(), job_);
    Line();
    Line("Performance impact:");
    Line(absl::StrCat("  Before (", before_label, "): ", MetricName(job_), " = ",
                      Value(job_.before(), job_)));
    Line(absl::StrCat("  After (", after_label, "): ", MetricName(job_), " = ",
                      Value(job_.after(), job_)));
    Line(absl::StrCat(job_.spec().find_fix() ? "  Improvement: " : "  Regression: ",
                      DescribeChange(pct, job_)));
  }

  void FilesChanged() {
    Line();
    Line("Files changed:");
    if (job_.files_changed_size() == 0) {
      Line("  (not listed)");
      return;
    }
    int additions = 0;
    int deletions = 0;
    for (const v1::FileChange& file : job_.files_changed()) {
      std::string path = file.path();
      if (!file.old_path().empty() && file.old_path() != file.path()) {
        path = absl::StrCat(file.old_path(), " -> ", file.path());
      }
      std::string note;
      if (file.status() == "A") note = " (new)";
      if (file.status() == "D") note = " (deleted)";
      if (file.binary()) {
        Line(absl::StrCat("  ", path, "  (binary)", note));
      } else {
        Line(absl::StrCat("  ", path, "  +", file.additions(), " -", file.deletions(), note));
      }
      additions += file.additions();
      deletions += file.deletions();
    }
    Line(absl::StrCat("  ", Count(job_.files_changed_size(), "file"), " changed, +", additions,
                      " -", deletions));
  }

  void SubmoduleBumps() {
    Line();
    Line("Dependency bumps:");
    for (const v1::SubmoduleBump& bump : job_.submodule_bumps()) {
      Wrapped("  ", DescribeSubmoduleBump(bump));
      for (const std::string& line : SubmoduleBumpCommitLines(bump)) Line("    " + line);
    }
  }

  void BisectLog() {
    Line();
    Line("Bisect log:");
    const std::vector<const v1::Probe*> probes = FinishedBisectProbes(job_);
    if (probes.empty()) {
      Line("  (no commits between GOOD and BAD needed probing)");
      return;
    }
    int step = 0;
    for (const v1::Probe* probe : probes) {
      std::string line = absl::StrCat(
          "  Step ", ++step, ": ", short_(probe->sha()), " = ",
          HasValue(*probe) ? Value(probe->median(), job_) : "n/a", " -> ",
          // Measured while the baselines ran, then outside the interval: no verdict.
          probe->verdict() == v1::VERDICT_UNSPECIFIED && job_.status() != v1::OUTCOME_RUNNING
              ? std::string("not needed (outside the interval when judged)")
              : VerdictWord(probe->verdict(), WordCase::kUpper),
          " ", WorkerRound(*probe));
      if (probe->verdict() == v1::VERDICT_SKIP || !probe->message().empty()) {
        std::vector<std::string> why;
        if (probe->outcome() != v1::TASK_OUTCOME_UNSPECIFIED &&
            probe->outcome() != v1::TASK_OUTCOME_SUCCEEDED) {
          why.push_back(TaskOutcomeName(probe->outcome()));
        }
        if (!probe->message().empty()) why.push_back(FirstLine(probe->message()));
        if (!why.empty()) absl::StrAppend(&line, ": ", absl::StrJoin(why, ": "));
      }
      Line(line);
    }
  }

  void RootCauseHints() {
    Line();
    Line("Root-cause hints:");
    if (job_.root_cause_hints_size() == 0) {
      Line("  no known pattern matched; read the diff:");
      Line(absl::StrCat("  git diff ", short_(job_.last_good()), " ", short_(job_.culprit())));
      return;
    }
    int n = 0;
    for (const v1::RootCauseHint& hint : job_.root_cause_hints()) {
      Line(absl::StrCat("  ", ++n, ". ", hint.pattern(), " in ", hint.file()));
      if (!hint.hunk_header().empty()) Line(absl::StrCat("     ", hint.hunk_header()));
      if (!hint.line().empty()) Line(absl::StrCat("     ", hint.line()));
      Line(absl::StrCat("     Likely cause: ", hint.likely_cause()));
    }
    const std::vector<v1::RootCauseHint> hints(job_.root_cause_hints().begin(),
                                               job_.root_cause_hints().end());
    Wrapped("  Hypothesis: ", SummarizeHypothesis(hints));
  }

  std::string Title() const {
    if (job_.spec().has_try_change()) return "PERFORMANCE TRY RESULT";
    if (job_.spec().find_fix()) return "PERFORMANCE FIX BISECT RESULT";
    return "PERFORMANCE REGRESSION BISECT RESULT";
  }

  // A try job's answer: the change and what it does (TryResultWords).
  void TryResult() {
    const v1::TryChange& change = job_.spec().try_change();
    Line();
    Wrapped("Change tried: ", absl::StrCat(change.description(), " (commit ",
                                           short_(job_.bad_sha()), ", ", change.ref(), ")"));
    Wrapped("  Result: ", TryResultWords(job_));
    if (job_.confirmation().ratio() == 0 && !job_.error().empty()) {
      Wrapped("  Reason: ", job_.error());
    }
  }

  // --verify-revert: the culprit reverted at BAD (RevertCheckWords).
  void RevertCheck() {
    if (!job_.has_revert_check()) return;
    Line();
    Wrapped("Revert check: ", RevertCheckWords(job_.revert_check()));
  }

  void Culprit() {
    Line();
    Line(absl::StrCat(CulpritHeading(job_.spec()), ":"));
    Commit(job_.culprit(), "  ");
    Confidence();
    if (job_.cause() != v1::CAUSE_UNSPECIFIED && job_.cause() != v1::CAUSE_REAL_REGRESSION) {
      Line(absl::StrCat("  Cause:   ", EnumLabel(job_.cause())));
    }
    if (job_.measurement_changes_size() > 0) {
      Line("  The measurement changed at this commit (its manifest against last good's):");
      for (const std::string& change : job_.measurement_changes()) Line("    " + change);
    }
    if (job_.has_merged_culprit()) {
      Line();
      Line("Inside the merged branch:");
      Commit(job_.merged_culprit(), "  ");
    }
    for (const v1::DependencyCulprit& found : job_.dependency_culprits()) {
      Line();
      Line(absl::StrCat("Inside the dependency ", found.path(), " (", found.repository(), ", ",
                        found.old_sha().substr(0, 7), "..", found.new_sha().substr(0, 7), "):"));
      Commit(found.commit(), "  ");
    }
    Impact(short_(job_.last_good()), short_(job_.culprit()), /*required=*/true);
    Steps();
    FilesChanged();
    if (job_.submodule_bumps_size() > 0) SubmoduleBumps();
    BisectLog();
    RootCauseHints();
  }

  // A suite's metrics grouped by culprit (report/suite_groups.h).
  void Suite() {
    if (job_.suite_size() == 0) return;
    const SuiteGroups groups = GroupSuite(job_);
    auto names = [](const std::vector<const v1::SuiteMetricResult*>& rows, bool change) {
      std::vector<std::string> items;
      for (const v1::SuiteMetricResult* row : rows) {
        items.push_back(change ? absl::StrCat(row->name(), " ", SuiteMetricChange(*row))
                               : row->name());
      }
      return absl::StrJoin(items, ", ");
    };
    Line();
    Wrapped("Suite: ", absl::StrCat(Count(groups.metrics, "metric"), " (led by ", MetricName(job_),
                                    "): ", SuiteHeadline(groups)));
    for (const SuiteCulpritGroup& group : groups.culprits) {
      Wrapped(absl::StrCat("  ", group.metrics.size(), " at ", short_(group.culprit.sha()), " "),
              absl::StrCat("\"", group.culprit.subject(), "\": ", names(group.metrics, true)));
    }
    for (const v1::SuiteMetricResult* row : groups.unresolved) {
      Wrapped("  no culprit: ",
              absl::StrCat(row->name(), " ", SuiteMetricChange(*row), ": ", row->reason()));
    }
    if (!groups.searching.empty()) Wrapped("  still searched: ", names(groups.searching, true));
    if (!groups.improved.empty()) Wrapped("  improved: ", names(groups.improved, true));
    if (!groups.unchanged.empty()) Wrapped("  unchanged: ", names(groups.unchanged, false));
    if (!groups.pending.empty()) Wrapped("  not judged yet: ", names(groups.pending, false));
  }

  // How sure the answer is (JobStatus.culprit_probability), with the next most likely commits.
  void Confidence() {
    if (job_.culprit_probability() <= 0) return;
    std::string line =
        absl::StrCat("  Confidence: ", ProbabilityText(job_.culprit_probability()),
                     job_.candidates_size() > 1 ? " that it is one of these"
                                                : " that this is the first bad commit");
    std::vector<std::string> others;
    for (const v1::PositionProbability& position : job_.culprit_posterior()) {
      const bool named = job_.candidates_size() > 1
                             ? std::find(job_.candidates().begin(), job_.candidates().end(),
                                         position.sha()) != job_.candidates().end()
                             : position.sha() == job_.culprit().sha();
      if (named || others.size() == 2) continue;
      others.push_back(
          absl::StrCat(short_(position.sha()), " ", ProbabilityText(position.probability())));
    }
    if (!others.empty()) absl::StrAppend(&line, " (else ", absl::StrJoin(others, ", "), ")");
    Line(line);
    if (job_.spec().flaky() && job_.bad_fail_rate() > 0) {
      // The fail rates the posterior estimated (JobStatus.good_fail_rate, bad_fail_rate).
      Line(
          absl::StrFormat("  Flaky test: fails about %.0f%% of runs at bad commits, %.1f%% at "
                          "good ones (estimated from the %s)",
                          100 * job_.bad_fail_rate(), 100 * job_.good_fail_rate(),
                          Count(job_.bench_runs(), "run")));
    }
  }

  void Steps() {
    if (job_.culprits_size() < 2 && !job_.multiple_steps()) return;
    Line();
    Line(job_.culprits_size() > 0 ? "Regression steps (largest first):"
                                  : "The regression came in several steps.");
    int n = 0;
    for (const v1::Culprit& step : job_.culprits()) {
      Line(absl::StrFormat(
          "  %d. %s %s: %s -> %s (%s, %.0f%% of the total)", ++n, short_(step.commit()),
          step.commit().subject(), Value(step.before(), job_), Value(step.after(), job_),
          DescribeChange(step.regression_pct(), job_), step.share_of_total() * 100));
    }
  }

  void Candidates() {
    Line();
    Line(absl::StrCat("Regression introduced by one of ",
                      Count(job_.candidates_size(), "candidate commit"),
                      " (untestable commits hide the exact one):"));
    for (const std::string& sha : job_.candidates()) {
      std::string line = absl::StrCat("  ", sha);
      for (const v1::Probe& probe : job_.probes()) {
        if (probe.sha() != sha || probe.verdict() != v1::VERDICT_SKIP) continue;
        absl::StrAppend(
            &line, "  (skipped: ",
            probe.message().empty() ? TaskOutcomeName(probe.outcome()) : FirstLine(probe.message()),
            ")");
        break;
      }
      Line(line);
    }
    Confidence();
    if (job_.has_last_good() && !job_.last_good().sha().empty()) {
      Line(absl::StrCat("  Last good: ", job_.last_good().sha(),
                        job_.last_good().subject().empty()
                            ? ""
                            : absl::StrCat(" (", job_.last_good().subject(), ")")));
    }
    Impact(job_.has_last_good() ? short_(job_.last_good()) : "last good", "first bad",
           /*required=*/false);
    if (job_.files_changed_size() > 0) FilesChanged();
    if (job_.submodule_bumps_size() > 0) SubmoduleBumps();
    BisectLog();
    if (job_.root_cause_hints_size() > 0) RootCauseHints();
  }

  void NoRegression() {
    Line();
    if (job_.suite_size() > 0) {
      // The outcome is the lead's; the suite's other metrics follow (Suite).
      Line(absl::StrCat("No regression of the lead metric ", MetricName(job_),
                        ": GOOD and BAD do not differ."));
      if (!job_.error().empty()) Wrapped("  Reason: ", job_.error());
      Line("  The suite's other metrics are below.");
      return;
    }
    Line("No regression: GOOD and BAD do not differ.");
    if (!job_.error().empty()) Wrapped("  Reason: ", job_.error());
    Line("  Nothing blamed.");
    if (!HasBaselines()) {
      Line(absl::StrCat("  GOOD (", short_(job_.good_sha()), ") and BAD (", short_(job_.bad_sha()),
                        "): no baseline samples were recorded."));
    }
  }

  void Problem(const std::string& headline, const std::string& fallback) {
    Line();
    Line(absl::StrCat(headline, job_.error().empty() ? fallback : job_.error()));
    std::vector<const v1::Probe*> failing;
    for (const v1::Probe& probe : job_.probes()) {
      if (IsFailedProbe(probe)) failing.push_back(&probe);
    }
    if (!failing.empty()) {
      Line();
      Line("Failing probes:");
      for (const v1::Probe* probe : failing) {
        std::string line = absl::StrCat("  ", short_(probe->sha()), " (",
                                        ProbeKindLabel(probe->kind()), ") ", WorkerRound(*probe),
                                        ": ", VerdictWord(probe->verdict(), WordCase::kUpper));
        if (probe->outcome() != v1::TASK_OUTCOME_UNSPECIFIED) {
          absl::StrAppend(&line, ", ", TaskOutcomeName(probe->outcome()));
        }
        if (HasValue(*probe)) absl::StrAppend(&line, ", ", Value(probe->median(), job_));
        Line(line);
        if (!probe->message().empty()) Line(absl::StrCat("    ", FirstLine(probe->message())));
        for (const std::string& tail : LastLines(probe->log_tail(), kMaxLogTailLines)) {
          Line(absl::StrCat("    | ", tail));
        }
      }
    }
    if (FinishedBisectProbes(job_).size() > 0) BisectLog();
  }

  void Running() {
    Line();
    Line(absl::StrCat("Bisect in progress (", JobStateName(job_.state()), ")."));
    const v1::Progress& progress = job_.progress();
    Line(absl::StrCat("  ", Count(progress.probes_finished(), "probe"), " finished, ",
                      progress.probes_in_flight(), " in flight; the culprit is one of ",
                      Count(progress.remaining_commits(), "commit"), " (about ",
                      Count(progress.estimated_rounds(), "more round"), ")."));
    if (FinishedBisectProbes(job_).size() > 0) BisectLog();
  }

  bool HasBaselines() const {
    const v1::Baseline& good = job_.baseline().good();
    const v1::Baseline& bad = job_.baseline().bad();
    return good.samples_size() > 0 || bad.samples_size() > 0 || good.median() != 0 ||
           bad.median() != 0;
  }

  // The verdicts the user gave (`--mark`): they stood in for measurements of those commits.
  void Marks() {
    if (job_.marks_size() == 0) return;
    Line();
    Line("Marked by you (not measured):");
    for (const v1::CommitMark& mark : job_.marks()) {
      Line(absl::StrCat("  ", short_(mark.sha()), " = ", EnumLabel(mark.verdict())));
    }
  }

  void Baselines() {
    if (!HasBaselines()) return;
    const v1::Baseline& good = job_.baseline().good();
    const v1::Baseline& bad = job_.baseline().bad();
    Line();
    Line("Baselines:");
    auto baseline = [&](const char* label, const v1::Baseline& b, const std::string& fallback) {
      std::string line =
          absl::StrCat("  ", label, " (", short_(b.sha().empty() ? fallback : b.sha()),
                       "): ", MetricName(job_), " = ", Value(b.median(), job_));
      if (b.samples_size() > 0) {
        absl::StrAppend(&line, " (median of ", Count(b.samples_size(), "sample"), ": ",
                        SampleList(b.samples(), job_), ")");
      }
      if (!b.worker().empty()) absl::StrAppend(&line, " [worker ", b.worker(), "]");
      Line(line);
    };
    const bool try_job = job_.spec().has_try_change();
    baseline(try_job ? "BASE" : "GOOD", good, job_.good_sha());
    baseline(try_job ? "CHANGE" : "BAD", bad, job_.bad_sha());
    double pct = job_.regression_pct();
    if (pct == 0) pct = PercentChange(good.median(), bad.median(), job_);
    Line(absl::StrCat(try_job ? "  BASE -> CHANGE: " : "  GOOD -> BAD: ",
                      DescribeChange(pct, job_)));
  }

  void Confirmation() {
    // A try's pairs are its result (TryResult).
    if (!job_.has_confirmation() || job_.spec().has_try_change()) return;
    const v1::Confirmation& c = job_.confirmation();
    Line();
    Line(absl::StrFormat("Confirmation: %s, culprit/last-good ratio %.4g (95%% CI %.4g to %.4g)%s",
                         c.confirmed() ? "confirmed" : "NOT confirmed", c.ratio(), c.ci_low(),
                         c.ci_high(), ConfirmationWorkers(c)));
  }

  // Where the confirmation's pairs were measured, as the report's line ends.
  static std::string ConfirmationWorkers(const v1::Confirmation& c) {
    for (const v1::ConfirmationPairs& set : c.sets()) {
      if (set.culprit_worker().empty()) continue;
      return absl::StrCat(" on workers ", set.worker(), " (last good) and ", set.culprit_worker(),
                          " (culprit), which measure GOOD exactly alike");
    }
    return c.worker().empty() ? "" : " on worker " + c.worker();
  }

  void Workers() {
    // A worker's GPU is worth a line when it skewed a run (throttled, capped, shared).
    const std::map<std::string, WorkerGpuDuringJob> gpus = GpuDuringJob(job_);
    bool interesting = false;
    for (const v1::JobWorker& worker : job_.workers()) {
      const auto gpu = gpus.find(worker.worker());
      interesting = interesting || worker.quarantined() || worker.drift() ||
                    (gpu != gpus.end() && gpu->second.Skewed());
    }
    if (!interesting) return;
    Line();
    Line("Workers:");
    for (const v1::JobWorker& worker : job_.workers()) {
      std::string line = absl::StrCat("  ", worker.worker(), ": ", Count(worker.probes(), "probe"));
      if (worker.calibration_good() != 0 || worker.calibration_bad() != 0) {
        absl::StrAppend(&line, ", GOOD ", Value(worker.calibration_good(), job_), ", BAD ",
                        Value(worker.calibration_bad(), job_));
      }
      if (worker.quarantined()) absl::StrAppend(&line, ", quarantined");
      if (worker.drift()) absl::StrAppend(&line, ", drift");
      if (!worker.reason().empty()) absl::StrAppend(&line, ": ", worker.reason());
      if (const auto gpu = gpus.find(worker.worker()); gpu != gpus.end() && gpu->second.Skewed()) {
        absl::StrAppend(&line, "; GPU: ", gpu->second.Words());
      }
      Line(line);
    }
  }

  void Warnings() {
    if (job_.warnings_size() == 0) return;
    Line();
    Line("Warnings:");
    for (const std::string& warning : job_.warnings()) Line(absl::StrCat("  - ", warning));
  }

  void Summary() {
    int cancelled = 0;
    int skipped = 0;
    for (const v1::Probe& probe : job_.probes()) {
      if (probe.state() == v1::PROBE_STATE_CANCELLED) ++cancelled;
      if (probe.verdict() == v1::VERDICT_SKIP) ++skipped;
    }
    if (job_.has_progress()) {
      cancelled = std::max(cancelled, job_.progress().probes_cancelled());
      skipped = std::max(skipped, job_.progress().skips());
    }
    Line();
    std::string summary = absl::StrCat("Summary: ", Count(job_.rounds(), "round"), ", ",
                                       Count(job_.bench_runs(), "bench run"), ", ",
                                       FormatWallTime(job_.wall_seconds()), " wall time, ",
                                       Count(cancelled, "probe"), " cancelled");
    if (skipped > 0) absl::StrAppend(&summary, ", ", skipped, " skipped");
    Line(summary);
    std::string context;
    if (!job_.job_id().empty()) context = absl::StrCat("Job ", job_.job_id());
    if (!job_.good_sha().empty() || !job_.bad_sha().empty()) {
      absl::StrAppend(&context, context.empty() ? "Range " : ": ", short_(job_.good_sha()), "..",
                      short_(job_.bad_sha()));
      if (job_.commit_count() > 0)
        absl::StrAppend(&context, " (", Count(job_.commit_count(), "commit"), ")");
    }
    if (!context.empty()) Line(context);
  }

  const v1::JobStatus& job_;
  Shortener short_;
  std::string out_;
};

}  // namespace

std::string FormatMetricValue(double value, std::string_view unit) {
  return absl::StrCat(absl::StrFormat("%.4g", value), absl::string_view(unit.data(), unit.size()));
}

std::string OutcomeName(v1::Outcome outcome) { return EnumLabel(outcome); }

std::string JobStateName(v1::JobState state) { return EnumLabel(state); }

std::string TaskOutcomeName(v1::TaskOutcome outcome) { return EnumLabel(outcome); }

int ExitCodeFor(v1::Outcome outcome) {
  switch (outcome) {
    case v1::OUTCOME_CULPRIT_FOUND:
    case v1::OUTCOME_CANDIDATES_FOUND:
      return 0;
    case v1::OUTCOME_NO_REGRESSION:
      return 3;
    case v1::OUTCOME_INCONCLUSIVE:
      return 4;
    default:
      return 1;
  }
}

int ExitCodeForJob(const v1::JobStatus& job) {
  const bool answered =
      job.status() != v1::OUTCOME_ERROR && job.status() != v1::OUTCOME_CANCELLED &&
      job.status() != v1::OUTCOME_RUNNING && job.status() != v1::OUTCOME_UNSPECIFIED;
  if (!answered) return ExitCodeFor(job.status());
  const SuiteGroups groups = GroupSuite(job);
  if (!groups.culprits.empty()) return 0;
  if (!groups.unresolved.empty()) return ExitCodeFor(v1::OUTCOME_INCONCLUSIVE);
  return ExitCodeFor(job.status());
}

std::string FormatReport(const v1::JobStatus& job) { return ReportWriter(job).Write(); }

}  // namespace kbisect
