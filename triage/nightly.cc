// Copyright 2026 The kbisect Authors.
#include "triage/nightly.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/metric/metric.h"
#include "common/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"

namespace kbisect {
namespace triage {
namespace {

using nlohmann::json;

absl::Status LineError(int line, const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line, ": \"", field, "\": ", what));
}

absl::StatusOr<std::string> StringField(const json& j, const char* name, int line, bool required) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    if (required) return LineError(line, name, "missing");
    return std::string();
  }
  if (!it->is_string()) return LineError(line, name, "expected a string");
  return it->get<std::string>();
}

std::string Sanitize(const std::string& text) {
  std::string out;
  for (char c : text) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.push_back((std::isalnum(static_cast<unsigned char>(l)) || l == '.' || l == '_' || l == '-')
                      ? l
                      : '-');
  }
  return out.empty() ? "default" : out;
}

json NightlyToJson(const NightlyRecord& r) {
  json j = {
      {"kind", "nightly"},      {"date", r.date},           {"sha", r.sha},
      {"full_sha", r.full_sha}, {"benchmark", r.benchmark}, {"hardware_class", r.hardware_class},
      {"metric", r.metric},     {"unit", r.unit},           {"value", r.value}};
  if (r.run_id != 0) j["run_id"] = r.run_id;
  if (r.manifest.has_value()) {
    std::string text;
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    if (google::protobuf::util::MessageToJsonString(*r.manifest, &text, options).ok()) {
      j["manifest"] = json::parse(text);
    }
  }
  return j;
}

json BisectToJson(const BisectRecord& b) {
  return {{"kind", "bisect"},
          {"benchmark", b.benchmark},
          {"hardware_class", b.hardware_class},
          {"last_good", b.last_good},
          {"last_good_date", b.last_good_date},
          {"first_bad", b.first_bad},
          {"first_bad_date", b.first_bad_date},
          {"request_id", b.request_id},
          {"job_id", b.job_id},
          {"date", b.date}};
}

const NightlyRecord* FindRecord(const std::vector<const NightlyRecord*>& series,
                                const NightlyRef& ref) {
  for (const NightlyRecord* r : series) {
    if (r->date == ref.date && (r->full_sha == ref.full_sha || r->sha == ref.sha)) return r;
  }
  return nullptr;
}

std::vector<const NightlyRecord*> SeriesOf(const History& h, const std::string& benchmark,
                                           const std::string& hardware_class) {
  std::vector<const NightlyRecord*> out;
  for (const NightlyRecord& r : h.nightlies) {
    if (r.benchmark == benchmark && r.hardware_class == hardware_class) out.push_back(&r);
  }
  return out;
}

std::string Commit(const NightlyRef& r) { return r.full_sha.empty() ? r.sha : r.full_sha; }

// A level change at a night where the manifest changed: the split is known, so no search (and no
// permutation test over every split) is needed, only a move beyond the noise.
struct ManifestStep {
  size_t index = 0;  // Into the series: the first night with the new manifest.
  std::vector<ManifestChange> changes;
  double before = 0;
  double after = 0;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Returns the latest night whose manifest differs from the night before and across which the
// level (medians of up to 10 nights each side, within the manifest's segments, at least 2 each)
// moved by at least `min_change` (relative) and 3 sigma.
std::optional<ManifestStep> LatestManifestStep(const std::vector<const NightlyRecord*>& series,
                                               double min_change, double sigma) {
  std::vector<size_t> boundaries;
  std::vector<std::vector<ManifestChange>> changes;
  for (size_t i = 1; i < series.size(); ++i) {
    if (!series[i - 1]->manifest.has_value() || !series[i]->manifest.has_value()) continue;
    std::vector<ManifestChange> diff =
        DiffManifests(*series[i - 1]->manifest, *series[i]->manifest);
    if (diff.empty()) continue;
    boundaries.push_back(i);
    changes.push_back(std::move(diff));
  }
  for (size_t b = boundaries.size(); b-- > 0;) {
    const size_t at = boundaries[b];
    const size_t from = std::max(b > 0 ? boundaries[b - 1] : 0, at >= 10 ? at - 10 : 0);
    const size_t to =
        std::min(b + 1 < boundaries.size() ? boundaries[b + 1] : series.size(), at + 10);
    if (at - from < 2 || to - at < 2) continue;
    std::vector<double> before, after;
    for (size_t i = from; i < at; ++i) before.push_back(series[i]->value);
    for (size_t i = at; i < to; ++i) after.push_back(series[i]->value);
    ManifestStep step{at, changes[b], Median(before), Median(after)};
    const double delta = std::fabs(step.after - step.before);
    if (step.before != 0 && delta / std::fabs(step.before) >= min_change && delta >= 3 * sigma) {
      return step;
    }
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<History> ParseHistory(const std::string& text) {
  History h;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_no, ": not a JSON object (the history is JSON lines)"));
    }
    ASSIGN_OR_RETURN(std::string kind, StringField(j, "kind", line_no, false));
    if (kind == "bisect") {
      BisectRecord b;
      ASSIGN_OR_RETURN(b.benchmark, StringField(j, "benchmark", line_no, true));
      ASSIGN_OR_RETURN(b.hardware_class, StringField(j, "hardware_class", line_no, false));
      ASSIGN_OR_RETURN(b.last_good, StringField(j, "last_good", line_no, true));
      ASSIGN_OR_RETURN(b.last_good_date, StringField(j, "last_good_date", line_no, false));
      ASSIGN_OR_RETURN(b.first_bad, StringField(j, "first_bad", line_no, true));
      ASSIGN_OR_RETURN(b.first_bad_date, StringField(j, "first_bad_date", line_no, false));
      ASSIGN_OR_RETURN(b.request_id, StringField(j, "request_id", line_no, false));
      ASSIGN_OR_RETURN(b.job_id, StringField(j, "job_id", line_no, false));
      ASSIGN_OR_RETURN(b.date, StringField(j, "date", line_no, false));
      h.bisects.push_back(std::move(b));
      continue;
    }
    if (!kind.empty() && kind != "nightly") {
      return LineError(line_no, "kind",
                       absl::StrCat("expected \"nightly\" or \"bisect\", got \"", kind, "\""));
    }
    NightlyRecord r;
    ASSIGN_OR_RETURN(r.date, StringField(j, "date", line_no, true));
    ASSIGN_OR_RETURN(r.sha, StringField(j, "sha", line_no, false));
    ASSIGN_OR_RETURN(r.full_sha, StringField(j, "full_sha", line_no, false));
    if (r.sha.empty()) r.sha = r.full_sha.substr(0, 12);
    if (r.sha.empty()) return LineError(line_no, "sha", "missing (and no full_sha)");
    ASSIGN_OR_RETURN(r.benchmark, StringField(j, "benchmark", line_no, true));
    ASSIGN_OR_RETURN(r.hardware_class, StringField(j, "hardware_class", line_no, false));
    ASSIGN_OR_RETURN(r.metric, StringField(j, "metric", line_no, false));
    ASSIGN_OR_RETURN(r.unit, StringField(j, "unit", line_no, false));
    if (r.metric.empty()) r.metric = "value";
    auto value = j.find("value");
    if (value == j.end() || !value->is_number())
      return LineError(line_no, "value", "expected a number");
    r.value = value->get<double>();
    if (auto id = j.find("run_id"); id != j.end() && id->is_number_integer()) {
      r.run_id = id->get<int64_t>();
    }
    if (auto m = j.find("manifest"); m != j.end() && m->is_object()) {
      v1::MeasurementManifest manifest;
      google::protobuf::util::JsonParseOptions options;
      options.ignore_unknown_fields = true;
      if (!google::protobuf::util::JsonStringToMessage(m->dump(), &manifest, options).ok()) {
        return LineError(line_no, "manifest", "not a measurement manifest");
      }
      r.manifest = std::move(manifest);
    }
    h.nightlies.push_back(std::move(r));
  }
  return h;
}

std::string FormatHistory(const History& history) {
  std::string out;
  for (const NightlyRecord& r : history.nightlies)
    absl::StrAppend(&out, NightlyToJson(r).dump(), "\n");
  for (const BisectRecord& b : history.bisects) absl::StrAppend(&out, BisectToJson(b).dump(), "\n");
  return out;
}

absl::StatusOr<History> ReadHistoryFile(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return History{};
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read the history ", path));
  std::ostringstream text;
  text << in.rdbuf();
  absl::StatusOr<History> h = ParseHistory(text.str());
  if (!h.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", h.status().message()));
  return h;
}

absl::Status WriteHistoryFile(const std::string& path, const History& history) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << FormatHistory(history);
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return absl::PermissionDeniedError(absl::StrCat("cannot write the history ", path));
    }
  }
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  if (error) {
    std::remove(tmp.c_str());
    return absl::PermissionDeniedError(
        absl::StrCat("cannot replace the history ", path, ": ", error.message()));
  }
  return absl::OkStatus();
}

bool AddNightly(History* history, NightlyRecord record) {
  for (NightlyRecord& r : history->nightlies) {
    if (r.benchmark == record.benchmark && r.hardware_class == record.hardware_class &&
        r.date == record.date) {
      r = std::move(record);
      return true;
    }
  }
  auto at = std::upper_bound(
      history->nightlies.begin(), history->nightlies.end(), record,
      [](const NightlyRecord& a, const NightlyRecord& b) { return a.date < b.date; });
  history->nightlies.insert(at, std::move(record));
  return false;
}

Dataset HistoryToDataset(const History& history, const std::string& benchmark,
                         const std::string& hardware_class) {
  Dataset data;
  data.format = InputFormat::kJsonLines;
  data.source = "nightly history";
  Series s;
  s.kernel = std::string(benchmark);
  s.platform_short = hardware_class.empty() ? "default" : std::string(hardware_class);
  s.platform = s.platform_short;
  for (const NightlyRecord* r : SeriesOf(history, benchmark, hardware_class)) {
    Nightly n;
    n.date = r->date;
    n.sha = r->sha;
    n.full_sha = r->full_sha;
    n.run_id = r->run_id;
    n.metrics[r->metric] = r->value;
    if (r->manifest.has_value()) {
      const v1::MeasurementManifest& m = *r->manifest;
      if (!m.harness_digest().empty()) n.attributes["harness"] = m.harness_digest();
      if (m.bench_command_size() > 0)
        n.attributes["bench_args"] = absl::StrJoin(m.bench_command(), " ");
      if (!m.gpu_model().empty())
        n.attributes["gpu"] = absl::StrCat(m.gpu_model(), " ", m.gpu_uuid());
      if (!m.driver_version().empty()) n.attributes["driver_version"] = m.driver_version();
      if (!m.cuda_version().empty()) n.attributes["cuda_version"] = m.cuda_version();
      if (m.max_sm_clock_mhz() > 0 || m.sm_clock_mhz() > 0) {
        // Identity attribute "runner_identity": the clock state a run had (throttled or not).
        n.attributes["runner_identity"] =
            absl::StrCat(m.max_sm_clock_mhz(), "MHz/", m.power_limit_watts(), "W",
                         m.throttled() ? "/throttled" : "");
      }
    }
    s.nightlies.push_back(std::move(n));
  }
  data.series.push_back(std::move(s));
  return data;
}

std::string NightlyRequestId(const std::string& benchmark, const std::string& hardware_class,
                             const std::string& last_good, const std::string& first_bad) {
  return absl::StrCat("nightly-", Sanitize(benchmark), "-", Sanitize(hardware_class), "-",
                      Sanitize(last_good.substr(0, 12)), "-", Sanitize(first_bad.substr(0, 12)));
}

const char* NightlyActionName(NightlyAction action) {
  switch (action) {
    case NightlyAction::kNothing:
      return "nothing";
    case NightlyAction::kSubmitBisect:
      return "submit_bisect";
    case NightlyAction::kAlreadySubmitted:
      return "already_submitted";
    case NightlyAction::kMethodChange:
      return "method_change";
    case NightlyAction::kHardware:
      return "hardware";
    case NightlyAction::kNoise:
      return "noise";
    case NightlyAction::kDrift:
      return "drift";
    case NightlyAction::kDependencyChange:
      return "dependency_change";
  }
  return "unknown";
}

int NightlyExitCode(NightlyAction action) {
  switch (action) {
    case NightlyAction::kNothing:
      return 0;
    case NightlyAction::kSubmitBisect:
    case NightlyAction::kAlreadySubmitted:
      return 3;
    case NightlyAction::kMethodChange:
      return 4;
    case NightlyAction::kHardware:
      return 5;
    case NightlyAction::kNoise:
      return 6;
    case NightlyAction::kDrift:
      return 7;
    case NightlyAction::kDependencyChange:
      return 8;
  }
  return 1;
}

namespace {

// Places the triage's step at the latest night whose manifest changed (LatestManifestStep), with
// the levels either side of it, unless the detector found a step more than a night later.
void PlaceManifestStep(const std::vector<const NightlyRecord*>& series, double min_change,
                       KernelTriage* k) {
  const std::optional<ManifestStep> manifest_step =
      LatestManifestStep(series, min_change, k->analysis.noise_sigma);
  if (!manifest_step.has_value()) return;
  const NightlyRecord* at = series[manifest_step->index];
  const NightlyRecord* prev = series[manifest_step->index - 1];
  const bool detector_later =
      (k->evidence.shape == Shape::kStep || k->evidence.shape == Shape::kDrift) &&
      k->first_bad.has_value() && k->first_bad->date > at->date &&
      !(series.size() > manifest_step->index + 1 &&
        k->first_bad->date <= series[manifest_step->index + 1]->date);
  if (detector_later) return;
  auto ref = [&](const NightlyRecord* r) {
    NightlyRef out;
    for (const NightlyRef& n : k->nightlies) {
      if (n.date == r->date) out = n;
    }
    out.date = r->date;
    out.sha = r->sha;
    out.full_sha = r->full_sha;
    out.run_id = r->run_id;
    return out;
  };
  k->last_good = ref(prev);
  k->first_bad = ref(at);
  k->evidence.shape = Shape::kStep;
  k->evidence.reverted = false;
  k->evidence.primary.present = true;
  k->evidence.primary.before = manifest_step->before;
  k->evidence.primary.after = manifest_step->after;
  k->evidence.primary.relative_change =
      (manifest_step->after - manifest_step->before) / std::fabs(manifest_step->before);
  k->true_value.before = manifest_step->before;
  k->true_value.after = manifest_step->after;
  k->diagnosis.reasons.clear();
}

// The records of the split's last good and first bad nights (null where the triage has none).
struct StepRecords {
  const NightlyRecord* good = nullptr;
  const NightlyRecord* bad = nullptr;
};

// Returns the records of the triage's split in `series` (none when the series did not split).
StepRecords FindStepRecords(const std::vector<const NightlyRecord*>& series, const KernelTriage& k,
                            bool split) {
  StepRecords step;
  if (split && k.last_good.has_value() && k.first_bad.has_value()) {
    step.good = FindRecord(series, *k.last_good);
    step.bad = FindRecord(series, *k.first_bad);
  }
  return step;
}

// Ranks the split's commit window in `repo` (every path in the slice, `harness_globs` as the
// method paths) into d->window, folding it into the triage (d->window_error when it cannot);
// returns whether the window changed code (true when unknown).
bool RankNightlyWindow(const GitRepo& repo, const std::vector<std::string>& harness_globs,
                       NightlyDecision* d) {
  KernelTriage& k = d->triage;
  SliceMap map;
  map.platforms.push_back({"*", SliceRule{{}, {"**"}}});
  if (!harness_globs.empty()) map.method_paths = harness_globs;
  absl::StatusOr<CommitWindow> window =
      RankWindow(repo, Commit(*k.last_good), Commit(*k.first_bad), k.platform_short, map);
  if (!window.ok()) {
    d->window_error = std::string(window.status().message());
    return true;
  }
  ApplyWindowEvidence(*window, &k.evidence);
  Reclassify(&k);
  const bool code_in_window = std::any_of(window->commits.begin(), window->commits.end(),
                                          [](const RankedCommit& c) { return !c.harness_only; });
  d->window = *std::move(window);
  return code_in_window;
}

// What the manifest says changed across the split, by kind (ManifestChange::Describe lines).
struct ManifestKinds {
  std::vector<std::string> hardware;
  std::vector<std::string> method;
  std::vector<std::string> packages;
  // Only a tracked package moved, the project's code did not: the dependency's step.
  bool dependency = false;
};

// Sorts `changes` into hardware, package and method lines; `split` says whether the series split.
ManifestKinds SortManifestChanges(const std::vector<ManifestChange>& changes, bool split) {
  ManifestKinds kinds;
  for (const ManifestChange& c : changes) {
    (c.IsHardware()                             ? kinds.hardware
     : c.kind == ManifestChange::Kind::kPackage ? kinds.packages
                                                : kinds.method)
        .push_back(c.Describe());
  }
  kinds.dependency =
      split && kinds.hardware.empty() && kinds.method.empty() && !kinds.packages.empty();
  return kinds;
}

// Folds the manifest into the diagnosis of a split: another machine makes it a hardware issue, a
// changed measurement a method change (surer when `code_in_window` is false), a package alone is
// noted; the manifest's reasons go first.
void FoldManifest(const ManifestKinds& kinds, bool split, bool code_in_window, KernelTriage* k) {
  // Fold the manifest in: it says what changed in the measurement, which the series can only
  // infer.
  std::vector<std::string> reasons;
  if (kinds.dependency) {
    reasons.push_back(absl::StrCat(
        "A tracked package moved across the step: ", absl::StrJoin(kinds.packages, "; "), "."));
  }
  if (split && !kinds.hardware.empty()) {
    k->diagnosis.cause = v1::CAUSE_HARDWARE_ISSUE;
    k->diagnosis.confidence = 0.9;
    reasons.push_back(
        absl::StrCat("The measurement manifest shows another machine across the step: ",
                     absl::StrJoin(kinds.hardware, "; "), "."));
  } else if (split && !kinds.method.empty()) {
    k->diagnosis.cause = v1::CAUSE_BENCHMARK_METHOD_CHANGE;
    k->diagnosis.confidence = code_in_window ? 0.7 : 0.95;
    reasons.push_back(absl::StrCat(
        "The measurement changed across the step: ", absl::StrJoin(kinds.method, "; "), "."));
    reasons.push_back(
        code_in_window
            ? "The window also changed code: to tell the two apart, bisect or re-measure both "
              "ends with the harness pinned to one side."
            : "The kernel code did not change in the window: the step is the measurement's, "
              "not the kernel's.");
    k->true_value.honest = "before";
    k->true_value.note =
        "The kernel is unchanged, so its performance is too: the value before the step is the "
        "honest one under the old method; if the new method is intended, the value after it is "
        "the new baseline, not a regression.";
  }
  if (!reasons.empty()) {
    k->diagnosis.reasons.insert(k->diagnosis.reasons.begin(), reasons.begin(), reasons.end());
  }
}

// Sets a real regression step's request id, and the action: kAlreadySubmitted when `history`
// has a bisect of the series with that id or an overlapping window (the last such), else
// kSubmitBisect.
void DecideSubmission(const History& history, const std::string& benchmark,
                      const std::string& hardware_class, NightlyDecision* d) {
  const KernelTriage& k = d->triage;
  d->request_id =
      NightlyRequestId(benchmark, hardware_class, Commit(*k.last_good), Commit(*k.first_bad));
  for (const BisectRecord& b : history.bisects) {
    if (b.benchmark != benchmark || b.hardware_class != hardware_class) continue;
    const bool same = b.request_id == d->request_id;
    const bool overlap = !b.last_good_date.empty() && !b.first_bad_date.empty() &&
                         b.last_good_date < k.first_bad->date &&
                         k.last_good->date < b.first_bad_date;
    if (same || overlap) d->existing = b;
  }
  d->action =
      d->existing.has_value() ? NightlyAction::kAlreadySubmitted : NightlyAction::kSubmitBisect;
  d->summary = d->existing.has_value()
                   ? absl::StrCat("Real regression, already bisected: job ", d->existing->job_id,
                                  " (request ", d->existing->request_id, ").")
                   : absl::StrCat("Real regression: bisecting ", k.last_good->sha, "..",
                                  k.first_bad->sha, " (request ", d->request_id, ").");
}

// Sets the action and summary from the folded triage: nothing (no move, an improvement, a spike
// at the end), a dependency change, a method change, a hardware issue, noise, drift, or a real
// regression step to submit (DecideSubmission).
void ChooseNightlyAction(const History& history, const std::string& benchmark,
                         const std::string& hardware_class, const ManifestKinds& kinds,
                         bool code_in_window, NightlyDecision* d) {
  const KernelTriage& k = d->triage;
  const v1::Cause cause = k.diagnosis.cause;
  if (k.evidence.shape == Shape::kNone) {
    d->action = NightlyAction::kNothing;
    d->summary = "Nothing to do: no move beyond the noise.";
  } else if (kinds.dependency && !code_in_window && k.IsRegression() &&
             cause == v1::CAUSE_REAL_REGRESSION) {
    d->action = NightlyAction::kDependencyChange;
    d->summary = absl::StrCat(
        "Dependency change, not bisected here: only ", absl::StrJoin(kinds.packages, "; "),
        " moved across the step. Bisect that package's nightlies (`kbisect run --artifact`).");
  } else if (cause == v1::CAUSE_BENCHMARK_METHOD_CHANGE) {
    d->action = NightlyAction::kMethodChange;
    d->summary = absl::StrCat(
        "Method change, not bisected: ",
        kinds.method.empty() ? k.diagnosis.reasons.front() : absl::StrJoin(kinds.method, "; "),
        ".");
  } else if (cause == v1::CAUSE_HARDWARE_ISSUE) {
    d->action = NightlyAction::kHardware;
    d->summary = absl::StrCat(
        "Hardware issue, not bisected: ",
        kinds.hardware.empty() ? k.diagnosis.reasons.front() : absl::StrJoin(kinds.hardware, "; "),
        ".");
  } else if (cause == v1::CAUSE_NOISE && k.evidence.shape == Shape::kSpike && k.focus_spike >= 0 &&
             k.analysis.spikes[k.focus_spike].index + 2 >= static_cast<int>(k.nightlies.size())) {
    d->action = NightlyAction::kNothing;
    d->summary = absl::StrFormat(
        "Nothing to do yet: the latest nightlies are %+.1f%% off their neighbours, too few to "
        "tell a step from a spike; the next nights decide.",
        100 * k.analysis.spikes[k.focus_spike].relative_deviation);
  } else if (cause == v1::CAUSE_NOISE) {
    d->action = NightlyAction::kNoise;
    d->summary = "Noise, not bisected: the move did not persist.";
  } else if (!k.IsRegression()) {
    d->action = NightlyAction::kNothing;
    d->summary = "Nothing to do: the move is an improvement.";
  } else if (k.evidence.shape != Shape::kStep) {
    d->action = NightlyAction::kDrift;
    d->summary = "Gradual regression (drift), not bisected: no single commit to blame.";
  } else {
    DecideSubmission(history, benchmark, hardware_class, d);
  }
}

}  // namespace

absl::StatusOr<NightlyDecision> DecideNightly(const History& history, const std::string& benchmark,
                                              const std::string& hardware_class,
                                              TriageRequest request, const GitRepo* repo,
                                              const std::vector<std::string>& harness_globs) {
  const std::vector<const NightlyRecord*> series = SeriesOf(history, benchmark, hardware_class);
  if (series.empty()) {
    return absl::NotFoundError(absl::StrCat("the history has no nightly of benchmark '", benchmark,
                                            "' on hardware class '", hardware_class, "'"));
  }
  const Dataset data = HistoryToDataset(history, benchmark, hardware_class);
  request.platform = data.series.front().platform_short;
  request.kernel = std::string(benchmark);
  if (request.roles.primary.empty()) request.roles.primary = series.back()->metric;
  if (request.roles.primary_direction == Direction::kUnknown) {
    request.roles.primary_direction = InferDirection(series.back()->metric, series.back()->unit);
  }
  NightlyDecision d;
  if (series.size() < 6) {
    d.triage.kernel = std::string(benchmark);
    d.triage.diagnosis.cause = v1::CAUSE_NOISE;
    d.summary = absl::StrCat("Nothing to do: ", series.size(),
                             " nightlies recorded; a step needs 3 nightlies on each side.");
    return d;
  }
  ASSIGN_OR_RETURN(TriageResult result, Triage(data, request));
  d.triage = std::move(result.kernels.front());
  KernelTriage& k = d.triage;
  PlaceManifestStep(series, request.change_point.min_relative_change, &k);
  const bool split = k.evidence.shape == Shape::kStep || k.evidence.shape == Shape::kDrift ||
                     k.evidence.shape == Shape::kExcursion;

  // The manifest across the split.
  const StepRecords step = FindStepRecords(series, k, split);
  if (step.good != nullptr && step.bad != nullptr && step.good->manifest.has_value() &&
      step.bad->manifest.has_value()) {
    d.manifest_changes = DiffManifests(*step.good->manifest, *step.bad->manifest);
  }
  // The commit window.
  bool code_in_window = true;  // Unknown counts as "code may have changed".
  if (split && repo != nullptr && k.last_good.has_value()) {
    code_in_window = RankNightlyWindow(*repo, harness_globs, &d);
  }
  if (step.good != nullptr && step.bad != nullptr && step.good->full_sha == step.bad->full_sha &&
      !step.good->full_sha.empty()) {
    code_in_window = false;
  }
  const ManifestKinds kinds = SortManifestChanges(d.manifest_changes, split);
  FoldManifest(kinds, split, code_in_window, &k);
  ChooseNightlyAction(history, benchmark, hardware_class, kinds, code_in_window, &d);
  return d;
}

const char* StepOwnerName(StepOwner owner) {
  switch (owner) {
    case StepOwner::kProject:
      return "project";
    case StepOwner::kPackages:
      return "packages";
    case StepOwner::kBoth:
      return "both";
  }
  return "both";
}

StepAttribution AttributeStep(double last_good, double first_bad, double measured) {
  StepAttribution a;
  a.share = (measured - last_good) / (first_bad - last_good);
  a.owner = a.share < 0.25   ? StepOwner::kProject
            : a.share > 0.75 ? StepOwner::kPackages
                             : StepOwner::kBoth;
  return a;
}

void ApplyStepAttribution(const StepAttribution& attribution, double measured,
                          const std::vector<std::string>& packages, NightlyDecision* d) {
  if (d->action != NightlyAction::kSubmitBisect) return;
  const KernelTriage& k = d->triage;
  const std::string measured_text = absl::StrFormat(
      "the last good commit %s measured with the first bad night's packages gives %.4g "
      "(%.0f%% of the step from %.4g to %.4g)",
      k.last_good.has_value() ? k.last_good->sha : "", measured, 100 * attribution.share,
      k.evidence.primary.before, k.evidence.primary.after);
  switch (attribution.owner) {
    case StepOwner::kPackages:
      d->action = NightlyAction::kDependencyChange;
      d->request_id.clear();
      d->existing.reset();
      d->summary = absl::StrCat("Dependency change, not bisected here: ", measured_text,
                                ", so the step came with ", absl::StrJoin(packages, "; "),
                                ". Bisect that package's nightlies (`kbisect run --artifact`).");
      break;
    case StepOwner::kProject:
      absl::StrAppend(&d->summary, " The packages moved too, but ", measured_text,
                      ": the step is the project's.");
      break;
    case StepOwner::kBoth:
      absl::StrAppend(&d->summary, " ", measured_text,
                      ": the packages account for part of the step, the project's commits for "
                      "the rest.");
      break;
  }
}

std::string FormatNightlyDecision(const NightlyDecision& d) {
  const KernelTriage& k = d.triage;
  std::string out = absl::StrCat("Decision: ", NightlyActionName(d.action), " — ", d.summary, "\n");
  absl::StrAppend(&out, "Cause: ", CauseName(k.diagnosis.cause),
                  absl::StrFormat(" (confidence %.2f)", k.diagnosis.confidence), "\n");
  if (k.last_good.has_value() && k.first_bad.has_value()) {
    absl::StrAppend(&out, "Window: ", k.last_good->sha, " (", k.last_good->date, ") .. ",
                    k.first_bad->sha, " (", k.first_bad->date, ")");
    if (k.evidence.primary.present) {
      absl::StrAppend(&out, absl::StrFormat(", %s %.4g -> %.4g (%+.1f%%)", k.primary_metric,
                                            k.evidence.primary.before, k.evidence.primary.after,
                                            100 * k.evidence.primary.relative_change));
    }
    absl::StrAppend(&out, "\n");
  }
  if (d.window.has_value()) {
    absl::StrAppend(&out, "Commits in the window: ", d.window->commits.size(), "\n");
  } else if (!d.window_error.empty()) {
    absl::StrAppend(&out, "Commit window: ", d.window_error, "\n");
  }
  if (!d.manifest_changes.empty()) {
    absl::StrAppend(&out, "Manifest changes across the step:\n");
    for (const ManifestChange& c : d.manifest_changes) {
      absl::StrAppend(&out, "  ",
                      c.IsHardware()                             ? "[hardware] "
                      : c.kind == ManifestChange::Kind::kPackage ? "[package]  "
                                                                 : "[method]   ",
                      c.Describe(), "\n");
    }
  } else if (k.last_good.has_value()) {
    absl::StrAppend(&out, "Manifest changes across the step: none\n");
  }
  if (!k.diagnosis.reasons.empty()) {
    absl::StrAppend(&out, "Why:\n");
    for (const std::string& r : k.diagnosis.reasons) absl::StrAppend(&out, "  - ", r, "\n");
  }
  if (!k.true_value.honest.empty() && k.last_good.has_value()) {
    absl::StrAppend(&out, "Honest value: ", k.true_value.honest, ". ", k.true_value.note, "\n");
  }
  if (!d.request_id.empty()) absl::StrAppend(&out, "Request id: ", d.request_id, "\n");
  return out;
}

}  // namespace triage
}  // namespace kbisect
