// Copyright 2026 The kbisect Authors.
#include "report/html/page_style.h"

#include "absl/strings/string_view.h"

namespace kbisect::html {

absl::string_view PageCss() {
  return R"css(
:root{--bg:#fff;--fg:#1b1f24;--muted:#5b6570;--line:#d5dae0;--panel:#f5f7f9;
--good:#1a7f37;--bad:#cf222e;--skip:#8c959f;--amb:#bf8700;--pending:#6e7781;--confirm:#8250df;
--good-band:rgba(26,127,55,.12);--bad-band:rgba(207,34,46,.12);--hl:#0969da;
--seg-checkout:#8c959f;--seg-build:#bf8700;--seg-bench:#0969da;color-scheme:light dark}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;
--line:#30363d;--panel:#161b22;--good:#3fb950;--bad:#f85149;--skip:#8b949e;--amb:#d29922;
--pending:#8b949e;--confirm:#a371f7;--good-band:rgba(63,185,80,.16);--bad-band:rgba(248,81,73,.16);
--hl:#58a6ff;--seg-checkout:#6e7681;--seg-build:#d29922;--seg-bench:#388bfd}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1000px;padding:16px 20px 40px;background:var(--bg);color:var(--fg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
h1{font-size:20px;margin:8px 0 2px}h2{font-size:16px;margin:22px 0 8px;border-bottom:1px solid var(--line);padding-bottom:3px}
code,pre,.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12.5px}
pre{background:var(--panel);border:1px solid var(--line);padding:8px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.headline{font-size:16px;font-weight:600;margin:4px 0 10px}
.outcome-culprit_found,.outcome-candidates_found{color:var(--bad)}
.outcome-no_regression{color:var(--good)}.outcome-inconclusive,.outcome-cancelled{color:var(--amb)}
.outcome-error{color:var(--bad)}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
table{border-collapse:collapse;width:100%;margin:4px 0}
th,td{border-bottom:1px solid var(--line);padding:3px 6px;text-align:left;vertical-align:top}
th{color:var(--muted);font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.hl td{background:var(--panel);outline:1px solid var(--hl)}
svg{width:100%;height:auto;display:block}
svg text{fill:var(--fg);font-size:11px}svg .tick{fill:var(--muted)}svg .axis-title{fill:var(--muted)}
.grid{stroke:var(--line);stroke-width:.5}
.band-good{fill:var(--good-band)}.band-bad{fill:var(--bad-band)}
.band-good-median{stroke:var(--good);stroke-dasharray:2 3;stroke-width:1}
.band-bad-median{stroke:var(--bad);stroke-dasharray:2 3;stroke-width:1}
.threshold{stroke:var(--amb);stroke-width:1.2;stroke-dasharray:6 4}
.col-bg{fill:transparent}.col:hover .col-bg{fill:var(--panel)}
.col.culprit .col-bg{fill:var(--bad-band);stroke:var(--bad);stroke-width:1}
.col.last-good .col-bg{fill:var(--good-band);stroke:var(--good);stroke-width:1}
.col-label.culprit{fill:var(--bad);font-weight:700}.col-label.last-good{fill:var(--good);font-weight:700}
.sample{stroke-width:1.2}
.v-good,.v-baseline-good{fill:var(--good);stroke:var(--good)}
.v-bad,.v-baseline-bad{fill:var(--bad);stroke:var(--bad)}
.v-skip{fill:var(--skip);stroke:var(--skip)}.v-ambiguous{fill:var(--amb);stroke:var(--amb)}
.v-pending{fill:var(--pending);stroke:var(--pending)}.v-confirm{fill:var(--confirm);stroke:var(--confirm)}
.sample.provisional,.legend .provisional{fill:none}
.sample.quarantined{opacity:.35;stroke-dasharray:1 1.5}
.gpu-skewed{color:var(--amb)}
.sample.gpu-capped,.legend .gpu-capped{stroke:var(--amb);stroke-width:2.6}
.sample.gpu-throttled,.legend .gpu-throttled{stroke:var(--bad);stroke-width:2.6;stroke-dasharray:2 1.5}
.sample.gpu-shared,.legend .gpu-shared{stroke:var(--skip);stroke-width:2.6;stroke-dasharray:1 1}
.sample.hl{stroke:var(--hl);stroke-width:3}
line.median{stroke-width:2;fill:none}
.task .task-bar{fill:var(--panel);stroke:var(--muted);stroke-width:.6}
.task.v-good .task-bar{stroke:var(--good)}.task.v-bad .task-bar{stroke:var(--bad)}
.task.cancelled .task-bar{fill:url(#hatch);stroke:var(--skip);stroke-dasharray:3 2}
.task.hl .task-bar{stroke:var(--hl);stroke-width:2}
.hatch{stroke:var(--skip);stroke-width:2}
.seg-checkout{fill:var(--seg-checkout)}.seg-build{fill:var(--seg-build)}.seg-bench{fill:var(--seg-bench)}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;color:var(--muted);font-size:12px;margin:4px 0}
.legend svg{display:inline;width:14px;height:14px;vertical-align:-2px}
.swatch{display:inline-block;width:12px;height:10px;vertical-align:-1px}
.badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:12px;border:1px solid var(--line)}
.badge.bad{color:var(--bad);border-color:var(--bad)}.badge.good{color:var(--good);border-color:var(--good)}
.badge.warn{color:var(--amb);border-color:var(--amb)}
.muted{color:var(--muted)}details summary{cursor:pointer;color:var(--muted)}
.outcome-real_regression{color:var(--bad)}.outcome-noise{color:var(--good)}
.outcome-hardware_issue,.outcome-benchmark_method_change{color:var(--amb)}
.trace{fill:none;stroke:var(--muted);stroke-width:1}.trace.role-primary{stroke:var(--hl)}
.point{fill:var(--muted);stroke:var(--muted);stroke-width:1}
.point.role-primary{fill:var(--hl);stroke:var(--hl)}.point.after.regression{fill:var(--bad);stroke:var(--bad)}
.point.last-good{fill:var(--good);stroke:var(--good);stroke-width:3}
.point.first-bad{fill:var(--bad);stroke:var(--bad);stroke-width:3}
.point.spike{fill:none;stroke:var(--amb);stroke-width:2.5}
.point.hl{stroke:var(--hl);stroke-width:4}
.change-point line{stroke:var(--muted);stroke-width:1;stroke-dasharray:4 3}
.change-point.focus line{stroke:var(--bad);stroke-width:1.6}
.change-point.focus text{fill:var(--bad);font-weight:700}
.level{stroke:var(--amb);stroke-width:1.5;stroke-dasharray:6 3}
figure.series{margin:8px 0 4px}figure.series figcaption{margin-bottom:2px}
tr.moved td{font-weight:600}
footer{margin-top:30px;color:var(--muted);font-size:12px}
@media print{:root{--bg:#fff;--fg:#000;--panel:#f3f3f3;--line:#bbb}
body{max-width:none;padding:0}section,figure{break-inside:avoid}details>*{display:block}
.col:hover .col-bg{fill:transparent}a{color:inherit}}
)css";
}

absl::string_view PageScript() {
  return R"js(
(function () {
  'use strict';
  function each(selector, fn) { Array.prototype.forEach.call(document.querySelectorAll(selector), fn); }
  // Elements that show the same thing share a key: a probe (its samples, bar and table row) or a
  // nightly (its point in every series and its table row). Hovering one highlights them all.
  var keys = ['data-probe', 'data-nightly'];
  var groups = keys.map(function (attr) {
    var byKey = {};
    each('[' + attr + ']', function (el) {
      var id = el.getAttribute(attr);
      (byKey[id] = byKey[id] || []).push(el);
    });
    return byKey;
  });
  function mark(el, on) {
    keys.forEach(function (attr, i) {
      var target = el && el.closest ? el.closest('[' + attr + ']') : null;
      if (!target) return;
      (groups[i][target.getAttribute(attr)] || []).forEach(function (e) {
        e.classList.toggle('hl', on);
      });
    });
  }
  document.addEventListener('mouseover', function (e) { mark(e.target, true); });
  document.addEventListener('mouseout', function (e) { mark(e.target, false); });
  // Tells a test (and a curious reader) that the page's script ran: the number of sample marks
  // (job pages) and of nightly points (triage pages).
  document.documentElement.setAttribute('data-samples', String(document.querySelectorAll('.sample').length));
  document.documentElement.setAttribute('data-points', String(document.querySelectorAll('.point').length));
})();
)js";
}

}  // namespace kbisect::html
