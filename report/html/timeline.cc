// Copyright 2026 The kbisect Authors.
#include "report/html/timeline.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/rpc/enum_label.h"
#include "common/rpc/proto_time.h"
#include "common/text/count.h"
#include "report/html/page_format.h"
#include "report/html/template.h"

namespace kbisect::html {
namespace {

constexpr double kWidth = 960, kLeft = 120, kRight = 16, kRow = 22, kTop = 8, kAxis = 28;

std::string Num(double v) { return absl::StrFormat("%.1f", v); }

}  // namespace

absl::StatusOr<std::string> RenderTimeline(const v1::JobStatus& job, absl::Time now) {
  std::map<std::string, std::vector<const v1::Probe*>> rows;
  absl::Time t0 = absl::InfiniteFuture(), t1 = absl::InfinitePast();
  auto end_of = [&](const v1::Probe& p) {
    return p.has_end_time() ? FromProto(p.end_time()) : std::max(now, FromProto(p.start_time()));
  };
  for (const v1::Probe& p : job.probes()) {
    if (!p.has_start_time() || p.worker().empty()) continue;
    rows[p.worker()].push_back(&p);
    t0 = std::min(t0, FromProto(p.start_time()));
    t1 = std::max(t1, end_of(p));
  }
  if (rows.empty()) return std::string();
  const double span = std::max(1e-3, absl::ToDoubleSeconds(t1 - t0));
  const double plot_w = kWidth - kLeft - kRight;
  auto x_of = [&](absl::Time t) { return kLeft + plot_w * absl::ToDoubleSeconds(t - t0) / span; };
  const double height = kTop + kRow * rows.size() + kAxis;

  std::string body;
  int r = 0;
  for (const auto& [worker, probes] : rows) {
    const double y = kTop + kRow * r;
    absl::StrAppend(&body, "<text class=\"row-label\" x=\"", Num(kLeft - 6), "\" y=\"",
                    Num(y + kRow * 0.65), "\" text-anchor=\"end\">", Escape(worker), "</text>");
    for (const v1::Probe* p : probes) {
      const double x0 = x_of(FromProto(p->start_time()));
      const double x1 = std::max(x0 + 1.5, x_of(end_of(*p)));
      const bool cancelled = p->state() == v1::PROBE_STATE_CANCELLED;
      const bool running = p->state() == v1::PROBE_STATE_RUNNING;
      const double checkout = absl::ToDoubleSeconds(FromProto(p->timings().checkout()));
      const double build = absl::ToDoubleSeconds(FromProto(p->timings().build()));
      const double bench = absl::ToDoubleSeconds(FromProto(p->timings().bench()));
      const std::string title = absl::StrCat(
          EnumLabel(p->kind()), " #", p->index(), " ", ShortSha(p->sha()), " on ", worker,
          ": checkout ", Seconds(checkout), ", build ",
          p->timings().build_reused() ? "reused" : Seconds(build), ", bench ", Seconds(bench),
          cancelled ? " (cancelled)"
          : running ? " (running)"
                    : "",
          " -> ", cancelled ? "cancelled" : VerdictClass(*p));
      absl::StrAppend(&body, "<g class=\"task v-", VerdictClass(*p), cancelled ? " cancelled" : "",
                      running ? " running" : "", "\" data-probe=\"", Escape(p->probe_id()),
                      "\"><title>", Escape(title), "</title><rect class=\"task-bar\" x=\"", Num(x0),
                      "\" y=\"", Num(y + 3), "\" width=\"", Num(x1 - x0), "\" height=\"",
                      Num(kRow - 6), "\"/>");
      // The segments, in order, scaled to the bar's seconds.
      double at = x0;
      const double px_per_s = plot_w / span;
      for (const auto& [cls, seconds] : {std::pair<const char*, double>{"seg-checkout", checkout},
                                         {"seg-build", build},
                                         {"seg-bench", bench}}) {
        const double w = std::min(seconds * px_per_s, x1 - at);
        if (w <= 0.2) continue;
        absl::StrAppend(&body, "<rect class=\"", cls, "\" x=\"", Num(at), "\" y=\"", Num(y + 7),
                        "\" width=\"", Num(w), "\" height=\"", Num(kRow - 14), "\"/>");
        at += w;
      }
      absl::StrAppend(&body, "</g>");
    }
    ++r;
  }
  for (int t = 0; t <= 4; ++t) {
    const double x = kLeft + plot_w * t / 4.0;
    absl::StrAppend(&body, "<text class=\"tick\" x=\"", Num(x), "\" y=\"", Num(height - kAxis + 16),
                    "\" text-anchor=\"", t == 4 ? "end" : "middle", "\">+",
                    Escape(Seconds(span * t / 4.0)), "</text>");
  }
  return Fill(
      R"html(<svg class="timeline" viewBox="0 0 {{w}} {{h}}" role="img" aria-label="{{aria}}" xmlns="http://www.w3.org/2000/svg"><defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" class="hatch"/></pattern></defs>{{{body}}}</svg>)html",
      {{"w", Num(kWidth)},
       {"h", Num(height)},
       {"aria", absl::StrCat("tasks of ", Count(rows.size(), "worker"), " over ", Seconds(span))},
       {"body", body}});
}

}  // namespace kbisect::html
