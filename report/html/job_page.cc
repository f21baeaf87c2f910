// Copyright 2026 The kbisect Authors.
#include "report/html/job_page.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/metric/percent.h"
#include "common/rpc/enum_label.h"
#include "common/rpc/proto_time.h"
#include "common/status_macros.h"
#include "common/text/count.h"
#include "report/eta.h"
#include "report/gpu_during_job.h"
#include "report/html/page_format.h"
#include "report/html/page_style.h"
#include "report/html/sample_plot.h"
#include "report/html/template.h"
#include "report/html/timeline.h"
#include "report/reproduce.h"
#include "report/submodule_bump.h"
#include "report/suite_groups.h"

namespace kbisect::html {
namespace {

std::string Time(const google::protobuf::Timestamp& t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", FromProto(t), absl::UTCTimeZone());
}

// <tr><th>name</th><td>value</td></tr> rows of a facts list; `value` is escaped.
std::string Fact(absl::string_view name, absl::string_view value) {
  return absl::StrCat("<dt>", Escape(name), "</dt><dd>", Escape(value), "</dd>");
}

absl::StatusOr<std::string> Facts(const v1::JobStatus& job, const PageOptions& options) {
  std::string facts;
  absl::StrAppend(
      &facts,
      Fact("Range", absl::StrCat(ShortSha(job.good_sha()), "..", ShortSha(job.bad_sha()), " (",
                                 Count(job.commit_count(), "commit"), ", ", job.spec().good(), "..",
                                 job.spec().bad().empty() ? "HEAD" : job.spec().bad(), ")")));
  absl::StrAppend(&facts, Fact("Repository", job.spec().repository()));
  if (job.spec().has_dependency()) {
    // A dependency follow-up: where its commits are checked out.
    const v1::DependencyDescent& descent = job.spec().dependency();
    absl::StrAppend(&facts, Fact("Dependency of",
                                 absl::StrCat(descent.superproject(), " at ",
                                              ShortSha(descent.superproject_sha()),
                                              descent.kind() == v1::DEPENDENCY_KIND_PIN_FILE
                                                  ? absl::StrCat(", pinned in ", descent.path(),
                                                                 " ($KBISECT_DEPENDENCY_DIR)")
                                                  : absl::StrCat(", submodule ", descent.path()))));
  }
  absl::StrAppend(&facts, Fact("Benchmark", absl::StrJoin(job.spec().bench_command(), " ")));
  if (!job.spec().build_command().empty()) {
    absl::StrAppend(&facts, Fact("Build", job.spec().build_command()));
  }
  absl::StrAppend(
      &facts,
      Fact("Metric", absl::StrCat(job.metric_name(),
                                  job.metric_unit().empty() ? "" : " (" + job.metric_unit() + ")",
                                  ", ", EnumLabel(job.direction()))));
  if (job.baseline().good().samples_size() > 0 && job.baseline().bad().samples_size() > 0) {
    absl::StrAppend(
        &facts, Fact("GOOD → BAD",
                     absl::StrCat(Value(job.baseline().good().median(), job.metric_unit()), " → ",
                                  Value(job.baseline().bad().median(), job.metric_unit()), " (",
                                  FormatPercent(job.regression_pct()), " worse)")));
  }
  absl::StrAppend(
      &facts, Fact("State", absl::StrCat(EnumLabel(job.state()), " / ", EnumLabel(job.status()))));
  absl::StrAppend(
      &facts, Fact("Rounds",
                   absl::StrCat(Count(job.rounds(), "probing round"), ", ",
                                Count(job.bench_runs(), "bench run"), ", ",
                                Count(job.progress().probes_cancelled(), "probe"), " cancelled")));
  absl::StrAppend(&facts, Fact("Wall time", Seconds(job.wall_seconds())));
  if (!JobFinished(job)) {
    const int left = job.progress().remaining_commits();
    absl::StrAppend(&facts,
                    Fact("Progress", absl::StrCat(Count(left, "commit"), " left, ",
                                                  Count(job.progress().probes_in_flight(), "probe"),
                                                  " in flight")));
    const std::optional<absl::Duration> eta = EstimateTimeLeft(
        job, options.now,
        options.past.has_value() ? std::optional<absl::Duration>(options.past->mean)
                                 : std::nullopt);
    std::string source;
    if (eta.has_value() && options.past.has_value()) {
      source = absl::StrCat(" <span class=\"muted eta-past\">(with ",
                            Count(options.past->jobs, "earlier job"), " of this benchmark)</span>");
    }
    absl::StrAppend(&facts, "<dt>Time left</dt><dd class=\"eta\">",
                    Escape(eta.has_value() ? FormatEta(*eta) : "estimated after the first probe"),
                    source, "</dd>");
  }
  if (job.has_create_time()) absl::StrAppend(&facts, Fact("Created", Time(job.create_time())));
  if (job.has_finish_time()) absl::StrAppend(&facts, Fact("Finished", Time(job.finish_time())));
  return Fill("<section id=\"facts\"><dl class=\"facts\">{{{facts}}}</dl></section>",
              {{"facts", facts}});
}

std::string CommitRows(const v1::CommitRef& c) {
  return absl::StrCat("<tr><th>Commit</th><td class=\"mono\">", Escape(c.sha()),
                      c.is_merge() ? " <span class=\"badge\">merge</span>" : "",
                      "</td></tr><tr><th>Author</th><td>", Escape(c.author()),
                      "</td></tr><tr><th>Date</th><td>", Escape(c.date()),
                      "</td></tr><tr><th>Message</th><td><b>", Escape(c.subject()), "</b>",
                      c.body().empty() ? "" : "<pre>" + Escape(c.body()) + "</pre>", "</td></tr>");
}

absl::StatusOr<std::string> CulpritSection(const v1::JobStatus& job) {
  if (!job.has_culprit()) {
    if (job.candidates_size() == 0) return std::string();
    std::string items;
    for (const std::string& sha : job.candidates()) {
      absl::StrAppend(&items, "<li class=\"mono\">", Escape(sha), "</li>");
    }
    return absl::StrCat(
        "<section id=\"candidates\"><h2>Candidates</h2><p>Untestable commits "
        "border the step; it is one of these:</p><ul>",
        items, "</ul></section>");
  }
  const std::string& unit = job.metric_unit();
  std::string rows = CommitRows(job.culprit());
  absl::StrAppend(&rows, "<tr><th>Before</th><td>", Escape(Value(job.before(), unit)),
                  job.has_last_good() ? absl::StrCat(" at last good <span class=\"mono\">",
                                                     Escape(job.last_good().short_sha()),
                                                     "</span> (#", job.last_good().index(), ")")
                                      : "",
                  "</td></tr><tr><th>After</th><td>", Escape(Value(job.after(), unit)), " (",
                  FormatPercent(job.culprit_regression_pct()), " worse)</td></tr>");
  if (job.has_confirmation()) {
    const v1::Confirmation& c = job.confirmation();
    absl::StrAppend(
        &rows, "<tr><th>Confirmation</th><td class=\"confirmation\"><span class=\"badge ",
        c.confirmed() ? "bad\">confirmed" : "warn\">not confirmed", "</span> ratio ",
        absl::StrFormat("%.4g", c.ratio()), " (95% CI ", absl::StrFormat("%.4g", c.ci_low()),
        " to ", absl::StrFormat("%.4g", c.ci_high()), "), ", Count(c.fresh_pairs(), "fresh pair"),
        ", ", c.reused_pairs(), " reused from the search, on ", Count(c.sets_size(), "set"),
        "</td></tr>");
  }
  std::string extra;
  if (job.has_merged_culprit()) {
    absl::StrAppend(&extra, "<h3>Inside the merged branch</h3><table>",
                    CommitRows(job.merged_culprit()), "</table>");
  }
  for (const v1::DependencyCulprit& found : job.dependency_culprits()) {
    absl::StrAppend(&extra, "<h3>Inside the dependency <span class=\"mono\">", Escape(found.path()),
                    "</span></h3><table><tr><th>Dependency</th><td>", Escape(found.repository()),
                    " <span class=\"mono\">", Escape(found.old_sha().substr(0, 7)), "..",
                    Escape(found.new_sha().substr(0, 7)), "</span> (job ", Escape(found.job_id()),
                    ")</td></tr>", CommitRows(found.commit()), "</table>");
  }
  if (job.culprits_size() > 1) {
    std::string steps;
    for (const v1::Culprit& step : job.culprits()) {
      absl::StrAppend(&steps, "<tr><td class=\"mono\">", Escape(step.commit().short_sha()),
                      "</td><td>", Escape(step.commit().subject()), "</td><td class=\"num\">",
                      Escape(Value(step.before(), unit)), " → ", Escape(Value(step.after(), unit)),
                      "</td><td class=\"num\">", FormatPercent(step.regression_pct()),
                      "</td><td class=\"num\">",
                      absl::StrFormat("%.0f%%", 100 * step.share_of_total()), "</td></tr>");
    }
    absl::StrAppend(&extra,
                    "<h3>Every step, largest first</h3><table class=\"steps\"><tr><th>commit</th>"
                    "<th>subject</th><th>before → after</th><th>change</th><th>share</th></tr>",
                    steps, "</table>");
  }
  return Fill(
      R"html(<section id="culprit"><h2>Culprit</h2><table class="culprit">{{{rows}}}</table>{{{extra}}}</section>)html",
      {{"rows", rows}, {"extra", extra}});
}

std::string Legend() {
  auto dot = [](const char* cls, const char* label, bool square = false) {
    return absl::StrCat(
        "<span><svg viewBox=\"0 0 14 14\">",
        square ? absl::StrCat("<rect class=\"", cls,
                              "\" x=\"3\" y=\"3\" width=\"8\" "
                              "height=\"8\"/>")
               : absl::StrCat("<circle class=\"", cls, "\" cx=\"7\" cy=\"7\" r=\"4\"/>"),
        "</svg>", label, "</span>");
  };
  return absl::StrCat(
      "<div class=\"legend\">", dot("v-good", "good"), dot("v-bad", "bad"), dot("v-skip", "skip"),
      dot("v-ambiguous", "ambiguous"), dot("v-pending", "not judged yet"),
      dot("v-confirm", "confirmation"),
      dot("v-good provisional", "provisional (calibration pending)"),
      dot("v-good", "cached (earlier job)", true), dot("v-bad quarantined", "quarantined worker"),
      dot("v-good gpu-capped", "GPU capped during the run (sw power/thermal)"),
      dot("v-good gpu-throttled", "GPU throttled (hardware slowdown through its reruns)"),
      dot("v-good gpu-shared", "GPU shared with another process"),
      "<span><span class=\"swatch band-good\" style=\"background:var(--good-band)\">"
      "</span> GOOD / <span class=\"swatch\" style=\"background:var(--bad-band)\">"
      "</span> BAD baseline samples</span><span>- - threshold</span></div>");
}

absl::StatusOr<std::string> PlotSection(const v1::JobStatus& job) {
  ASSIGN_OR_RETURN(std::string plot, RenderSamplePlot(job));
  if (plot.empty()) return std::string();
  std::string caption =
      absl::StrCat(Count(SampleMarkCount(job), "sample"), " of ", Count(job.probes_size(), "task"),
                   "; one column per probed commit, in first-parent "
                   "order, ticks at each task's median.");
  if (job.has_culprit() && job.has_confirmation()) {
    absl::StrAppend(&caption, " Culprit ", job.culprit().short_sha(), ": ratio ",
                    absl::StrFormat("%.4g", job.confirmation().ratio()), " (95% CI ",
                    absl::StrFormat("%.4g", job.confirmation().ci_low()), " to ",
                    absl::StrFormat("%.4g", job.confirmation().ci_high()), ") against last good ",
                    job.has_last_good() ? job.last_good().short_sha() : "", ".");
  }
  return Fill(
      R"html(<section id="samples"><h2>Samples</h2><figure>{{{plot}}}<figcaption class="muted">{{caption}}</figcaption></figure>{{{legend}}}</section>)html",
      {{"plot", plot}, {"caption", caption}, {"legend", Legend()}});
}

absl::StatusOr<std::string> TimelineSection(const v1::JobStatus& job, absl::Time now) {
  ASSIGN_OR_RETURN(std::string svg, RenderTimeline(job, now));
  if (svg.empty()) return std::string();
  return Fill(
      R"html(<section id="timeline"><h2>Workers over time</h2>{{{svg}}}<div class="legend"><span><span class="swatch seg-checkout" style="background:var(--seg-checkout)"></span> checkout</span><span><span class="swatch" style="background:var(--seg-build)"></span> build</span><span><span class="swatch" style="background:var(--seg-bench)"></span> bench</span><span>hatched: cancelled</span><span>bar: lease to result</span></div></section>)html",
      {{"svg", svg}});
}

// What the GPU did during the probe's runs: "2 runs rerun on a throttled GPU", "1 run kept
// throttled", "3 runs on a capped GPU", "1 run on a shared GPU" (none when every run was clean).
void AppendGpuFlags(const v1::Probe& p, std::vector<std::string>* flags) {
  GpuRunCounts counts;
  for (const v1::RunRecord& run : p.runs()) counts.Add(run);
  for (std::string& words : counts.ThrottleWords()) flags->push_back(std::move(words));
  if (counts.shared > 0) {
    flags->push_back(absl::StrCat(Count(counts.shared, "run"), " on a shared GPU"));
  }
}

std::string ProbeFlags(const v1::JobStatus& job, const v1::Probe& p) {
  std::vector<std::string> flags;
  if (p.provisional()) flags.push_back("provisional");
  if (p.cached()) flags.push_back(absl::StrCat("cached from ", p.cached_job_id()));
  if (IsQuarantined(job, p.worker())) flags.push_back("quarantined worker");
  if (p.state() == v1::PROBE_STATE_CANCELLED) flags.push_back("cancelled");
  if (p.state() == v1::PROBE_STATE_RUNNING) flags.push_back("running");
  if (p.timings().build_reused()) flags.push_back("build reused");
  AppendGpuFlags(p, &flags);
  return absl::StrJoin(flags, ", ");
}

std::string ProbesSection(const v1::JobStatus& job) {
  if (job.probes_size() == 0) return "";
  std::string rows;
  for (const v1::Probe& p : job.probes()) {
    std::vector<std::string> samples;
    for (double s : p.samples()) samples.push_back(Value(s, job.metric_unit()));
    std::string detail;
    if (!p.message().empty() || !p.log_tail().empty()) {
      detail = absl::StrCat("<details><summary>output</summary>",
                            p.message().empty() ? "" : "<p>" + Escape(p.message()) + "</p>",
                            p.log_tail().empty() ? "" : "<pre>" + Escape(p.log_tail()) + "</pre>",
                            "</details>");
    }
    absl::StrAppend(
        &rows, "<tr data-probe=\"", Escape(p.probe_id()), "\" class=\"v-row-", VerdictClass(p),
        "\"><td>", Escape(EnumLabel(p.kind())), "</td><td class=\"num\">", p.index(),
        "</td><td class=\"mono\">", Escape(ShortSha(p.sha())), "</td><td>", Escape(p.worker()),
        "</td><td class=\"num\">", p.round(), "</td><td>",
        p.samples_size() > 0 ? Escape(Value(p.median(), job.metric_unit())) : "",
        "<div class=\"muted\">", Escape(absl::StrJoin(samples, " ")), "</div></td><td>",
        Escape(ProbeVerdictWord(p)), "</td><td>", Escape(ProbeFlags(job, p)), detail,
        "</td><td class=\"num\">",
        Escape(Seconds(absl::ToDoubleSeconds(FromProto(p.timings().total())))), "</td></tr>");
  }
  return absl::StrCat(
      "<section id=\"probes\"><h2>Probes</h2><table class=\"probes\"><tr>"
      "<th>kind</th><th>#</th><th>commit</th><th>worker</th><th>round</th>"
      "<th>median (samples)</th><th>verdict</th><th>notes</th><th>time</th></tr>",
      rows, "</table></section>");
}

// A suite's metrics, a panel per culprit (report/suite_groups.h), then those without one.
std::string SuiteSection(const v1::JobStatus& job) {
  if (job.suite_size() == 0) return "";
  const SuiteGroups groups = GroupSuite(job);
  auto table = [](const std::vector<const v1::SuiteMetricResult*>& rows) {
    std::string out = "<table class=\"suite\"><tr><th>metric</th><th>change</th><th>job</th></tr>";
    for (const v1::SuiteMetricResult* row : rows) {
      absl::StrAppend(&out, "<tr><td class=\"mono\">", Escape(row->name()),
                      row->lead() ? " <span class=\"badge\">lead</span>" : "", "</td><td>",
                      Escape(SuiteMetricChange(*row)), "</td><td class=\"mono\">",
                      Escape(row->job_id()), "</td></tr>");
    }
    return absl::StrCat(out, "</table>");
  };
  std::string panels;
  for (const SuiteCulpritGroup& group : groups.culprits) {
    absl::StrAppend(&panels, "<div class=\"suite-culprit\"><h3>", group.metrics.size(),
                    " at <span class=\"mono\">", Escape(ShortSha(group.culprit.sha())), "</span> ",
                    Escape(group.culprit.subject()), "</h3>", table(group.metrics), "</div>");
  }
  if (!groups.unresolved.empty()) {
    std::string items;
    for (const v1::SuiteMetricResult* row : groups.unresolved) {
      absl::StrAppend(&items, "<li><span class=\"mono\">", Escape(row->name()), "</span> ",
                      Escape(SuiteMetricChange(*row)), ": ", Escape(row->reason()), "</li>");
    }
    absl::StrAppend(&panels, "<h3>No culprit</h3><ul>", items, "</ul>");
  }
  auto names = [](const std::vector<const v1::SuiteMetricResult*>& rows) {
    std::vector<std::string> out;
    for (const v1::SuiteMetricResult* row : rows) out.push_back(Escape(row->name()));
    return absl::StrJoin(out, ", ");
  };
  if (!groups.searching.empty()) {
    absl::StrAppend(&panels, "<p>Still searched: ", names(groups.searching), "</p>");
  }
  if (!groups.improved.empty()) {
    absl::StrAppend(&panels, "<p>Improved: ", names(groups.improved), "</p>");
  }
  if (!groups.unchanged.empty()) {
    absl::StrAppend(&panels, "<p class=\"muted\">Unchanged: ", names(groups.unchanged), "</p>");
  }
  return absl::StrCat("<section id=\"suite\"><h2>Suite: ", Escape(SuiteHeadline(groups)), "</h2>",
                      panels, "</section>");
}

std::string WorkersSection(const v1::JobStatus& job) {
  if (job.workers_size() == 0) return "";
  const std::map<std::string, WorkerGpuDuringJob> gpus = GpuDuringJob(job);
  std::string rows;
  for (const v1::JobWorker& w : job.workers()) {
    const auto gpu = gpus.find(w.worker());
    const std::string gpu_words = gpu == gpus.end() ? "—" : gpu->second.Words();
    const bool skewed = gpu != gpus.end() && gpu->second.Skewed();
    const v1::RunnerIdentity& id = w.identity();
    std::string state = w.quarantined() ? "<span class=\"badge bad\">quarantined</span>"
                        : w.drift()     ? "<span class=\"badge warn\">drift</span>"
                                        : "<span class=\"badge good\">ok</span>";
    absl::StrAppend(
        &rows, "<tr><td>", Escape(w.worker()), "</td><td>", Escape(id.host()),
        id.slot().empty() ? "" : " slot " + Escape(id.slot()), "</td><td>",
        Escape(id.hardware_class_label()), "<div class=\"muted mono\">",
        Escape(id.hardware_class()), "</div></td><td class=\"num\">",
        w.calibration_good() != 0 ? Escape(Value(w.calibration_good(), job.metric_unit())) : "—",
        "</td><td class=\"num\">", w.probes(), "</td><td", skewed ? " class=\"gpu-skewed\"" : "",
        ">", Escape(gpu_words), "</td><td>", state, " ", Escape(w.reason()), "</td></tr>");
  }
  return absl::StrCat(
      "<section id=\"workers\"><h2>Workers</h2><table class=\"workers\"><tr>"
      "<th>worker</th><th>host</th><th>hardware class</th><th>GOOD median</th>"
      "<th>probes</th><th>GPU during the job</th><th>state</th></tr>",
      rows, "</table></section>");
}

std::string ChangesSection(const v1::JobStatus& job) {
  std::string out;
  if (job.files_changed_size() > 0) {
    std::string rows;
    for (const v1::FileChange& f : job.files_changed()) {
      absl::StrAppend(&rows, "<tr><td class=\"mono\">", Escape(f.path()),
                      f.old_path().empty() ? "" : " (from " + Escape(f.old_path()) + ")",
                      "</td><td>", Escape(f.status()), "</td><td class=\"num\">",
                      f.binary() ? "binary" : absl::StrCat("+", f.additions(), " −", f.deletions()),
                      "</td></tr>");
    }
    absl::StrAppend(&out, "<section id=\"files\"><h2>Files changed</h2><table>", rows,
                    "</table></section>");
  }
  if (job.submodule_bumps_size() > 0) {
    std::string items;
    for (const v1::SubmoduleBump& bump : job.submodule_bumps()) {
      std::string commits;
      for (const std::string& line : SubmoduleBumpCommitLines(bump)) {
        absl::StrAppend(&commits, Escape(line), "\n");
      }
      absl::StrAppend(&items, "<li>", Escape(DescribeSubmoduleBump(bump)),
                      commits.empty() ? "" : absl::StrCat("<pre>", commits, "</pre>"), "</li>");
    }
    absl::StrAppend(&out, "<section id=\"bumps\"><h2>Dependency bumps</h2><ul>", items,
                    "</ul></section>");
  }
  if (job.root_cause_hints_size() > 0) {
    std::string items;
    for (const v1::RootCauseHint& h : job.root_cause_hints()) {
      absl::StrAppend(&items, "<li><b>", Escape(h.pattern()), "</b> in <span class=\"mono\">",
                      Escape(h.file()), "</span>: ", Escape(h.likely_cause()), "<pre>",
                      Escape(h.hunk_header()), "\n", Escape(h.line()), "</pre></li>");
    }
    absl::StrAppend(&out, "<section id=\"hints\"><h2>Root-cause hints</h2><ol>", items,
                    "</ol></section>");
  }
  std::string notes;
  for (const std::string& w : job.warnings()) {
    absl::StrAppend(&notes, "<li>", Escape(w), "</li>");
  }
  for (const v1::DriftEvent& d : job.drift_events()) {
    absl::StrAppend(&notes, "<li><b>", Escape(d.worker()), "</b> ", Escape(EnumLabel(d.kind())),
                    ": ", Escape(d.detail()), "</li>");
  }
  if (!job.error().empty())
    absl::StrAppend(&notes, "<li><b>Error:</b> ", Escape(job.error()), "</li>");
  if (!notes.empty()) {
    absl::StrAppend(&out, "<section id=\"warnings\"><h2>Warnings and drift</h2><ul>", notes,
                    "</ul></section>");
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> PageHead(const std::string& title, int refresh_seconds) {
  return Fill(
      R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">{{{refresh}}}<title>{{title}}</title><style>{{{css}}}</style></head><body>
)html",
      {{"refresh", refresh_seconds > 0 ? absl::StrCat("<meta http-equiv=\"refresh\" content=\"",
                                                      refresh_seconds, "\">")
                                       : ""},
       {"title", title},
       {"css", std::string(PageCss())}});
}

std::string PageEnd(absl::Time now) {
  return absl::StrCat("<footer>Made by kbisect at ",
                      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", now, absl::UTCTimeZone()),
                      ".</footer><script>", PageScript(), "</script></body></html>\n");
}

absl::StatusOr<std::string> RenderJobPage(const v1::JobStatus& job, const PageOptions& options) {
  const bool live = options.refresh_seconds > 0 && !JobFinished(job);
  ASSIGN_OR_RETURN(std::string head,
                   PageHead(absl::StrCat("kbisect ", job.job_id(), ": ", Headline(job)),
                            live ? options.refresh_seconds : 0));
  ASSIGN_OR_RETURN(std::string facts, Facts(job, options));
  ASSIGN_OR_RETURN(std::string culprit, CulpritSection(job));
  ASSIGN_OR_RETURN(std::string plot, PlotSection(job));
  ASSIGN_OR_RETURN(std::string timeline, TimelineSection(job, options.now));
  ASSIGN_OR_RETURN(
      std::string body,
      Fill(
          R"html({{{nav}}}<h1>kbisect job {{id}}</h1><p class="headline outcome-{{outcome}}">{{headline}}</p>
{{{facts}}}{{{culprit}}}{{{suite}}}{{{plot}}}{{{timeline}}}{{{probes}}}{{{workers}}}{{{changes}}}
<section id="reproduce"><h2>Reproduce</h2><pre class="reproduce">{{command}}</pre></section>
)html",
          {{"nav",
            options.jobs_link.empty()
                ? ""
                : absl::StrCat("<nav><a href=\"", Escape(options.jobs_link), "\">all jobs</a>",
                               live ? " · refreshes while it runs" : "", "</nav>")},
           {"id", job.job_id()},
           {"outcome", EnumLabel(job.status())},
           {"headline", Headline(job)},
           {"facts", facts},
           {"culprit", culprit},
           {"suite", SuiteSection(job)},
           {"plot", plot},
           {"timeline", timeline},
           {"probes", ProbesSection(job)},
           {"workers", WorkersSection(job)},
           {"changes", ChangesSection(job)},
           {"command", ReproduceCommand(job)}}));
  return absl::StrCat(head, body, PageEnd(options.now));
}

}  // namespace kbisect::html
