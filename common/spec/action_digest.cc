// Copyright 2026 The kbisect Authors.
#include "common/spec/action_digest.h"

#include <map>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/git/object_hash.h"

namespace kbisect {
namespace {

// Appends `field` as a netstring: its decimal length, ':', its bytes, ','.
void AppendField(std::string_view field, std::string* out) {
  absl::StrAppend(out, field.size(), ":", absl::string_view(field.data(), field.size()), ",");
}

}  // namespace

std::string SpecDigest(const v1::JobSpec& spec) {
  std::string encoding;
  AppendField("kbisect.spec_digest.v1", &encoding);
  AppendField("build_command", &encoding);
  AppendField(spec.build_command(), &encoding);
  AppendField("bench_command", &encoding);
  AppendField(absl::StrCat(spec.bench_command_size()), &encoding);
  for (const std::string& arg : spec.bench_command()) AppendField(arg, &encoding);
  // A protobuf map iterates in no defined order.
  const std::map<std::string, std::string> env(spec.env().begin(), spec.env().end());
  AppendField("env", &encoding);
  AppendField(absl::StrCat(env.size()), &encoding);
  for (const auto& [key, value] : env) {
    AppendField(key, &encoding);
    AppendField(value, &encoding);
  }
  const v1::MetricKind kind = spec.metric().kind() == v1::METRIC_KIND_UNSPECIFIED
                                  ? v1::METRIC_KIND_AUTO
                                  : spec.metric().kind();
  AppendField("metric_kind", &encoding);
  AppendField(absl::StrCat(static_cast<int>(kind)), &encoding);
  AppendField("metric_pattern", &encoding);
  AppendField(spec.metric().pattern(), &encoding);
  // Only with a suite, so that every other digest stays what it was.
  if (!spec.metric().suite().empty()) {
    AppendField("metric_suite", &encoding);
    AppendField(spec.metric().suite(), &encoding);
    AppendField(spec.metric().lead(), &encoding);
    AppendField(absl::StrCat(spec.metric().members_size()), &encoding);
    for (const std::string& member : spec.metric().members()) AppendField(member, &encoding);
  }
  AppendField("discard_throttled", &encoding);
  AppendField(spec.discard_throttled() ? "1" : "0", &encoding);
  // Only when chosen: digests of the default (automatic) isolation stay those of earlier
  // versions, whose results remain reusable.
  if (spec.build_isolation() != v1::BUILD_ISOLATION_UNSPECIFIED) {
    AppendField("build_isolation", &encoding);
    AppendField(absl::StrCat(static_cast<int>(spec.build_isolation())), &encoding);
  }
  // Only on a dependency follow-up, so that every other digest stays what it was.
  // A nested descent appends its outer ones too, innermost first.
  const v1::DependencyDescent* descent = spec.has_dependency() ? &spec.dependency() : nullptr;
  for (; descent != nullptr; descent = descent->has_outer() ? &descent->outer() : nullptr) {
    AppendField("dependency", &encoding);
    AppendField(absl::StrCat(static_cast<int>(descent->kind())), &encoding);
    AppendField(descent->superproject(), &encoding);
    AppendField(descent->superproject_sha(), &encoding);
    AppendField(descent->path(), &encoding);
  }
  return GitBlobId(encoding);
}

std::string ActionDigest(const std::string& tree_sha, const std::string& spec_digest,
                         const std::string& hardware_class) {
  std::string encoding;
  AppendField("kbisect.action_digest.v1", &encoding);
  AppendField(tree_sha, &encoding);
  AppendField(spec_digest, &encoding);
  AppendField(hardware_class, &encoding);
  return GitBlobId(encoding);
}

}  // namespace kbisect
