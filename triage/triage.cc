// Copyright 2026 The kbisect Authors.
//
// Triage (the entry point of triage.h): the names of the enums, the default metric roles, and the
// procedure that selects the series, prepares them, gathers their evidence (GatherEvidence,
// evidence.h) and classifies it (Reclassify, classification.cc), headline first.
#include "triage/triage.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "triage/cross_checks.h"
#include "triage/evidence.h"
#include "triage/prepared_series.h"

namespace kbisect {
namespace triage {

const char* TriName(Tri value) {
  switch (value) {
    case Tri::kUnknown:
      return "unknown";
    case Tri::kNo:
      return "no";
    case Tri::kYes:
      return "yes";
  }
  return "unknown";
}

const char* ShapeName(Shape shape) {
  switch (shape) {
    case Shape::kNone:
      return "none";
    case Shape::kStep:
      return "step";
    case Shape::kDrift:
      return "drift";
    case Shape::kSpike:
      return "spike";
    case Shape::kExcursion:
      return "excursion";
  }
  return "none";
}

const char* CauseName(v1::Cause cause) {
  switch (cause) {
    case v1::CAUSE_REAL_REGRESSION:
      return "real_regression";
    case v1::CAUSE_BENCHMARK_METHOD_CHANGE:
      return "benchmark_method_change";
    case v1::CAUSE_HARDWARE_ISSUE:
      return "hardware_issue";
    case v1::CAUSE_NOISE:
      return "noise";
    default:
      return "unspecified";
  }
}

bool KernelTriage::IsRegression() const {
  return evidence.shape != Shape::kNone && evidence.primary.worse;
}

MetricRoles DefaultRoles(const Dataset& data) {
  MetricRoles roles;
  std::set<std::string> names;
  std::vector<std::string> ordered;
  for (const Series& s : data.series) {
    for (const Nightly& n : s.nightlies) {
      for (const auto& [name, value] : n.metrics) {
        if (names.insert(name).second) ordered.push_back(name);
      }
    }
  }
  if (data.format == InputFormat::kHelionPretuned ||
      (!names.count("helion_speedup_geomean") && names.count("geomean"))) {
    roles.primary = "geomean";
    for (const std::string& name : ordered) {
      if (absl::StartsWith(name, "baselines.") && absl::EndsWith(name, ".geomean")) {
        roles.baselines.push_back(name);
      }
    }
    return roles;
  }
  if (names.count("helion_speedup_geomean") || data.format == InputFormat::kHelionDashboard) {
    roles.primary = "helion_speedup_geomean";
    for (const char* b : {"triton_speedup_geomean", "torch_compile_speedup_geomean"}) {
      if (names.count(b)) roles.baselines.push_back(b);
    }
    if (names.count("helion_latency_avg_ms")) roles.timer = "helion_latency_avg_ms";
    return roles;
  }
  if (!ordered.empty()) roles.primary = ordered.front();
  return roles;
}

namespace {

// Checks that --date, when given, has the shape YYYY-MM-DD. InvalidArgument says what was given.
absl::Status CheckDateShape(const std::string& date) {
  if (date.empty()) return absl::OkStatus();
  bool ok = date.size() == 10 && date[4] == '-' && date[7] == '-';
  for (int i = 0; ok && i < 10; ++i) {
    if (i != 4 && i != 7 && !absl::ascii_isdigit(date[i])) ok = false;
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("--date: expected YYYY-MM-DD, got '", date, "'"));
  }
  return absl::OkStatus();
}

// Fills the roles the request left empty from the data's defaults (DefaultRoles): the primary
// metric, and the baselines and the timer when the primary is the default one.
void FillDefaultRoles(const Dataset& data, MetricRoles* roles) {
  const MetricRoles defaults = DefaultRoles(data);
  if (roles->primary.empty()) roles->primary = defaults.primary;
  if (roles->baselines.empty() && roles->primary == defaults.primary) {
    roles->baselines = defaults.baselines;
  }
  if (roles->timer.empty() && roles->primary == defaults.primary) roles->timer = defaults.timer;
}

// Picks the series to triage: those of the request's platform (set to the data's only platform
// when the request names none), of its kernel when it names one. InvalidArgument when the
// platform is ambiguous or absent, or the kernel has no series there, listing what there is.
absl::StatusOr<std::vector<const Series*>> SelectSeries(const Dataset& data,
                                                        TriageRequest* request) {
  std::set<std::string> platforms;
  for (const Series& s : data.series) platforms.insert(s.platform_short);
  if (request->platform.empty()) {
    if (platforms.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat("--platform is required: the data has ",
                                                     platforms.size(), " platforms (",
                                                     absl::StrJoin(platforms, ", "), ")"));
    }
    request->platform = *platforms.begin();
  }
  std::vector<const Series*> selected;
  std::set<std::string> kernels;
  for (const Series& s : data.series) {
    if (s.platform_short != request->platform && s.platform != request->platform) continue;
    kernels.insert(s.kernel);
    if (!request->kernel.empty() && s.kernel != request->kernel) continue;
    selected.push_back(&s);
  }
  if (kernels.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--platform: '", request->platform, "' is not in ", data.source,
                     " (platforms: ", absl::StrJoin(platforms, ", "), ")"));
  }
  if (selected.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--kernel: '", request->kernel, "' has no series on platform ",
                     request->platform, " (kernels: ", absl::StrJoin(kernels, ", "), ")"));
  }
  return selected;
}

// Says that series `s` has no values of the primary metric: an error naming the metrics it has
// when the request asked for its kernel, else a note in `notes` that it was skipped.
absl::Status SkipSeriesWithoutPrimary(const Series& s, const TriageRequest& request,
                                      std::vector<std::string>* notes) {
  const std::string& primary = request.roles.primary;
  if (!request.kernel.empty()) {
    std::set<std::string> available;
    for (const Nightly& n : s.nightlies) {
      for (const auto& [name, value] : n.metrics) available.insert(name);
    }
    return absl::InvalidArgumentError(
        absl::StrCat("--metric: '", primary, "' is not in the history of ", s.Label(),
                     " (metrics: ", absl::StrJoin(available, ", "), ")"));
  }
  notes->push_back(absl::StrCat(s.Label(), " has no ", primary, " values and was skipped."));
  return absl::OkStatus();
}

// The baselines' and the timer's values over the nightlies of `p`, each with its role and
// direction; a metric none of the nightlies has is left out.
std::vector<CompanionSeries> CompanionsOf(const internal::Prepared& p, const MetricRoles& roles) {
  std::vector<std::pair<std::string, std::string>> others;
  for (const std::string& b : roles.baselines) others.emplace_back(b, "baseline");
  if (!roles.timer.empty()) others.emplace_back(roles.timer, "timer");
  std::vector<CompanionSeries> companions;
  for (const auto& [metric, role] : others) {
    CompanionSeries c{metric,
                      role,
                      internal::DirectionOf(
                          metric, role == "timer" ? roles.timer_direction : Direction::kUnknown),
                      {}};
    bool any = false;
    for (const Nightly* n : p.nightlies) {
      c.values.push_back(n->Metric(metric));
      any = any || c.values.back().has_value();
    }
    if (any) companions.push_back(std::move(c));
  }
  return companions;
}

// Notes what limits the triage of the window `p`: too few nightlies to tell a step from noise,
// or a --date outside the history.
void AddWindowNotes(const internal::Prepared& p, const TriageRequest& request, KernelTriage* k) {
  if (static_cast<int>(p.values.size()) < 2 * request.change_point.min_segment) {
    k->notes.push_back(absl::StrCat("Only ", p.values.size(),
                                    " nightlies: too few to tell a step from noise (need ",
                                    2 * request.change_point.min_segment, ")."));
  }
  if (!request.date.empty() && !p.nightlies.empty() &&
      (request.date < p.nightlies.front()->date || request.date > p.nightlies.back()->date)) {
    k->notes.push_back(absl::StrCat("--date ", request.date, " is outside the history (",
                                    p.nightlies.front()->date, " .. ", p.nightlies.back()->date,
                                    ")."));
  }
}

// Triages series `s` over its windowed nightlies `p`: its values and companions, the detector's
// analysis, the notes, the evidence and the classification. Errors are the detector's.
absl::StatusOr<KernelTriage> TriageKernel(const Series& s, const internal::Prepared& p,
                                          const Dataset& data, const TriageRequest& request) {
  const MetricRoles& roles = request.roles;
  KernelTriage k;
  k.kernel = s.kernel;
  k.platform = s.platform;
  k.platform_short = s.platform_short;
  k.primary_metric = roles.primary;
  k.direction = internal::DirectionOf(roles.primary, roles.primary_direction);
  for (size_t i = 0; i < p.nightlies.size(); ++i) {
    k.nightlies.push_back(internal::Ref(*p.nightlies[i], static_cast<int>(i)));
  }
  k.values = p.values;
  k.companions = CompanionsOf(p, roles);
  ASSIGN_OR_RETURN(k.analysis, AnalyzeSeries(p.values, request.change_point));
  AddWindowNotes(p, request, &k);
  internal::GatherEvidence(&k, data, request, p);
  Reclassify(&k);
  return k;
}

// Orders `kernels` headline first: steps before drifts before excursions and spikes before
// nothing; within a shape, the larger relative change first (a stable sort).
void SortHeadlineFirst(std::vector<KernelTriage>* kernels) {
  auto rank = [](const KernelTriage& k) {
    switch (k.evidence.shape) {
      case Shape::kStep:
        return 0;
      case Shape::kDrift:
        return 1;
      case Shape::kExcursion:
        return 2;
      case Shape::kSpike:
        return 3;
      case Shape::kNone:
        return 4;
    }
    return 4;
  };
  std::stable_sort(kernels->begin(), kernels->end(),
                   [&](const KernelTriage& a, const KernelTriage& b) {
                     if (rank(a) != rank(b)) return rank(a) < rank(b);
                     return std::fabs(a.evidence.primary.relative_change) >
                            std::fabs(b.evidence.primary.relative_change);
                   });
}

}  // namespace

absl::StatusOr<TriageResult> Triage(const Dataset& data, const TriageRequest& request_in) {
  TriageRequest request = request_in;
  RETURN_IF_ERROR(CheckDateShape(request.date));
  FillDefaultRoles(data, &request.roles);
  ASSIGN_OR_RETURN(const std::vector<const Series*> selected, SelectSeries(data, &request));
  const MetricRoles& roles = request.roles;
  TriageResult result;
  result.source = data.source;
  result.format = data.format;
  result.platform = request.platform;
  result.date = request.date;
  result.roles = roles;
  result.notes = data.notes;
  for (const Series* s : selected) {
    internal::Prepared p = internal::Prepare(*s, roles.primary, request.include_non_nightly);
    if (p.values.empty()) {
      RETURN_IF_ERROR(SkipSeriesWithoutPrimary(*s, request, &result.notes));
      continue;
    }
    internal::Window(&p, request.date, request.max_nightlies);
    ASSIGN_OR_RETURN(KernelTriage k, TriageKernel(*s, p, data, request));
    result.kernels.push_back(std::move(k));
  }
  if (result.kernels.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metric: no series of platform ", request.platform, " has ", roles.primary));
  }
  SortHeadlineFirst(&result.kernels);
  return result;
}

}  // namespace triage
}  // namespace kbisect
