// Copyright 2026 The kbisect Authors.
#include "coordinator/built_commits.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace kbisect {
namespace {

void AppendField(const std::string& field, std::string* out) {
  absl::StrAppend(out, field.size(), ":", field, ";");
}

std::string Signature(const std::string& repository, const std::string& build_command,
                      const google::protobuf::Map<std::string, std::string>& env,
                      v1::BuildIsolation isolation) {
  if (build_command.empty()) return "";
  std::string out;
  AppendField(repository, &out);
  AppendField(build_command, &out);
  // Sorted, so that equal environments give equal signatures.
  const std::map<std::string, std::string> sorted(env.begin(), env.end());
  for (const auto& [name, value] : sorted) {
    AppendField(name, &out);
    AppendField(value, &out);
  }
  AppendField(absl::StrCat(static_cast<int>(isolation)), &out);
  return out;
}

}  // namespace

std::string BuildSignature(const v1::Task& task) {
  if (task.has_dependency()) return "";
  return Signature(task.repository(), task.build_command(), task.env(), task.build_isolation());
}

std::string BuildSignature(const v1::JobSpec& spec) {
  if (spec.has_dependency()) return "";
  return Signature(spec.repository(), spec.build_command(), spec.env(), spec.build_isolation());
}

std::vector<std::string> BuildPlaces(const std::string& build_pool, const std::string& build_store,
                                     const std::string& hardware_class) {
  std::vector<std::string> places;
  if (!build_pool.empty()) places.push_back(absl::StrCat("pool:", build_pool));
  if (!build_store.empty()) {
    places.push_back(absl::StrCat("store:", build_store, "|", hardware_class));
  }
  return places;
}

bool ResultLeftABuild(const v1::TaskResult& result) {
  if (result.timings().build_pool().empty() && result.timings().build_store().empty()) {
    return false;
  }
  switch (result.outcome()) {
    case v1::TASK_OUTCOME_SUCCEEDED:
    case v1::TASK_OUTCOME_BENCH_FAILED:
    case v1::TASK_OUTCOME_METRIC_MISSING:
    case v1::TASK_OUTCOME_SKIP_REQUESTED:
    case v1::TASK_OUTCOME_PASSED:
    case v1::TASK_OUTCOME_FAILED:
      return true;
    default:
      return false;
  }
}

void BuiltCommits::Record(const std::string& signature, const std::string& sha,
                          const std::vector<std::string>& places) {
  if (signature.empty() || sha.empty() || places.empty()) return;
  Build& build = builds_[signature];
  auto [it, inserted] = build.places_of.try_emplace(sha);
  it->second.insert(places.begin(), places.end());
  if (!inserted) {
    build.order.erase(std::find(build.order.begin(), build.order.end(), sha));
  }
  build.order.push_back(sha);
  while (build.order.size() > kBuiltCommitsPerBuild) {
    build.places_of.erase(build.order.front());
    build.order.pop_front();
  }
}

void BuiltCommits::RecordResult(const v1::Task& task, const v1::TaskResult& result,
                                const std::string& hardware_class) {
  if (!ResultLeftABuild(result)) return;
  const std::string signature = BuildSignature(task);
  const std::vector<std::string> places =
      BuildPlaces(result.timings().build_pool(), result.timings().build_store(), hardware_class);
  Record(signature, task.commit_sha(), places);
  Record(signature, task.paired_commit_sha(), places);
}

std::set<std::string> BuiltCommits::BuiltIn(const std::string& signature,
                                            const std::vector<std::string>& places) const {
  std::set<std::string> built;
  auto build = builds_.find(signature);
  if (build == builds_.end()) return built;
  for (const auto& entry : build->second.places_of) {
    const std::set<std::string>& kept_in = entry.second;
    if (std::any_of(places.begin(), places.end(),
                    [&](const std::string& place) { return kept_in.count(place) > 0; })) {
      built.insert(entry.first);
    }
  }
  return built;
}

size_t BuiltCommits::size(const std::string& signature) const {
  auto build = builds_.find(signature);
  return build == builds_.end() ? 0 : build->second.places_of.size();
}

}  // namespace kbisect
