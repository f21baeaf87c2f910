// Copyright 2026 The kbisect Authors.
#include "triage/report.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "common/metric/percent.h"
#include "common/text/count.h"

namespace kbisect {
namespace triage {
namespace {

using Json = nlohmann::json;

std::string Num(double v) { return absl::StrFormat("%.4g", v); }
std::string Pct(double relative) { return FormatSignedPercent(100 * relative); }
std::string PValue(double p) { return absl::StrFormat("%.2g", p); }

std::string CauseWords(v1::Cause cause) {
  return absl::StrReplaceAll(CauseName(cause), {{"_", " "}});
}

const char* MoveName(const KernelTriage& k) {
  if (k.evidence.shape == Shape::kNone) return "none";
  if (k.direction == Direction::kUnknown) return "change";
  return k.evidence.primary.worse ? "regression" : "improvement";
}

Json RefJson(const std::optional<NightlyRef>& ref) {
  if (!ref.has_value()) return nullptr;
  return Json{
      {"sha", ref->sha}, {"full_sha", ref->full_sha}, {"date", ref->date}, {"run_id", ref->run_id}};
}

Json MoveJson(const MetricMove& m) {
  return Json{{"metric", m.metric},
              {"role", m.role},
              {"present", m.present},
              {"direction", DirectionName(m.direction)},
              {"before", m.before},
              {"after", m.after},
              {"relative_change", m.relative_change},
              {"mann_whitney_p", m.mann_whitney_p},
              {"moved", m.moved},
              {"worse", m.worse}};
}

Json AttributesJson(const std::vector<AttributeChange>& changes) {
  Json out = Json::array();
  for (const AttributeChange& c : changes) {
    out.push_back(
        Json{{"name", c.name}, {"before", c.before}, {"after", c.after}, {"changed", c.changed}});
  }
  return out;
}

Json BreadthJson(const std::vector<BreadthCheck>& checks) {
  Json out = Json::array();
  for (const BreadthCheck& b : checks) {
    out.push_back(
        Json{{"series", b.label}, {"moved", b.moved}, {"relative_change", b.relative_change}});
  }
  return out;
}

Json CommitJson(const RankedCommit& c) {
  return Json{{"sha", c.sha},
              {"short_sha", c.short_sha},
              {"subject", c.subject},
              {"author", c.author},
              {"date", c.date},
              {"position", c.position},
              {"score", c.score},
              {"tag_match", c.tag_match},
              {"matching_paths", c.matching_paths},
              {"files_changed", c.files_changed},
              {"harness_only", c.harness_only},
              {"other_slice", c.other_slice}};
}

std::string MoveLine(const MetricMove& m, const std::string& label) {
  if (!m.present) return absl::StrFormat("  %-34s not enough data\n", label);
  return absl::StrFormat("  %-34s %9s -> %-9s %8s  p=%-8s %s\n", label, Num(m.before), Num(m.after),
                         Pct(m.relative_change), PValue(m.mann_whitney_p),
                         m.moved ? "MOVED" : "flat");
}

// Whether the move is Helion's own: "yes" when the baselines did not move, "no" when they did,
// else "unknown".
const char* HelionOnly(Tri baselines_moved) {
  return baselines_moved == Tri::kNo ? "yes" : baselines_moved == Tri::kYes ? "no" : "unknown";
}

// One line per triaged kernel, headline first: its cause, shape, move and window.
Json KernelsJson(const TriageResult& result) {
  Json kernels = Json::array();
  for (const KernelTriage& k : result.kernels) {
    kernels.push_back(Json{{"kernel", k.kernel},
                           {"cause", CauseName(k.diagnosis.cause)},
                           {"confidence", k.diagnosis.confidence},
                           {"shape", ShapeName(k.evidence.shape)},
                           {"move", MoveName(k)},
                           {"relative_change", k.evidence.primary.relative_change},
                           {"last_good", RefJson(k.last_good)},
                           {"first_bad", RefJson(k.first_bad)}});
  }
  return kernels;
}

// The move's size and statistics: medians before and after, ratio, p-values, sharpness,
// persistence and the nightlies on each side.
Json ChangeJson(const Evidence& e) {
  return Json{{"before", e.primary.before},
              {"after", e.primary.after},
              {"relative_change", e.primary.relative_change},
              {"ratio", e.primary.before == 0 ? 0 : e.primary.after / e.primary.before},
              {"p_value", e.p_value},
              {"mann_whitney_p", e.primary.mann_whitney_p},
              {"sharpness", e.sharpness},
              {"persistence", e.persistence},
              {"nightlies_before", e.nightlies_before},
              {"nightlies_after", e.nightlies_after}};
}

// The cross-checks behind the cause: the metrics' moves, the runner and method attributes, the
// other kernels and platforms and the commits in the window.
Json EvidenceJson(const Evidence& e) {
  Json evidence;
  evidence["shape"] = ShapeName(e.shape);
  evidence["persisted"] = (e.shape == Shape::kStep || e.shape == Shape::kDrift);
  evidence["reverted"] = e.reverted;
  evidence["reverted_at"] = RefJson(e.reverted_at);
  evidence["primary"] = MoveJson(e.primary);
  Json baselines = Json::array();
  for (const MetricMove& b : e.baselines) baselines.push_back(MoveJson(b));
  evidence["baselines"] = baselines;
  evidence["baselines_moved"] = TriName(e.baselines_moved);
  evidence["helion_only"] = HelionOnly(e.baselines_moved);
  evidence["timer"] = e.timer.has_value() ? MoveJson(*e.timer) : Json(nullptr);
  evidence["timers_agree"] = TriName(e.timer_agrees);
  evidence["runner_identity"] = AttributesJson(e.identity);
  evidence["runner_changed"] = TriName(e.runner_changed);
  evidence["method_attributes"] = AttributesJson(e.method);
  evidence["method_changed"] = TriName(e.method_changed);
  evidence["other_kernels"] = BreadthJson(e.other_kernels);
  evidence["other_platforms"] = BreadthJson(e.other_platforms);
  evidence["harness_only_commit_in_window"] = TriName(e.harness_only_commit);
  evidence["slice_commit_in_window"] = TriName(e.slice_commit);
  return evidence;
}

// Every change point the detector found in `k`, with the nightlies on either side.
Json ChangePointsJson(const KernelTriage& k) {
  Json change_points = Json::array();
  for (const ChangePoint& cp : k.analysis.change_points) {
    change_points.push_back(Json{{"last_good", RefJson(k.nightlies[cp.index - 1])},
                                 {"first_bad", RefJson(k.nightlies[cp.index])},
                                 {"before", cp.before},
                                 {"after", cp.after},
                                 {"relative_change", cp.relative_change},
                                 {"p_value", cp.p_value},
                                 {"sharpness", cp.sharpness},
                                 {"persistence", cp.persistence}});
  }
  return change_points;
}

// Every one-nightly spike the detector found in `k`.
Json SpikesJson(const KernelTriage& k) {
  Json spikes = Json::array();
  for (const Spike& s : k.analysis.spikes) {
    spikes.push_back(Json{{"nightly", RefJson(k.nightlies[s.index])},
                          {"value", s.value},
                          {"baseline", s.baseline},
                          {"relative_deviation", s.relative_deviation}});
  }
  return spikes;
}

// The commit window and its ranked commits; null when none was listed.
Json WindowJson(const ReportExtras& extras) {
  if (!extras.window.has_value()) return nullptr;
  Json commits = Json::array();
  for (const RankedCommit& c : extras.window->commits) commits.push_back(CommitJson(c));
  return Json{{"good", extras.window->good},
              {"bad", extras.window->bad},
              {"size", extras.window->commits.size()},
              {"commits", commits}};
}

// Appends the report's headline: the kernel, platform, metric and direction, and the nightlies
// triaged.
void AppendHeadline(const TriageResult& result, const KernelTriage& k, std::string* out) {
  absl::StrAppend(out, "kbisect triage: ", k.kernel.empty() ? "" : k.kernel + " on ",
                  k.platform_short, " (", k.primary_metric, ", ", DirectionName(k.direction),
                  ")\n");
  if (!k.nightlies.empty()) {
    absl::StrAppend(out, "  ", Count(k.nightlies.size(), "nightly", "nightlies"), ", ",
                    k.nightlies.front().date, " .. ", k.nightlies.back().date, ", from ",
                    result.source, "\n");
  }
}

// Appends the cause with its confidence and the move: none, a spike, or a step, drift or
// excursion with its window, medians and statistics.
void AppendCauseAndMove(const KernelTriage& k, std::string* out) {
  const Evidence& e = k.evidence;
  absl::StrAppend(out, "\nCause:      ", CauseWords(k.diagnosis.cause),
                  absl::StrFormat(" (confidence %.2f)\n", k.diagnosis.confidence));
  switch (e.shape) {
    case Shape::kNone:
      absl::StrAppend(out, "Move:       none beyond the noise (sigma ", Num(k.analysis.noise_sigma),
                      ")\n");
      break;
    case Shape::kSpike:
      absl::StrAppend(out, "Move:       a one-nightly spike of ", Pct(e.primary.relative_change),
                      " on ", k.first_bad->date, " (", k.first_bad->sha, ")",
                      e.reverted_at.has_value() ? ", back the next nightly" : "", "\n");
      break;
    default:
      absl::StrAppend(
          out, "Move:       ", MoveName(k), ", ", ShapeName(e.shape), " of ",
          Pct(e.primary.relative_change), " (x", Num(e.primary.after / e.primary.before),
          ")\n            last good  ", k.last_good->date, "  ", k.last_good->sha,
          "\n            first bad  ", k.first_bad->date, "  ", k.first_bad->sha, "\n",
          "            ", Num(e.primary.before), " -> ", Num(e.primary.after),
          absl::StrFormat(", permutation p = %s, Mann-Whitney p = %s, %d nightlies before, %d "
                          "after, %.0f%% persist\n",
                          PValue(e.p_value), PValue(e.primary.mann_whitney_p), e.nightlies_before,
                          e.nightlies_after, 100 * e.persistence));
      if (e.reverted_at.has_value()) {
        absl::StrAppend(out, "            reverted on ", e.reverted_at->date, "\n");
      }
      break;
  }
}

// Appends the cross-checks at a step, drift or excursion: each metric's medians before and
// after, the yes/no checks, the runner and method attributes that changed, and the other kernels
// and platforms.
void AppendCrossChecks(const Evidence& e, std::string* out) {
  absl::StrAppend(out, "\nCross-checks at the step (medians before -> after):\n");
  absl::StrAppend(out, MoveLine(e.primary, e.primary.metric));
  for (const MetricMove& b : e.baselines) absl::StrAppend(out, MoveLine(b, b.metric));
  if (e.timer.has_value()) {
    absl::StrAppend(out, MoveLine(*e.timer, e.timer->metric + " (timer)"));
  }
  absl::StrAppend(out, "  helion-only: ", HelionOnly(e.baselines_moved),
                  "   timers agree: ", TriName(e.timer_agrees),
                  "   runner changed: ", TriName(e.runner_changed),
                  "   method changed: ", TriName(e.method_changed), "\n");
  for (const AttributeChange& c : e.identity) {
    if (c.changed) absl::StrAppend(out, "  runner ", c.name, ": ", c.before, " -> ", c.after, "\n");
  }
  for (const AttributeChange& c : e.method) {
    if (c.changed) absl::StrAppend(out, "  method ", c.name, ": ", c.before, " -> ", c.after, "\n");
  }
  for (const BreadthCheck& b : e.other_kernels) {
    absl::StrAppend(out, "  same platform  ", b.label, ": ", b.moved ? "MOVED " : "flat ",
                    Pct(b.relative_change), "\n");
  }
  for (const BreadthCheck& b : e.other_platforms) {
    absl::StrAppend(out, "  same kernel    ", b.label, ": ", b.moved ? "MOVED " : "flat ",
                    Pct(b.relative_change), "\n");
  }
  absl::StrAppend(out,
                  "  (speedup and latency are compared as separate series; their product "
                  "mixes timing modes and is never used)\n");
}

// Appends the commit window: its ranked commits (at most extras.max_commits_shown), else why it
// could not be listed, else for a real regression its range and how to list it.
void AppendCommitWindow(const KernelTriage& k, const ReportExtras& extras, std::string* out) {
  if (extras.window.has_value()) {
    const CommitWindow& w = *extras.window;
    absl::StrAppend(out, "\nCommit window ", w.good.substr(0, 8), "..", w.bad.substr(0, 8),
                    " (first parent): ", Count(w.commits.size(), "commit"), ", best match first\n");
    int shown = 0;
    for (const RankedCommit& c : w.commits) {
      if (shown++ >= extras.max_commits_shown) {
        absl::StrAppend(out, "  ... ", w.commits.size() - extras.max_commits_shown,
                        " more in --json\n");
        break;
      }
      std::string flags;
      if (c.tag_match || c.matching_paths > 0) flags += " [slice]";
      if (c.harness_only) flags += " [harness/CI only: possible method change]";
      if (c.other_slice) flags += " [other slice]";
      absl::StrAppendFormat(out, "  %2d. %s %-60s score %.1f%s\n", shown, c.short_sha,
                            c.subject.substr(0, 60), c.score, flags);
    }
  } else if (!extras.window_error.empty()) {
    absl::StrAppend(out, "\nCommit window: ", extras.window_error, "\n");
  } else if (k.diagnosis.cause == v1::CAUSE_REAL_REGRESSION && k.last_good.has_value()) {
    absl::StrAppend(out, "\nCommit window: ",
                    k.last_good->full_sha.empty() ? k.last_good->sha : k.last_good->full_sha, "..",
                    k.first_bad->full_sha.empty() ? k.first_bad->sha : k.first_bad->full_sha,
                    " (pass --repo CLONE to list and rank its commits)\n");
  }
}

// Appends the one-line summary of every kernel after the headline's.
void AppendOtherKernels(const TriageResult& result, std::string* out) {
  absl::StrAppend(out, "\nOther kernels on ", result.platform, ":\n");
  for (size_t i = 1; i < result.kernels.size(); ++i) {
    const KernelTriage& o = result.kernels[i];
    absl::StrAppendFormat(
        out, "  %-24s %-24s %.2f  %s %s%s\n", o.kernel, CauseWords(o.diagnosis.cause),
        o.diagnosis.confidence, ShapeName(o.evidence.shape),
        o.evidence.shape == Shape::kNone ? "" : Pct(o.evidence.primary.relative_change),
        o.first_bad.has_value() ? " at " + o.first_bad->date : "");
  }
}

}  // namespace

Json ToJson(const TriageResult& result, const ReportExtras& extras) {
  Json root;
  root["schema"] = "kbisect.triage.v1";
  root["source"] = result.source;
  root["format"] = InputFormatName(result.format);
  root["platform"] = result.platform;
  root["date"] = result.date;
  root["kernels"] = KernelsJson(result);
  root["notes"] = result.notes;
  if (result.kernels.empty()) return root;
  const KernelTriage& k = result.kernels.front();
  root["kernel"] = k.kernel;
  root["metric"] = k.primary_metric;
  root["direction"] = DirectionName(k.direction);
  root["cause"] = CauseName(k.diagnosis.cause);
  root["confidence"] = k.diagnosis.confidence;
  root["shape"] = ShapeName(k.evidence.shape);
  root["move"] = MoveName(k);
  root["last_good"] = RefJson(k.last_good);
  root["first_bad"] = RefJson(k.first_bad);
  root["nightlies"] = Json{{"count", k.nightlies.size()},
                           {"first_date", k.nightlies.empty() ? "" : k.nightlies.front().date},
                           {"last_date", k.nightlies.empty() ? "" : k.nightlies.back().date}};
  root["change"] = ChangeJson(k.evidence);
  root["evidence"] = EvidenceJson(k.evidence);
  root["reasons"] = k.diagnosis.reasons;
  root["true_value"] = Json{{"metric", k.primary_metric},
                            {"before", k.true_value.before},
                            {"after", k.true_value.after},
                            {"honest", k.true_value.honest},
                            {"note", k.true_value.note}};
  root["change_points"] = ChangePointsJson(k);
  root["spikes"] = SpikesJson(k);
  root["noise_sigma"] = k.analysis.noise_sigma;
  root["window"] = WindowJson(extras);
  root["window_error"] = extras.window_error;
  root["bisect_command"] = extras.bisect_command;
  Json notes = result.notes;
  for (const std::string& n : k.notes) notes.push_back(n);
  root["notes"] = notes;
  return root;
}

std::string FormatReport(const TriageResult& result, const ReportExtras& extras) {
  std::string out;
  if (result.kernels.empty()) return "kbisect triage: nothing to triage\n";
  const KernelTriage& k = result.kernels.front();
  const Evidence& e = k.evidence;
  AppendHeadline(result, k, &out);
  AppendCauseAndMove(k, &out);
  absl::StrAppend(&out, "\nWhy:\n");
  for (const std::string& r : k.diagnosis.reasons) absl::StrAppend(&out, "  - ", r, "\n");
  if (e.shape == Shape::kStep || e.shape == Shape::kDrift || e.shape == Shape::kExcursion) {
    AppendCrossChecks(e, &out);
  }
  absl::StrAppend(&out, "\nTrue value: ", k.true_value.note, "\n");
  AppendCommitWindow(k, extras, &out);
  if (!extras.bisect_command.empty()) {
    absl::StrAppend(&out, "\nNext: ", extras.bisect_command, "\n");
  } else if (k.diagnosis.cause != v1::CAUSE_REAL_REGRESSION) {
    absl::StrAppend(&out, "\nNext: no bisect; the data does not point at a commit.\n");
  }
  std::vector<std::string> notes = result.notes;
  notes.insert(notes.end(), k.notes.begin(), k.notes.end());
  if (!notes.empty()) {
    absl::StrAppend(&out, "\nNotes:\n");
    for (const std::string& n : notes) absl::StrAppend(&out, "  - ", n, "\n");
  }
  if (result.kernels.size() > 1) AppendOtherKernels(result, &out);
  return out;
}

}  // namespace triage
}  // namespace kbisect
