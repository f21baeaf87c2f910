// Copyright 2026 The kbisect Authors.
#include "report/html/sample_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/rpc/enum_label.h"
#include "common/status_macros.h"
#include "common/text/count.h"
#include "report/html/page_format.h"
#include "report/html/template.h"

namespace kbisect::html {
namespace {

constexpr double kWidth = 960, kHeight = 360;
constexpr double kLeft = 72, kRight = 16, kTop = 24, kBottom = 56;

// A deterministic jitter in [-1, 1] for sample `i` of probe `id` (FNV-1a), so a page renders
// the same way twice.
double Jitter(const std::string& id, int i) {
  uint64_t h = 1469598103934665603ull;
  for (char c : absl::StrCat(id, "#", i))
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return static_cast<double>(h % 2001) / 1000.0 - 1.0;
}

struct Scale {
  double lo, hi;
  double Y(double v) const {
    return kTop + (kHeight - kTop - kBottom) * (1.0 - (v - lo) / (hi - lo));
  }
};

std::string Num(double v) { return absl::StrFormat("%.1f", v); }

// One mark; cached samples are squares, the rest circles. A non-empty `title` is its tooltip.
std::string Mark(double x, double y, const std::string& cls, bool square,
                 const std::string& probe_id, const std::string& title = "") {
  const std::string end =
      title.empty() ? "/>" : absl::StrCat("><title>", Escape(title), "</title></",
                                          square ? "rect" : "circle", ">");
  if (square) {
    return absl::StrFormat(
        "<rect class=\"sample %s\" x=\"%s\" y=\"%s\" width=\"7\" height=\"7\" "
        "data-probe=\"%s\"%s",
        cls, Num(x - 3.5), Num(y - 3.5), Escape(probe_id), end);
  }
  return absl::StrFormat(
      "<circle class=\"sample %s\" cx=\"%s\" cy=\"%s\" r=\"3.5\" "
      "data-probe=\"%s\"%s",
      cls, Num(x), Num(y), Escape(probe_id), end);
}

// The plot's frame: its columns (commit index to the probes with samples there; the last-good
// column may have none, only the confirmation's interleaved samples), the y scale over every
// sample and baseline, and the column width.
struct PlotFrame {
  std::map<int, std::vector<const v1::Probe*>> columns;
  bool paired = false;  // The interleaved confirmation samples sit in the last-good column.
  Scale scale{0, 0};
  double plot_w = 0;
  double col_w = 0;
};

// The frame of `job`'s plot, or nullopt when no probe has samples yet.
std::optional<PlotFrame> FramePlot(const v1::JobStatus& job) {
  // Columns: every commit index with samples, plus GOOD (0) and BAD (n).
  PlotFrame frame;
  double lo = INFINITY, hi = -INFINITY;
  auto extend = [&](double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  };
  for (const v1::Probe& p : job.probes()) {
    if (p.samples_size() == 0) continue;
    frame.columns[p.index()].push_back(&p);
    for (double s : p.samples()) extend(s);
  }
  frame.paired = job.has_confirmation() && job.has_last_good();
  if (frame.paired) {
    for (const v1::ConfirmationPairs& set : job.confirmation().sets()) {
      if (!set.interleaved()) continue;
      frame.columns[job.last_good().index()];
      for (double s : set.last_good_samples()) extend(s);
    }
  }
  if (frame.columns.empty()) return std::nullopt;
  for (double s : job.baseline().good().samples()) extend(s);
  for (double s : job.baseline().bad().samples()) extend(s);
  if (!(hi > lo)) {
    hi = lo + std::max(1e-9, std::fabs(lo) * 0.01);
  }
  const double pad = (hi - lo) * 0.08;
  frame.scale = Scale{lo - pad, hi + pad};
  frame.plot_w = kWidth - kLeft - kRight;
  frame.col_w = frame.plot_w / static_cast<double>(frame.columns.size());
  return frame;
}

// The y grid lines and their tick labels, values in `unit`.
std::string GridSvg(const Scale& scale, const std::string& unit) {
  std::string grid;
  for (int t = 0; t <= 4; ++t) {
    const double v = scale.lo + (scale.hi - scale.lo) * t / 4.0;
    const double y = scale.Y(v);
    absl::StrAppend(&grid, "<line class=\"grid\" x1=\"", Num(kLeft), "\" x2=\"",
                    Num(kWidth - kRight), "\" y1=\"", Num(y), "\" y2=\"", Num(y),
                    "\"/><text class=\"tick\" x=\"", Num(kLeft - 6), "\" y=\"", Num(y + 4),
                    "\" text-anchor=\"end\">", Escape(Value(v, unit)), "</text>");
  }
  return grid;
}

// Appends to `bands` baseline `b`'s band (its samples' range, class `cls`), its median line and
// its label (`name`).
void AppendBaselineBand(const v1::Baseline& b, const char* cls, const char* name,
                        const PlotFrame& frame, const std::string& unit, std::string* bands) {
  const Scale& scale = frame.scale;
  const auto [mn, mx] = std::minmax_element(b.samples().begin(), b.samples().end());
  const double y1 = scale.Y(*mx), y2 = scale.Y(*mn);
  absl::StrAppend(
      bands, "<rect class=\"", cls, "\" x=\"", Num(kLeft), "\" width=\"", Num(frame.plot_w),
      "\" y=\"", Num(y1), "\" height=\"", Num(std::max(1.0, y2 - y1)), "\"><title>", name,
      " baseline: median ", Escape(Value(b.median(), unit)), ", samples ", Escape(Value(*mn, unit)),
      " to ", Escape(Value(*mx, unit)), "</title></rect><line class=\"", cls, "-median\" x1=\"",
      Num(kLeft), "\" x2=\"", Num(kWidth - kRight), "\" y1=\"", Num(scale.Y(b.median())),
      "\" y2=\"", Num(scale.Y(b.median())), "\"/><text class=\"band-label\" x=\"",
      Num(kWidth - kRight - 4), "\" y=\"", Num(scale.Y(b.median()) - 4), "\" text-anchor=\"end\">",
      name, " ", Escape(Value(b.median(), unit)), "</text>");
}

// The GOOD and BAD baseline bands and the verdict threshold, or "" until both baselines have
// samples.
std::string BandsSvg(const v1::JobStatus& job, const PlotFrame& frame) {
  const v1::Baseline& good = job.baseline().good();
  const v1::Baseline& bad = job.baseline().bad();
  if (good.samples_size() == 0 || bad.samples_size() == 0) return std::string();
  const std::string& unit = job.metric_unit();
  const Scale& scale = frame.scale;
  std::string bands;
  AppendBaselineBand(good, "band-good", "GOOD", frame, unit, &bands);
  AppendBaselineBand(bad, "band-bad", "BAD", frame, unit, &bands);
  const double threshold =
      good.median() + job.spec().threshold_fraction() * (bad.median() - good.median());
  absl::StrAppend(&bands, "<line class=\"threshold\" x1=\"", Num(kLeft), "\" x2=\"",
                  Num(kWidth - kRight), "\" y1=\"", Num(scale.Y(threshold)), "\" y2=\"",
                  Num(scale.Y(threshold)), "\"><title>threshold ", Escape(Value(threshold, unit)),
                  " (GOOD + ", absl::StrFormat("%.2g", job.spec().threshold_fraction()),
                  " of GOOD to BAD)</title></line><text class=\"band-label\" x=\"", Num(kLeft + 4),
                  "\" y=\"", Num(scale.Y(threshold) - 4), "\">threshold ",
                  Escape(Value(threshold, unit)), "</text>");
  return bands;
}

// The SVG's parts, each drawn over the one before.
struct PlotParts {
  std::string bands, grid, cols, marks, labels;
};

// Where one column is drawn and what it is.
struct Column {
  int index = 0;  // Its commit index.
  int c = 0;      // Its position, left to right.
  double x0 = 0;  // Its left edge.
  double cx = 0;  // Its middle.
};

// Appends to `cols` the background of `column` (holding `probes`), classed culprit or last-good
// and titled with its sha, subject and verdict.
void AppendColumnBackground(const v1::JobStatus& job, const Column& column,
                            const std::vector<const v1::Probe*>& probes, const PlotFrame& frame,
                            int culprit, int last_good, std::string* cols) {
  const int index = column.index;
  std::string cls = "col";
  std::string sha = probes.empty() ? job.last_good().sha() : probes.front()->sha();
  std::string verdict;
  for (const v1::Probe* p : probes) {
    if (p->kind() == v1::PROBE_KIND_BISECT && p->verdict() != v1::VERDICT_UNSPECIFIED) {
      verdict = VerdictClass(*p);
    }
  }
  if (index == culprit) absl::StrAppend(&cls, " culprit");
  if (index == last_good) absl::StrAppend(&cls, " last-good");
  std::string title = absl::StrCat("#", index, " ", ShortSha(sha));
  const std::string subject = KnownSubject(job, index);
  if (!subject.empty()) absl::StrAppend(&title, " ", subject);
  if (!verdict.empty()) absl::StrAppend(&title, " -> ", verdict);
  absl::StrAppend(cols, "<g class=\"", cls, "\" data-index=\"", index, "\" data-sha=\"",
                  Escape(sha), "\"><title>", Escape(title), "</title><rect class=\"col-bg\" x=\"",
                  Num(column.x0), "\" y=\"", Num(kTop), "\" width=\"", Num(frame.col_w),
                  "\" height=\"", Num(kHeight - kTop - kBottom), "\"/></g>");
}

// Appends to `marks` one mark per sample of each of `probes` (jittered inside the column) and
// a tick at each probe's median.
void AppendProbeMarks(const v1::JobStatus& job, const Column& column,
                      const std::vector<const v1::Probe*>& probes, const PlotFrame& frame,
                      std::string* marks) {
  const double cx = column.cx, col_w = frame.col_w;
  const std::string& unit = job.metric_unit();
  for (const v1::Probe* p : probes) {
    const std::string vclass = VerdictClass(*p);
    std::string mcls = absl::StrCat("v-", vclass, " kind-", EnumLabel(p->kind()));
    if (p->provisional()) absl::StrAppend(&mcls, " provisional");
    if (p->cached()) absl::StrAppend(&mcls, " cached");
    if (IsQuarantined(job, p->worker())) absl::StrAppend(&mcls, " quarantined");
    const std::vector<const v1::GpuState*> gpu = SampleGpuStates(*p);
    for (int i = 0; i < p->samples_size(); ++i) {
      // A sample the GPU skewed (throttled, capped, shared) carries its mark's class and says why.
      const GpuRunMark gpu_mark = gpu[i] == nullptr ? GpuRunMark::kClean : GpuMarkOf(*gpu[i]);
      const std::string cls = gpu_mark == GpuRunMark::kClean
                                  ? mcls
                                  : absl::StrCat(mcls, " ", GpuMarkClass(gpu_mark));
      absl::StrAppend(marks, Mark(cx + Jitter(p->probe_id(), i) * col_w * 0.3,
                                  frame.scale.Y(p->samples(i)), cls, p->cached(), p->probe_id(),
                                  gpu_mark == GpuRunMark::kClean ? "" : GpuMarkWords(*gpu[i])));
    }
    if (p->samples_size() > 0) {
      const double y = frame.scale.Y(p->median());
      absl::StrAppend(marks, "<line class=\"median v-", vclass, "\" x1=\"", Num(cx - col_w * 0.38),
                      "\" x2=\"", Num(cx + col_w * 0.38), "\" y1=\"", Num(y), "\" y2=\"", Num(y),
                      "\"><title>", Escape(p->worker()), ": median ",
                      Escape(Value(p->median(), unit)), " of ", p->samples_size(),
                      "</title></line>");
    }
  }
}

// Appends to `marks` the interleaved confirmation sets' last-good samples, drawn in `column`.
void AppendPairedMarks(const v1::JobStatus& job, const Column& column, const PlotFrame& frame,
                       std::string* marks) {
  for (const v1::ConfirmationPairs& set : job.confirmation().sets()) {
    if (!set.interleaved()) continue;
    for (int i = 0; i < set.last_good_samples_size(); ++i) {
      absl::StrAppend(marks,
                      Mark(column.cx + Jitter(set.worker() + "/pairs", i) * frame.col_w * 0.3,
                           frame.scale.Y(set.last_good_samples(i)), "paired v-confirm kind-confirm",
                           false, absl::StrCat("confirmation:", set.worker())));
    }
  }
}

// Appends to `labels` the index under `column` (every one when there are few columns, else the
// first, the last, the culprit and the last good) and the culprit's or last good's name.
void AppendColumnLabels(const Column& column, const PlotFrame& frame, int culprit, int last_good,
                        std::string* labels) {
  const int index = column.index;
  const bool every_label = frame.columns.size() <= 40;
  if (every_label || index == culprit || index == last_good || column.c == 0 ||
      column.c + 1 == static_cast<int>(frame.columns.size())) {
    absl::StrAppend(labels, "<text class=\"xlabel\" x=\"", Num(column.cx), "\" y=\"",
                    Num(kHeight - kBottom + 14), "\" text-anchor=\"middle\">", index, "</text>");
  }
  if (index == culprit || index == last_good) {
    absl::StrAppend(labels, "<text class=\"col-label ", index == culprit ? "culprit" : "last-good",
                    "\" x=\"", Num(column.cx), "\" y=\"", Num(kHeight - kBottom + 30),
                    "\" text-anchor=\"middle\">", index == culprit ? "culprit" : "last good",
                    "</text>");
  }
}

// Draws every column of `frame` into `parts`: its background, its marks and its labels.
void DrawColumns(const v1::JobStatus& job, const PlotFrame& frame, PlotParts* parts) {
  const int culprit = job.has_culprit() ? job.culprit().index() : -1;
  const int last_good = job.has_last_good() ? job.last_good().index() : -1;
  int c = 0;
  for (const auto& [index, probes] : frame.columns) {
    Column column;
    column.index = index;
    column.c = c;
    column.x0 = kLeft + frame.col_w * c;
    column.cx = column.x0 + frame.col_w / 2;
    AppendColumnBackground(job, column, probes, frame, culprit, last_good, &parts->cols);
    AppendProbeMarks(job, column, probes, frame, &parts->marks);
    if (frame.paired && index == last_good) AppendPairedMarks(job, column, frame, &parts->marks);
    AppendColumnLabels(column, frame, culprit, last_good, &parts->labels);
    ++c;
  }
}

// The <svg> element around `parts`, with the axis titles.
absl::StatusOr<std::string> FillPlot(const v1::JobStatus& job, const PlotFrame& frame,
                                     const PlotParts& parts) {
  return Fill(
      R"html(<svg class="plot" viewBox="0 0 {{w}} {{h}}" role="img" aria-label="{{aria}}" xmlns="http://www.w3.org/2000/svg">
{{{bands}}}{{{grid}}}{{{cols}}}{{{marks}}}{{{labels}}}<text class="axis-title" x="{{cx}}" y="{{xt}}" text-anchor="middle">first-parent index (0 = GOOD, {{n}} = BAD)</text><text class="axis-title" transform="rotate(-90)" x="{{yx}}" y="14" text-anchor="middle">{{metric}}</text>
</svg>)html",
      {{"w", Num(kWidth)},
       {"h", Num(kHeight)},
       {"aria", absl::StrCat("samples of ", Count(frame.columns.size(), "probed commit"))},
       {"bands", parts.bands},
       {"grid", parts.grid},
       {"cols", parts.cols},
       {"marks", parts.marks},
       {"labels", parts.labels},
       {"cx", Num(kLeft + frame.plot_w / 2)},
       {"xt", Num(kHeight - 6)},
       {"n", absl::StrCat(job.commit_count())},
       {"yx", Num(-(kTop + (kHeight - kTop - kBottom) / 2))},
       {"metric",
        absl::StrCat(job.metric_name().empty() ? "metric" : job.metric_name(),
                     job.metric_unit().empty() ? "" : " (" + job.metric_unit() + ")",
                     job.direction() == v1::DIRECTION_HIGHER_IS_BETTER ? ", higher is better"
                                                                       : ", lower is better")}});
}

}  // namespace

int SampleMarkCount(const v1::JobStatus& job) {
  int count = 0;
  for (const v1::Probe& p : job.probes()) count += p.samples_size();
  if (job.has_confirmation() && job.has_last_good()) {
    for (const v1::ConfirmationPairs& set : job.confirmation().sets()) {
      if (set.interleaved()) count += set.last_good_samples_size();
    }
  }
  return count;
}

absl::StatusOr<std::string> RenderSamplePlot(const v1::JobStatus& job) {
  const std::optional<PlotFrame> frame = FramePlot(job);
  if (!frame.has_value()) return std::string();
  PlotParts parts;
  parts.bands = BandsSvg(job, *frame);
  parts.grid = GridSvg(frame->scale, job.metric_unit());
  DrawColumns(job, *frame, &parts);
  return FillPlot(job, *frame, parts);
}

}  // namespace kbisect::html
