// Copyright 2026 The kbisect Authors.
#include "tests/testing/labelled_histories.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/civil_time.h"
#include "triage/triage.h"

namespace kbisect {
namespace testing {
namespace {

using triage::History;
using triage::NightlyRecord;
using Edit = std::function<void(int night, v1::MeasurementManifest*)>;

constexpr int kNights = 30;

// Normal deviates from mt19937 (standardised) by Box-Muller, so the set is the same everywhere.
class Rng {
 public:
  explicit Rng(uint32_t seed) : engine_(seed) {}
  double Uniform() { return (engine_() + 0.5) / 4294967296.0; }
  double Normal() {
    const double u = Uniform(), v = Uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
  }

 private:
  std::mt19937 engine_;
};

std::string Date(int night) { return absl::FormatCivilTime(absl::CivilDay(2026, 9, 1) + night); }

std::string Sha(int family, int night) { return absl::StrFormat("%08x%032x", family, night + 1); }

v1::MeasurementManifest BaseManifest() {
  v1::MeasurementManifest m;
  m.add_harness_globs("benchmarks/**");
  m.add_harness_globs(".github/workflows/**");
  auto* run = m.add_harness_files();
  run->set_path("benchmarks/run.py");
  run->set_blob_id("1111111111111111111111111111111111111111");
  auto* workflow = m.add_harness_files();
  workflow->set_path(".github/workflows/benchmark.yml");
  workflow->set_blob_id("2222222222222222222222222222222222222222");
  m.add_bench_command("python");
  m.add_bench_command("benchmarks/run.py");
  (*m.mutable_env())["HELION_AUTOTUNE_EFFORT"] = "full";
  m.set_gpu_model("NVIDIA H100 80GB HBM3");
  m.set_gpu_uuid("GPU-0a1b2c3d");
  m.set_driver_version("550.54.15");
  m.set_cuda_version("12.4");
  m.set_max_sm_clock_mhz(1980);
  m.set_power_limit_watts(700);
  m.set_sm_clock_mhz(1980);
  return m;
}

void Redigest(v1::MeasurementManifest* m) {
  std::string d;
  for (const v1::HarnessFile& f : m->harness_files()) absl::StrAppend(&d, f.path(), f.blob_id());
  m->set_harness_digest(absl::StrCat("digest-", std::hash<std::string>()(d)));
}

// A nightly history of latency (ms, lower is better) `values`, one per night, with the manifest
// edited per night by `edit`, nights in `missing` left out and no manifest before `manifest_from`.
History Nightlies(int family, const std::vector<double>& values, const Edit& edit,
                  const std::set<int>& missing = {}, int manifest_from = 0) {
  History h;
  for (int night = 0; night < static_cast<int>(values.size()); ++night) {
    if (missing.count(night) > 0) continue;
    NightlyRecord r;
    r.date = Date(night);
    r.full_sha = Sha(family, night);
    r.sha = r.full_sha.substr(0, 12);
    r.benchmark = "bench";
    r.hardware_class = "gpu";
    r.metric = "latency";
    r.unit = "ms";
    r.value = values[night];
    if (night >= manifest_from) {
      v1::MeasurementManifest m = BaseManifest();
      if (edit) edit(night, &m);
      Redigest(&m);
      r.manifest = m;
    }
    h.nightlies.push_back(std::move(r));
  }
  return h;
}

// Latencies around 10 ms with relative scatter `cv`, multiplied by `shape(night)`.
std::vector<double> Series(Rng* rng, double cv, const std::function<double(int)>& shape) {
  std::vector<double> v;
  for (int night = 0; night < kNights; ++night) {
    v.push_back(10.0 * shape(night) * (1 + cv * rng->Normal()));
  }
  return v;
}

// A Helion-shaped dataset: helion speedup (higher is better), two baselines and the latency.
triage::Dataset Dashboard(int family, Rng* rng, const std::function<double(int)>& helion,
                          const std::function<double(int)>& baselines,
                          const std::function<double(int)>& latency) {
  triage::Dataset data;
  data.format = triage::InputFormat::kHelionDashboard;
  data.source = "synthetic dashboard";
  triage::Series s;
  s.kernel = "k";
  s.platform = "NVIDIA B200 (CuTe)";
  s.platform_short = "b200_cute";
  for (int night = 0; night < kNights; ++night) {
    triage::Nightly n;
    n.date = Date(night);
    n.full_sha = Sha(family, night);
    n.sha = n.full_sha.substr(0, 7);
    n.run_id = 1000 + night;
    auto noisy = [&](double x) { return x * (1 + 0.006 * rng->Normal()); };
    n.metrics["helion_speedup_geomean"] = noisy(1.6 * helion(night));
    n.metrics["triton_speedup_geomean"] = noisy(1.1 * baselines(night));
    n.metrics["torch_compile_speedup_geomean"] = noisy(1.3 * baselines(night));
    n.metrics["helion_latency_avg_ms"] = noisy(0.8 * latency(night));
    s.nightlies.push_back(std::move(n));
  }
  data.series.push_back(std::move(s));
  return data;
}

std::function<double(int)> Step(int at, double factor) {
  return [at, factor](int night) { return night >= at ? factor : 1.0; };
}
std::function<double(int)> Flat() {
  return [](int) { return 1.0; };
}

}  // namespace

History PlainNightlies(const std::vector<double>& values) {
  return Nightlies(0, values, nullptr, {}, static_cast<int>(values.size()));
}

std::vector<LabelledHistory> MakeLabelledSet() {
  std::vector<LabelledHistory> set;
  int family_id = 0;
  auto add_nightly = [&](const std::string& family, int i, v1::Cause label, History h) {
    LabelledHistory l;
    l.name = absl::StrCat(family, "/", i);
    l.family = family;
    l.label = label;
    l.history = std::move(h);
    set.push_back(std::move(l));
  };
  auto add_dashboard = [&](const std::string& family, int i, v1::Cause label, triage::Dataset d) {
    LabelledHistory l;
    l.name = absl::StrCat(family, "/", i);
    l.family = family;
    l.label = label;
    l.dashboard = std::move(d);
    set.push_back(std::move(l));
  };
  const v1::Cause real = v1::CAUSE_REAL_REGRESSION, method = v1::CAUSE_BENCHMARK_METHOD_CHANGE,
                  hardware = v1::CAUSE_HARDWARE_ISSUE, noise = v1::CAUSE_NOISE;

  // Real regressions: a step of 5..27% at nights 12..19 under 0.4..0.8% scatter.
  for (int i = 0; i < 10; ++i) {
    Rng rng(100 + i);
    const int at = 12 + i % 8;
    add_nightly(
        "step_regression", i, real,
        Nightlies(++family_id, Series(&rng, 0.004 + 0.001 * (i % 5), Step(at, 1.05 + 0.025 * i)),
                  nullptr));
  }
  // ... with four nights missing (runner outages), none at the step.
  for (int i = 0; i < 4; ++i) {
    Rng rng(200 + i);
    const int at = 14 + i;
    add_nightly("regression_missing_nights", i, real,
                Nightlies(++family_id, Series(&rng, 0.005, Step(at, 1.10 + 0.04 * i)), nullptr,
                          {3, 8, at + 4, 25}));
  }
  // Gradual drift: +15% spread over 16 nights (no single commit, still a real regression).
  for (int i = 0; i < 3; ++i) {
    Rng rng(300 + i);
    add_nightly("drift", i, real,
                Nightlies(++family_id,
                          Series(&rng, 0.003,
                                 [i](int n) {
                                   const double t = std::clamp((n - 8 - i) / 16.0, 0.0, 1.0);
                                   return 1 + 0.15 * t;
                                 }),
                          nullptr));
  }
  // Schema drift: the manifest appears at night 12 (older lines lack it), then a real step.
  for (int i = 0; i < 2; ++i) {
    Rng rng(400 + i);
    add_nightly("schema_drift_regression", i, real,
                Nightlies(++family_id, Series(&rng, 0.005, Step(18 + i, 1.12)), nullptr, {}, 12));
  }
  // Helion-shaped real regressions: speedup down, latency up, baselines flat.
  for (int i = 0; i < 5; ++i) {
    Rng rng(500 + i);
    const int at = 13 + 2 * i;
    const double f = 0.92 - 0.03 * i;
    add_dashboard("helion_regression", i, real,
                  Dashboard(++family_id, &rng, Step(at, f), Flat(), Step(at, 1 / f)));
  }

  // Method changes: the harness file changed at the step (either direction).
  for (int i = 0; i < 8; ++i) {
    Rng rng(600 + i);
    const int at = 11 + i;
    const double f = i % 2 == 0 ? 1.06 + 0.03 * i : 0.94 - 0.02 * i;
    add_nightly("harness_change", i, method,
                Nightlies(++family_id, Series(&rng, 0.005, Step(at, f)),
                          [at](int night, v1::MeasurementManifest* m) {
                            if (night >= at) {
                              m->mutable_harness_files(0)->set_blob_id(
                                  "3333333333333333333333333333333333333333");
                            }
                          }));
  }
  // ... an autotune flag changed in the environment.
  for (int i = 0; i < 4; ++i) {
    Rng rng(700 + i);
    const int at = 13 + i;
    add_nightly("flag_change", i, method,
                Nightlies(++family_id, Series(&rng, 0.005, Step(at, 1.08 + 0.04 * i)),
                          [at](int night, v1::MeasurementManifest* m) {
                            if (night >= at)
                              (*m->mutable_env())["HELION_AUTOTUNE_EFFORT"] = "quick";
                          }));
  }
  // Helion-shaped: the speedup steps, the independent timer does not.
  for (int i = 0; i < 4; ++i) {
    Rng rng(800 + i);
    const int at = 14 + i;
    add_dashboard("helion_method", i, method,
                  Dashboard(++family_id, &rng, Step(at, 0.88 - 0.02 * i), Flat(), Flat()));
  }

  // Hardware: another card (runner swap).
  for (int i = 0; i < 5; ++i) {
    Rng rng(900 + i);
    const int at = 12 + i;
    add_nightly("runner_swap", i, hardware,
                Nightlies(++family_id, Series(&rng, 0.005, Step(at, 1.06 + 0.03 * i)),
                          [at, i](int night, v1::MeasurementManifest* m) {
                            if (night < at) return;
                            m->set_gpu_uuid("GPU-99ff88ee");
                            if (i % 2 == 1) m->set_gpu_model("NVIDIA H100 PCIe");
                          }));
  }
  // ... a driver upgrade.
  for (int i = 0; i < 2; ++i) {
    Rng rng(1000 + i);
    const int at = 15 + i;
    add_nightly("driver_change", i, hardware,
                Nightlies(++family_id, Series(&rng, 0.005, Step(at, 1.09)),
                          [at](int night, v1::MeasurementManifest* m) {
                            if (night >= at) m->set_driver_version("560.28.03");
                          }));
  }
  // ... thermal throttling: clocks down; two recover after six nights.
  for (int i = 0; i < 4; ++i) {
    Rng rng(1100 + i);
    const int at = 13 + i;
    const int until = i < 2 ? kNights : at + 6;
    add_nightly("thermal_throttling", i, hardware,
                Nightlies(++family_id,
                          Series(&rng, 0.005,
                                 [at, until](int n) { return n >= at && n < until ? 1.2 : 1.0; }),
                          [at, until](int night, v1::MeasurementManifest* m) {
                            if (night >= at && night < until) {
                              m->set_throttled(true);
                              m->set_sm_clock_mhz(1410);
                            }
                          }));
  }
  // Helion-shaped: the baselines moved with Helion (the machine got slower).
  for (int i = 0; i < 4; ++i) {
    Rng rng(1200 + i);
    const int at = 12 + 2 * i;
    add_dashboard("helion_hardware", i, hardware,
                  Dashboard(++family_id, &rng, Step(at, 0.9), Step(at, 0.9), Step(at, 1.11)));
  }

  // Noise: one- or two-night spikes.
  for (int i = 0; i < 5; ++i) {
    Rng rng(1300 + i);
    const int at = 10 + 3 * i;
    const int width = 1 + i % 2;
    add_nightly(
        "spike", i, noise,
        Nightlies(++family_id,
                  Series(&rng, 0.005,
                         [at, width](int n) { return n >= at && n < at + width ? 1.25 : 1.0; }),
                  nullptr));
  }
  // ... bimodal scatter: each night lands in one of two modes 3% apart.
  for (int i = 0; i < 4; ++i) {
    Rng rng(1400 + i);
    Rng modes(1450 + i);
    std::vector<bool> high;
    for (int n = 0; n < kNights; ++n) high.push_back(modes.Uniform() < 0.5);
    add_nightly(
        "bimodal", i, noise,
        Nightlies(++family_id, Series(&rng, 0.003, [high](int n) { return high[n] ? 1.03 : 1.0; }),
                  nullptr));
  }
  // ... plain scatter of 0.5..1.5%.
  for (int i = 0; i < 3; ++i) {
    Rng rng(1500 + i);
    add_nightly("scatter", i, noise,
                Nightlies(++family_id, Series(&rng, 0.005 * (i + 1), Flat()), nullptr));
  }
  // ... schema drift alone: older lines without a manifest, nothing moved.
  for (int i = 0; i < 2; ++i) {
    Rng rng(1600 + i);
    add_nightly("schema_drift", i, noise,
                Nightlies(++family_id, Series(&rng, 0.005, Flat()), nullptr, {}, 10 + 5 * i));
  }
  // Helion-shaped spikes.
  for (int i = 0; i < 3; ++i) {
    Rng rng(1700 + i);
    const int at = 12 + 4 * i;
    auto spike = [at](int n) { return n == at ? 0.8 : 1.0; };
    add_dashboard("helion_spike", i, noise, Dashboard(++family_id, &rng, spike, Flat(), Flat()));
  }
  return set;
}

std::vector<LabelledHistory> MakeHardSet() {
  std::vector<LabelledHistory> set;
  int family_id = 500;
  auto add = [&](const std::string& family, int i, v1::Cause label, History h) {
    LabelledHistory l;
    l.name = absl::StrCat(family, "/", i);
    l.family = family;
    l.label = label;
    l.history = std::move(h);
    set.push_back(std::move(l));
  };
  for (int i = 0; i < 4; ++i) {
    Rng rng(2000 + i);
    add("small_step", i, v1::CAUSE_REAL_REGRESSION,
        Nightlies(++family_id, Series(&rng, 0.01, Step(14 + i, 1.02 + 0.005 * i)), nullptr));
  }
  for (int i = 0; i < 4; ++i) {
    Rng rng(2100 + i);
    // No manifest anywhere: the harness change is invisible to the nightly.
    add("harness_change_without_manifest", i, v1::CAUSE_BENCHMARK_METHOD_CHANGE,
        Nightlies(++family_id, Series(&rng, 0.005, Step(13 + i, 1.12)), nullptr, {}, kNights));
  }
  for (int i = 0; i < 3; ++i) {
    Rng rng(2200 + i);
    Rng modes(2250 + i);
    std::vector<bool> high;
    for (int n = 0; n < kNights; ++n) high.push_back(modes.Uniform() < 0.5);
    add("wide_bimodal", i, v1::CAUSE_NOISE,
        Nightlies(++family_id, Series(&rng, 0.003, [high](int n) { return high[n] ? 1.08 : 1.0; }),
                  nullptr));
  }
  for (int i = 0; i < 3; ++i) {
    Rng rng(2300 + i);
    const int at = 12 + 3 * i;
    add("short_throttling", i, v1::CAUSE_HARDWARE_ISSUE,
        Nightlies(++family_id,
                  Series(&rng, 0.005, [at](int n) { return n >= at && n < at + 2 ? 1.2 : 1.0; }),
                  [at](int night, v1::MeasurementManifest* m) {
                    if (night >= at && night < at + 2) {
                      m->set_throttled(true);
                      m->set_sm_clock_mhz(1410);
                    }
                  }));
  }
  for (int i = 0; i < 2; ++i) {
    Rng rng(2400 + i);
    const int at = 15 + i;
    // The harness and the kernel changed the same night: the manifest says "method", the truth
    // is both (the pinned-harness measurement tells them apart).
    add("harness_and_kernel_same_night", i, v1::CAUSE_REAL_REGRESSION,
        Nightlies(++family_id, Series(&rng, 0.005, Step(at, 1.25)),
                  [at](int night, v1::MeasurementManifest* m) {
                    if (night >= at) {
                      m->mutable_harness_files(0)->set_blob_id(
                          "4444444444444444444444444444444444444444");
                    }
                  }));
  }
  return set;
}

v1::Cause ClassifyLabelled(const LabelledHistory& h) {
  if (h.history.has_value()) {
    absl::StatusOr<triage::NightlyDecision> d =
        triage::DecideNightly(*h.history, "bench", "gpu", triage::TriageRequest{}, nullptr, {});
    return d.ok() ? d->triage.diagnosis.cause : v1::CAUSE_UNSPECIFIED;
  }
  triage::TriageRequest request;
  request.platform = "b200_cute";
  request.kernel = "k";
  absl::StatusOr<triage::TriageResult> r = triage::Triage(*h.dashboard, request);
  return r.ok() ? r->kernels.front().diagnosis.cause : v1::CAUSE_UNSPECIFIED;
}

SetFigures Evaluate(const std::vector<LabelledHistory>& set) {
  SetFigures f;
  for (v1::Cause c : {v1::CAUSE_REAL_REGRESSION, v1::CAUSE_BENCHMARK_METHOD_CHANGE,
                      v1::CAUSE_HARDWARE_ISSUE, v1::CAUSE_NOISE}) {
    f.by_class[c];
  }
  for (const LabelledHistory& h : set) {
    const v1::Cause got = ClassifyLabelled(h);
    ++f.by_class[h.label].support;
    ++f.by_class[got].predicted;
    if (got == h.label) {
      ++f.by_class[got].correct;
    } else {
      f.mistakes.push_back(absl::StrCat(h.name, ": labelled ", triage::CauseName(h.label),
                                        ", classified ", triage::CauseName(got)));
    }
  }
  return f;
}

std::string FormatFigures(const SetFigures& figures) {
  std::string out = "| class | histories | precision | recall |\n|---|---|---|---|\n";
  for (const auto& [cause, c] : figures.by_class) {
    if (c.support == 0 && c.predicted == 0) continue;
    absl::StrAppend(&out, absl::StrFormat("| %s | %d | %.2f | %.2f |\n", triage::CauseName(cause),
                                          c.support, c.precision(), c.recall()));
  }
  return out;
}

}  // namespace testing
}  // namespace kbisect
