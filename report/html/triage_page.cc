// Copyright 2026 The kbisect Authors.
#include "report/html/triage_page.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "common/metric/metric.h"
#include "common/metric/percent.h"
#include "common/status_macros.h"
#include "common/text/count.h"
#include "report/html/job_page.h"
#include "report/html/page_format.h"
#include "report/html/template.h"

namespace kbisect::html {
namespace {

using triage::KernelTriage;
using triage::NightlyRef;

constexpr double kWidth = 960;
constexpr double kLeft = 72, kRight = 16, kTop = 22, kBottom = 40;

std::string Num(double v) { return absl::StrFormat("%.1f", v); }
std::string Number(double v) { return absl::StrFormat("%.4g", v); }

std::string CauseWords(v1::Cause cause) {
  return absl::StrReplaceAll(triage::CauseName(cause), {{"_", " "}});
}

std::string Cell(absl::string_view text, absl::string_view cls = "") {
  return absl::StrCat(cls.empty() ? "<td>" : absl::StrCat("<td class=\"", cls, "\">"), Escape(text),
                      "</td>");
}

std::string Fact(absl::string_view name, absl::string_view value) {
  return absl::StrCat("<dt>", Escape(name), "</dt><dd>", Escape(value), "</dd>");
}

std::string RefText(const NightlyRef& r) {
  return absl::StrCat(r.date, "  ", r.sha, r.run_id != 0 ? absl::StrCat("  run ", r.run_id) : "");
}

// One series to plot over the headline kernel's nightlies.
struct Plotted {
  std::string metric;
  std::string role;  // "primary", "baseline" or "timer".
  Direction direction = Direction::kUnknown;
  std::vector<std::optional<double>> values;
};

std::vector<Plotted> SeriesOf(const KernelTriage& k) {
  std::vector<Plotted> out;
  Plotted primary{k.primary_metric, "primary", k.direction, {}};
  for (double v : k.values) primary.values.emplace_back(v);
  out.push_back(std::move(primary));
  for (const triage::CompanionSeries& c : k.companions) {
    out.push_back({c.metric, c.role, c.direction, c.values});
  }
  return out;
}

// The change point the page explains, or nullptr.
const triage::ChangePoint* Focus(const KernelTriage& k) {
  if (k.focus_change_point < 0 ||
      k.focus_change_point >= static_cast<int>(k.analysis.change_points.size())) {
    return nullptr;
  }
  return &k.analysis.change_points[k.focus_change_point];
}

// The frame of one series' chart: its height, the value range shown (the values' range padded
// by a tenth on each side) and where a nightly's index and a value fall in the SVG.
struct ChartFrame {
  int n = 0;             // The nightlies.
  bool primary = false;  // The metric explained (taller, with every change point).
  double height = 0;
  double lo = 0;
  double hi = 0;
  double plot_w = 0;
  double plot_h = 0;

  double x(double i) const { return kLeft + plot_w * (i + 0.5) / n; }
  double y(double v) const { return kTop + plot_h * (1.0 - (v - lo) / (hi - lo)); }
};

// The frame of series `s` over `k`'s nightlies; nullopt when there is nothing to draw (no
// nightly, or no value).
std::optional<ChartFrame> FrameOf(const KernelTriage& k, const Plotted& s) {
  ChartFrame f;
  f.n = static_cast<int>(k.nightlies.size());
  f.primary = s.role == "primary";
  f.height = f.primary ? 260 : 170;
  double lo = INFINITY, hi = -INFINITY;
  for (const std::optional<double>& v : s.values) {
    if (!v.has_value()) continue;
    lo = std::min(lo, *v);
    hi = std::max(hi, *v);
  }
  if (f.n == 0 || !(hi >= lo)) return std::nullopt;
  if (!(hi > lo)) hi = lo + std::max(1e-9, std::fabs(lo) * 0.01);
  const double pad = (hi - lo) * 0.1;
  f.lo = lo - pad;
  f.hi = hi + pad;
  f.plot_w = kWidth - kLeft - kRight;
  f.plot_h = f.height - kTop - kBottom;
  return f;
}

// The move the charts mark: the change point explained, and its last-good and first-bad
// nightlies (-1 when there is none, as for a spike).
struct ChartMove {
  const triage::ChangePoint* focus = nullptr;
  int last_good = -1;
  int first_bad = -1;
};

// The move `k` explains.
ChartMove MoveOf(const KernelTriage& k) {
  ChartMove move;
  move.focus = Focus(k);
  move.last_good = move.focus != nullptr && k.last_good.has_value() ? k.last_good->index : -1;
  move.first_bad = move.focus != nullptr && k.first_bad.has_value() ? k.first_bad->index : -1;
  return move;
}

// Four horizontal grid lines with their values.
std::string GridLines(const ChartFrame& f) {
  std::string grid;
  for (int t = 0; t <= 3; ++t) {
    const double v = f.lo + (f.hi - f.lo) * t / 3.0;
    absl::StrAppend(&grid, "<line class=\"grid\" x1=\"", Num(kLeft), "\" x2=\"",
                    Num(kWidth - kRight), "\" y1=\"", Num(f.y(v)), "\" y2=\"", Num(f.y(v)),
                    "\"/><text class=\"tick\" x=\"", Num(kLeft - 6), "\" y=\"", Num(f.y(v) + 4),
                    "\" text-anchor=\"end\">", Escape(Number(v)), "</text>");
  }
  return grid;
}

// The change points' marks: every one on the primary chart (with its percentage and the levels
// on either side), the explained one on every chart.
std::string ChangePointMarks(const KernelTriage& k, const ChartFrame& f, const ChartMove& move) {
  std::string splits;
  for (size_t c = 0; c < k.analysis.change_points.size(); ++c) {
    const triage::ChangePoint& cp = k.analysis.change_points[c];
    const bool is_focus = &cp == move.focus;
    if (!f.primary && !is_focus) continue;
    const double sx = f.x(cp.index - 0.5);
    const NightlyRef& before = k.nightlies[cp.index - 1];
    const NightlyRef& after = k.nightlies[cp.index];
    absl::StrAppend(
        &splits, "<g class=\"change-point", is_focus ? " focus" : "", "\" data-index=\"", cp.index,
        "\" data-last-good=\"", Escape(before.date), "\" data-first-bad=\"", Escape(after.date),
        "\"><title>",
        Escape(absl::StrCat("change point ", before.date, " ", before.sha, " -> ", after.date, " ",
                            after.sha, ": ", Number(cp.before), " -> ", Number(cp.after), " (",
                            FormatSignedPercent(100 * cp.relative_change), ")")),
        "</title><line x1=\"", Num(sx), "\" x2=\"", Num(sx), "\" y1=\"", Num(kTop), "\" y2=\"",
        Num(f.height - kBottom), "\"/>",
        f.primary ? absl::StrCat("<text x=\"", Num(sx + 4), "\" y=\"", Num(kTop + 10), "\">",
                                 Escape(FormatSignedPercent(100 * cp.relative_change)), "</text>")
                  : "",
        "</g>");
    if (f.primary) {
      for (const auto& [from, to, level] :
           {std::tuple<int, int, double>{cp.begin, cp.index, cp.before},
            {cp.index, cp.end, cp.after}}) {
        absl::StrAppend(&splits, "<line class=\"level\" x1=\"", Num(f.x(from - 0.4)), "\" x2=\"",
                        Num(f.x(to - 0.6)), "\" y1=\"", Num(f.y(level)), "\" y2=\"",
                        Num(f.y(level)), "\"/>");
      }
    }
  }
  return splits;
}

// A series drawn: the polyline's points and a circle per value.
struct DrawnSeries {
  std::string trace;
  std::string points;
};

// Draws series `s`'s values, each circle classed by its role, its side of the move, the move's
// nightlies and the spikes (on the primary chart), with its date, sha and value as its title.
DrawnSeries DrawSeries(const KernelTriage& k, const Plotted& s, const ChartFrame& f,
                       const ChartMove& move) {
  std::vector<bool> spike(f.n, false);
  if (f.primary) {
    for (const triage::Spike& sp : k.analysis.spikes) {
      if (sp.index >= 0 && sp.index < f.n) spike[sp.index] = true;
    }
  }
  const bool regression = k.IsRegression();
  DrawnSeries drawn;
  for (int i = 0; i < f.n && i < static_cast<int>(s.values.size()); ++i) {
    if (!s.values[i].has_value()) continue;
    const double v = *s.values[i];
    absl::StrAppend(&drawn.trace, drawn.trace.empty() ? "" : " ", Num(f.x(i)), ",", Num(f.y(v)));
    std::string cls = absl::StrCat("point role-", s.role);
    if (move.first_bad >= 0 && i >= move.first_bad) {
      absl::StrAppend(&cls, " after", f.primary && regression ? " regression" : "");
    }
    if (f.primary && i == move.last_good) absl::StrAppend(&cls, " last-good");
    if (f.primary && i == move.first_bad) absl::StrAppend(&cls, " first-bad");
    if (spike[i]) absl::StrAppend(&cls, " spike");
    const NightlyRef& r = k.nightlies[i];
    absl::StrAppend(&drawn.points, "<circle class=\"", cls, "\" cx=\"", Num(f.x(i)), "\" cy=\"",
                    Num(f.y(v)), "\" r=\"", f.primary ? "3.5" : "2.5", "\" data-nightly=\"", i,
                    "\"><title>",
                    Escape(absl::StrCat(r.date, " ", r.sha, ": ", s.metric, " ", Number(v))),
                    "</title></circle>");
  }
  return drawn;
}

// Date labels: the ends, the move, and about eight in between, none crowding the move's.
std::string DateLabels(const KernelTriage& k, const ChartFrame& f, const ChartMove& move) {
  std::string labels;
  const int n = f.n;
  const int every = std::max(1, n / 8);
  for (int i = 0; i < n; ++i) {
    const bool moved = i == move.last_good || i == move.first_bad;
    if (i % every != 0 && i != n - 1 && !moved) continue;
    if (!moved && ((move.last_good >= 0 && std::abs(i - move.last_good) * f.plot_w / n < 60) ||
                   (move.first_bad >= 0 && std::abs(i - move.first_bad) * f.plot_w / n < 60))) {
      continue;
    }
    absl::StrAppend(&labels, "<text class=\"xlabel", moved ? " move" : "", "\" x=\"", Num(f.x(i)),
                    "\" y=\"", Num(f.height - kBottom + 14 + (i == move.first_bad ? 12 : 0)),
                    "\" text-anchor=\"middle\">", Escape(k.nightlies[i].date.substr(5)), "</text>");
  }
  return labels;
}

// The chart of series `s` over `k`'s nightlies, as a figure with its caption; empty when there is
// nothing to draw.
absl::StatusOr<std::string> Chart(const KernelTriage& k, const Plotted& s) {
  const std::optional<ChartFrame> frame = FrameOf(k, s);
  if (!frame.has_value()) return std::string();
  const ChartFrame& f = *frame;
  const ChartMove move = MoveOf(k);
  const DrawnSeries drawn = DrawSeries(k, s, f, move);
  const char* dir = s.direction == Direction::kHigherIsBetter  ? ", higher is better"
                    : s.direction == Direction::kLowerIsBetter ? ", lower is better"
                                                               : "";
  return Fill(
      R"html(<figure class="series role-{{role}}"><figcaption><b>{{metric}}</b> <span class="muted">{{what}}{{dir}}</span></figcaption><svg class="series-chart" data-metric="{{metric}}" viewBox="0 0 {{w}} {{h}}" role="img" aria-label="{{metric}} over {{n}} nightlies" xmlns="http://www.w3.org/2000/svg">{{{grid}}}{{{splits}}}<polyline class="trace role-{{role}}" points="{{trace}}"/>{{{points}}}{{{labels}}}</svg></figure>)html",
      {{"role", s.role},
       {"metric", s.metric},
       {"what", f.primary              ? "the metric explained"
                : s.role == "baseline" ? "baseline on the same machine"
                                       : "independent timer"},
       {"dir", dir},
       {"w", Num(kWidth)},
       {"h", Num(f.height)},
       {"n", absl::StrCat(f.n)},
       {"grid", GridLines(f)},
       {"splits", ChangePointMarks(k, f, move)},
       {"trace", drawn.trace},
       {"points", drawn.points},
       {"labels", DateLabels(k, f, move)}});
}

std::string MoveRow(const triage::MetricMove& m, absl::string_view role) {
  if (!m.present) {
    return absl::StrCat("<tr>", Cell(m.metric, "mono"), Cell(role),
                        "<td colspan=\"5\" class=\"muted\">not enough data</td></tr>");
  }
  return absl::StrCat("<tr class=\"", m.moved ? "moved" : "flat", "\">", Cell(m.metric, "mono"),
                      Cell(role), Cell(Number(m.before), "num"), Cell(Number(m.after), "num"),
                      Cell(FormatSignedPercent(100 * m.relative_change), "num"),
                      Cell(absl::StrFormat("%.2g", m.mann_whitney_p), "num"),
                      m.moved ? absl::StrCat("<td><span class=\"badge ", m.worse ? "bad" : "warn",
                                             "\">moved</span></td>")
                              : "<td>flat</td>",
                      "</tr>");
}

std::string EvidenceSection(const KernelTriage& k) {
  const triage::Evidence& e = k.evidence;
  if (e.shape == triage::Shape::kNone) return "";
  std::string rows = MoveRow(e.primary, "primary");
  for (const triage::MetricMove& b : e.baselines) absl::StrAppend(&rows, MoveRow(b, "baseline"));
  if (e.timer.has_value()) absl::StrAppend(&rows, MoveRow(*e.timer, "timer"));
  std::string flags;
  const std::string helion_only = e.baselines_moved == triage::Tri::kNo    ? "yes"
                                  : e.baselines_moved == triage::Tri::kYes ? "no"
                                                                           : "unknown";
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"only this implementation moved (baselines flat)", helion_only},
           {"the independent timer agrees", triage::TriName(e.timer_agrees)},
           {"the runner changed", triage::TriName(e.runner_changed)},
           {"a measurement attribute changed", triage::TriName(e.method_changed)},
           {"a harness/CI-only commit in the window", triage::TriName(e.harness_only_commit)},
           {"a commit of the platform's slice in the window", triage::TriName(e.slice_commit)}}) {
    absl::StrAppend(&flags, "<tr><th>", Escape(name), "</th><td class=\"tri-", value, "\">", value,
                    "</td></tr>");
  }
  std::string attrs;
  for (const auto& [kind, list] :
       {std::pair<const char*, const std::vector<triage::AttributeChange>*>{"runner", &e.identity},
        {"method", &e.method}}) {
    for (const triage::AttributeChange& c : *list) {
      absl::StrAppend(&attrs, "<tr class=\"", c.changed ? "moved" : "flat", "\">", Cell(kind),
                      Cell(c.name, "mono"), Cell(c.before), Cell(c.after),
                      Cell(c.changed ? "changed" : "same"), "</tr>");
    }
  }
  std::string breadth;
  for (const auto& [kind, list] : {std::pair<const char*, const std::vector<triage::BreadthCheck>*>{
                                       "same platform", &e.other_kernels},
                                   {"same kernel", &e.other_platforms}}) {
    for (const triage::BreadthCheck& b : *list) {
      absl::StrAppend(&breadth, "<tr class=\"", b.moved ? "moved" : "flat", "\">", Cell(kind),
                      Cell(b.label, "mono"),
                      Cell(FormatSignedPercent(100 * b.relative_change), "num"),
                      Cell(b.moved ? "moved" : "flat"), "</tr>");
    }
  }
  return absl::StrCat(
      "<section id=\"evidence\"><h2>Evidence at the split</h2>"
      "<table class=\"evidence\"><tr><th>metric</th><th>role</th><th>before</th><th>after</th>"
      "<th>change</th><th>Mann-Whitney p</th><th></th></tr>",
      rows, "</table><table class=\"checks\">", flags, "</table>",
      attrs.empty() ? ""
                    : absl::StrCat("<h3>Runner and measurement attributes</h3><table "
                                   "class=\"attributes\"><tr><th></th><th>attribute</th>"
                                   "<th>last good</th><th>first bad</th><th></th></tr>",
                                   attrs, "</table>"),
      breadth.empty() ? ""
                      : absl::StrCat("<h3>Other series at the same nightlies</h3><table "
                                     "class=\"breadth\"><tr><th></th><th>series</th><th>change</th>"
                                     "<th></th></tr>",
                                     breadth, "</table>"),
      "<p class=\"muted\">Speedup and latency are compared as separate series; their product "
      "mixes timing modes and is never used.</p></section>");
}

std::string MoveFacts(const KernelTriage& k) {
  const triage::Evidence& e = k.evidence;
  std::string facts;
  switch (e.shape) {
    case triage::Shape::kNone:
      absl::StrAppend(&facts, Fact("Move", absl::StrCat("none beyond the noise (sigma ",
                                                        Number(k.analysis.noise_sigma), ")")));
      break;
    case triage::Shape::kSpike:
      absl::StrAppend(
          &facts,
          Fact("Move", absl::StrCat("a one-nightly spike of ",
                                    FormatSignedPercent(100 * e.primary.relative_change),
                                    e.reverted_at.has_value() ? ", back the next nightly" : "")));
      if (k.first_bad.has_value()) absl::StrAppend(&facts, Fact("Spike", RefText(*k.first_bad)));
      break;
    default:
      absl::StrAppend(
          &facts,
          Fact("Move", absl::StrCat(triage::ShapeName(e.shape), " of ",
                                    FormatSignedPercent(100 * e.primary.relative_change), ": ",
                                    Number(e.primary.before), " → ", Number(e.primary.after))));
      if (k.last_good.has_value()) {
        absl::StrAppend(&facts, "<dt>Last good</dt><dd class=\"mono last-good\">",
                        Escape(RefText(*k.last_good)), "</dd>");
      }
      if (k.first_bad.has_value()) {
        absl::StrAppend(&facts, "<dt>First bad</dt><dd class=\"mono first-bad\">",
                        Escape(RefText(*k.first_bad)), "</dd>");
      }
      absl::StrAppend(
          &facts, Fact("Significance",
                       absl::StrFormat("permutation p = %.2g, Mann-Whitney p = %.2g, %d nightlies "
                                       "before, %d after, %.0f%% persist",
                                       e.p_value, e.primary.mann_whitney_p, e.nightlies_before,
                                       e.nightlies_after, 100 * e.persistence)));
      if (e.reverted_at.has_value()) {
        absl::StrAppend(&facts, Fact("Reverted", RefText(*e.reverted_at)));
      }
  }
  return facts;
}

std::string WindowSection(const KernelTriage& k, const triage::ReportExtras& extras) {
  std::string body;
  if (extras.window.has_value()) {
    const triage::CommitWindow& w = *extras.window;
    std::string rows;
    int rank = 0;
    for (const triage::RankedCommit& c : w.commits) {
      std::vector<std::string> flags;
      if (c.tag_match || c.matching_paths > 0) flags.push_back("slice");
      if (c.harness_only) flags.push_back("harness/CI only: possible method change");
      if (c.other_slice) flags.push_back("other slice");
      std::string badges;
      for (const std::string& f : flags) {
        absl::StrAppend(&badges, "<span class=\"badge", f == "slice" ? " bad" : " warn", "\">",
                        Escape(f), "</span> ");
      }
      absl::StrAppend(&rows, "<tr class=\"commit\" data-sha=\"", Escape(c.sha), "\">",
                      Cell(absl::StrCat(++rank), "num"), Cell(c.short_sha, "mono"), Cell(c.subject),
                      Cell(c.author), Cell(c.date), Cell(absl::StrCat(c.position), "num"),
                      Cell(absl::StrFormat("%.1f", c.score), "num"), "<td>", badges, "</td></tr>");
    }
    body = absl::StrCat("<p>", Escape(ShortSha(w.good)), "..", Escape(ShortSha(w.bad)),
                        " (first parent): ", Count(w.commits.size(), "commit"),
                        ", best match first.</p><table class=\"window\"><tr><th>rank</th>"
                        "<th>commit</th><th>subject</th><th>author</th><th>date</th>"
                        "<th>position</th><th>score</th><th></th></tr>",
                        rows, "</table>");
  } else if (!extras.window_error.empty()) {
    body = absl::StrCat("<p class=\"window-error\">", Escape(extras.window_error), "</p>");
  } else if (k.last_good.has_value() && k.first_bad.has_value() &&
             (k.evidence.shape == triage::Shape::kStep ||
              k.evidence.shape == triage::Shape::kDrift)) {
    auto commit = [](const NightlyRef& r) { return r.full_sha.empty() ? r.sha : r.full_sha; };
    body = absl::StrCat("<p><span class=\"mono\">", Escape(commit(*k.last_good)), "..",
                        Escape(commit(*k.first_bad)),
                        "</span>: pass <code>--repo CLONE</code> to list and rank its "
                        "commits.</p>");
  } else {
    return "";
  }
  return absl::StrCat("<section id=\"window\"><h2>Commit window</h2>", body, "</section>");
}

std::string NightliesSection(const KernelTriage& k, const std::vector<Plotted>& series) {
  std::string head = "<tr><th>#</th><th>date</th><th>commit</th><th>run</th>";
  for (const Plotted& s : series)
    absl::StrAppend(&head, "<th class=\"mono\">", Escape(s.metric), "</th>");
  absl::StrAppend(&head, "</tr>");
  std::string rows;
  for (size_t i = 0; i < k.nightlies.size(); ++i) {
    const NightlyRef& r = k.nightlies[i];
    std::string cls;
    if (k.last_good.has_value() && k.last_good->index == static_cast<int>(i)) cls = "last-good";
    if (k.first_bad.has_value() && k.first_bad->index == static_cast<int>(i)) cls = "first-bad";
    absl::StrAppend(&rows, "<tr data-nightly=\"", i, "\"",
                    cls.empty() ? "" : absl::StrCat(" class=\"", cls, "\""), ">",
                    Cell(absl::StrCat(i), "num"), Cell(r.date), Cell(r.sha, "mono"),
                    Cell(r.run_id != 0 ? absl::StrCat(r.run_id) : "", "num"));
    for (const Plotted& s : series) {
      absl::StrAppend(
          &rows,
          Cell(i < s.values.size() && s.values[i].has_value() ? Number(*s.values[i]) : "", "num"));
    }
    absl::StrAppend(&rows, "</tr>");
  }
  return absl::StrCat("<section id=\"nightlies\"><h2>Nightlies</h2><details><summary>",
                      Count(k.nightlies.size(), "nightly", "nightlies"),
                      " analysed</summary><table class=\"nightlies\">", head, rows,
                      "</table></details></section>");
}

std::string OthersSection(const triage::TriageResult& result) {
  if (result.kernels.size() < 2) return "";
  std::string rows;
  for (size_t i = 1; i < result.kernels.size(); ++i) {
    const KernelTriage& o = result.kernels[i];
    absl::StrAppend(&rows, "<tr>", Cell(o.kernel, "mono"), Cell(CauseWords(o.diagnosis.cause)),
                    Cell(absl::StrFormat("%.2f", o.diagnosis.confidence), "num"),
                    Cell(triage::ShapeName(o.evidence.shape)),
                    Cell(o.evidence.shape == triage::Shape::kNone
                             ? ""
                             : FormatSignedPercent(100 * o.evidence.primary.relative_change),
                         "num"),
                    Cell(o.first_bad.has_value() ? o.first_bad->date : ""), "</tr>");
  }
  return absl::StrCat("<section id=\"other-kernels\"><h2>Other kernels on ",
                      Escape(result.platform),
                      "</h2><table><tr><th>kernel</th><th>cause</th><th>confidence</th>"
                      "<th>shape</th><th>change</th><th>first bad</th></tr>",
                      rows, "</table></section>");
}

}  // namespace

int TriagePointCount(const triage::TriageResult& result) {
  if (result.kernels.empty()) return 0;
  const KernelTriage& k = result.kernels.front();
  int count = static_cast<int>(k.values.size());
  for (const triage::CompanionSeries& c : k.companions) {
    for (const std::optional<double>& v : c.values) count += v.has_value() ? 1 : 0;
  }
  return count;
}

absl::StatusOr<std::string> RenderTriagePage(const triage::TriageResult& result,
                                             const triage::ReportExtras& extras, absl::Time now) {
  if (result.kernels.empty()) {
    ASSIGN_OR_RETURN(std::string head, PageHead("kbisect triage: nothing to triage", 0));
    return absl::StrCat(head, "<h1>kbisect triage</h1><p>Nothing to triage.</p>", PageEnd(now));
  }
  const KernelTriage& k = result.kernels.front();
  const std::string subject =
      absl::StrCat(k.kernel.empty() ? "" : k.kernel + " on ",
                   k.platform_short.empty() ? k.platform : k.platform_short);
  const std::string headline = absl::StrCat(CauseWords(k.diagnosis.cause), " (confidence ",
                                            absl::StrFormat("%.2f", k.diagnosis.confidence), ")");
  ASSIGN_OR_RETURN(std::string head,
                   PageHead(absl::StrCat("kbisect triage ", subject, ": ", headline), 0));
  std::string facts;
  absl::StrAppend(
      &facts, Fact("Source",
                   absl::StrCat(result.source, " (", triage::InputFormatName(result.format), ")")));
  absl::StrAppend(&facts,
                  Fact("Metric", absl::StrCat(k.primary_metric, ", ", DirectionName(k.direction))));
  if (!k.nightlies.empty()) {
    absl::StrAppend(
        &facts, Fact("Nightlies", absl::StrCat(k.nightlies.size(), ", ", k.nightlies.front().date,
                                               " .. ", k.nightlies.back().date)));
  }
  if (!result.date.empty()) absl::StrAppend(&facts, Fact("Asked about", result.date));
  absl::StrAppend(&facts, MoveFacts(k));
  absl::StrAppend(&facts, Fact("True value", k.true_value.note));

  const std::vector<Plotted> series = SeriesOf(k);
  std::string charts;
  for (const Plotted& s : series) {
    ASSIGN_OR_RETURN(std::string chart, Chart(k, s));
    absl::StrAppend(&charts, chart);
  }
  std::string reasons;
  for (const std::string& r : k.diagnosis.reasons)
    absl::StrAppend(&reasons, "<li>", Escape(r), "</li>");
  std::string notes;
  for (const std::string& n : result.notes) absl::StrAppend(&notes, "<li>", Escape(n), "</li>");
  for (const std::string& n : k.notes) absl::StrAppend(&notes, "<li>", Escape(n), "</li>");
  ASSIGN_OR_RETURN(
      std::string body,
      Fill(
          R"html(<h1>kbisect triage: {{subject}}</h1><p class="headline outcome-{{cause}}">{{headline}}</p>
<section id="facts"><dl class="facts">{{{facts}}}</dl></section>
<section id="cause"><h2>Why</h2><ul class="reasons">{{{reasons}}}</ul></section>
<section id="series"><h2>Series around the move</h2>{{{charts}}}<div class="legend"><span>points: one per nightly</span><span>- - change point (the one explained in red, with its levels)</span><span>large green / red point: last good / first bad</span><span>amber ring: spike</span></div></section>
{{{evidence}}}{{{window}}}{{{next}}}{{{notes}}}{{{others}}}{{{nightlies}}}
)html",
          {{"subject", subject},
           {"cause", triage::CauseName(k.diagnosis.cause)},
           {"headline", headline},
           {"facts", facts},
           {"reasons", reasons},
           {"charts", charts},
           {"evidence", EvidenceSection(k)},
           {"window", WindowSection(k, extras)},
           {"next", extras.bisect_command.empty()
                        ? (k.diagnosis.cause == v1::CAUSE_REAL_REGRESSION
                               ? ""
                               : "<section id=\"next\"><h2>Next</h2><p>No bisect: the data does "
                                 "not point at a commit.</p></section>")
                        : absl::StrCat("<section id=\"next\"><h2>Next: bisect the window</h2>"
                                       "<pre class=\"reproduce\">",
                                       Escape(extras.bisect_command), "</pre></section>")},
           {"notes", notes.empty() ? ""
                                   : absl::StrCat("<section id=\"notes\"><h2>Notes</h2><ul>", notes,
                                                  "</ul></section>")},
           {"others", OthersSection(result)},
           {"nightlies", NightliesSection(k, series)}}));
  return absl::StrCat(head, body, PageEnd(now));
}

}  // namespace kbisect::html
