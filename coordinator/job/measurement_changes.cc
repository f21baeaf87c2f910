// Copyright 2026 The kbisect Authors.
#include "coordinator/job/measurement_changes.h"

namespace kbisect {
namespace {

// The manifest of the latest finished, measured probe of commit `index`, or null.
const v1::MeasurementManifest* ManifestAt(const ProbeRows& probes, int index) {
  const v1::MeasurementManifest* found = nullptr;
  for (const v1::Probe& probe : probes) {
    if (probe.index() != index || probe.state() != v1::PROBE_STATE_FINISHED ||
        !probe.has_manifest() || probe.kind() == v1::PROBE_KIND_CONFIRM) {
      continue;
    }
    found = &probe.manifest();
  }
  return found;
}

}  // namespace

std::vector<ManifestChange> MethodChangesAt(const ProbeRows& probes, int last_good, int first_bad) {
  const v1::MeasurementManifest* before = ManifestAt(probes, last_good);
  const v1::MeasurementManifest* after = ManifestAt(probes, first_bad);
  std::vector<ManifestChange> changes;
  if (before == nullptr || after == nullptr) return changes;
  for (ManifestChange& change : DiffManifests(*before, *after)) {
    if (!change.IsHardware()) changes.push_back(std::move(change));
  }
  return changes;
}

}  // namespace kbisect
