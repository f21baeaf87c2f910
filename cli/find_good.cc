// Copyright 2026 The kbisect Authors.
#include "cli/find_good.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/clock/age.h"
#include "common/git/git_repo.h"
#include "common/text/count.h"
#include "grpcpp/client_context.h"

namespace kbisect {
namespace {

// No single call to the coordinator waits longer than this.
constexpr absl::Duration kRpcDeadline = absl::Seconds(30);

std::unique_ptr<grpc::ClientContext> NewContext() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
  return context;
}

bool Finished(v1::JobState state) {
  return state == v1::JOB_STATE_DONE || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

void CancelJob(v1::CoordinatorService::StubInterface* stub, const std::string& job_id,
               const std::string& reason) {
  v1::CancelJobRequest request;
  request.set_job_id(job_id);
  request.set_reason(reason);
  v1::CancelJobResponse response;
  (void)stub->CancelJob(NewContext().get(), request, &response);
}

}  // namespace

std::optional<Lookback::Outcome> LookbackOutcome(const v1::JobStatus& job) {
  const bool pass_fail = job.spec().metric().kind() == v1::METRIC_KIND_EXIT_CODE;
  if (!Finished(job.state())) {
    // A measured step is only known once the job's interleaved confirmation held it: GOOD and
    // BAD's baselines were measured at two moments, and a machine that drifts between them
    // (a VM under load, a GPU warming up) fakes a step that interleaved pairs refuse. A
    // pass/fail check does not drift: past a settled endpoint verdict BAD~d passes. A step found
    // across two GPUs is provisional, and a queued job or one still measuring its baselines has
    // said nothing yet.
    const bool searching =
        job.state() == v1::JOB_STATE_BISECTING || job.state() == v1::JOB_STATE_CONFIRMING ||
        job.state() == v1::JOB_STATE_SUITE_SEARCH || job.state() == v1::JOB_STATE_FOLLOWING_UP;
    if (!pass_fail || !searching || job.baseline().provisional()) return std::nullopt;
    return Lookback::Outcome::kBetter;
  }
  // The step the endpoints showed did not hold in interleaved pairs: it was the machine.
  if (!pass_fail && job.has_confirmation() && !job.confirmation().confirmed() &&
      (job.status() == v1::OUTCOME_INCONCLUSIVE || job.status() == v1::OUTCOME_CULPRIT_FOUND)) {
    return Lookback::Outcome::kNotBetter;
  }
  switch (job.status()) {
    case v1::OUTCOME_CULPRIT_FOUND:
    case v1::OUTCOME_CANDIDATES_FOUND:
    case v1::OUTCOME_INCONCLUSIVE:
      return Lookback::Outcome::kBetter;
    case v1::OUTCOME_NO_REGRESSION:
      return Lookback::Outcome::kNotBetter;
    case v1::OUTCOME_ERROR:
      // Swapped endpoints (BAD~d slower than BAD) and a check failing at BAD~d say it is not
      // better; any other error (a build or benchmark failing there) says nothing.
      if (absl::StrContains(job.error(), "swapped") ||
          absl::StrContains(job.error(), "already fails at GOOD")) {
        return Lookback::Outcome::kNotBetter;
      }
      return Lookback::Outcome::kUntestable;
    default:
      return Lookback::Outcome::kUntestable;  // Cancelled by someone else.
  }
}

absl::StatusOr<FindGoodResult> FindGood(v1::CoordinatorService::StubInterface* stub,
                                        const v1::JobSpec& spec, int max_lookback, int per_round,
                                        std::ostream* progress, absl::Duration poll) {
  Lookback lookback(max_lookback);
  FindGoodResult result;
  std::map<int, std::string> jobs;  // Distance -> job id, of jobs still running.
  const std::string bad = spec.bad().empty() ? "HEAD" : spec.bad();
  auto cancel_all_but = [&](int keep) {
    for (const auto& [d, id] : jobs) {
      if (d != keep) CancelJob(stub, id, "--find-good: a nearer GOOD was found");
    }
  };
  while (!lookback.Found().has_value() && !lookback.Exhausted()) {
    const std::vector<int> next = lookback.Next(per_round);
    if (!next.empty()) ++result.rounds;
    for (int d : next) {
      v1::SubmitJobRequest request;
      *request.mutable_spec() = spec;
      request.mutable_spec()->set_good(absl::StrCat(bad, "~", d));
      // A metric's step counts only once interleaved pairs hold it (LookbackOutcome).
      if (spec.metric().kind() != v1::METRIC_KIND_EXIT_CODE)
        request.mutable_spec()->set_confirm(true);
      request.mutable_spec()->set_bad(bad);
      request.mutable_spec()->set_description(
          absl::StrCat("--find-good: is ", bad, "~", d, " better than ", bad, "?"));
      v1::SubmitJobResponse response;
      const grpc::Status status = stub->SubmitJob(NewContext().get(), request, &response);
      if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
        lookback.Record(d, Lookback::Outcome::kBeyondHistory);
        continue;
      }
      if (!status.ok()) {
        cancel_all_but(-1);
        return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                            status.error_message());
      }
      ++result.jobs;
      jobs[d] = response.job_id();
      if (progress != nullptr) {
        *progress << "Looking back: is " << bad << "~" << d << " better than " << bad << "? ("
                  << response.job_id() << ")\n"
                  << std::flush;
      }
    }
    // Wait until this round's answers decide, or every running job has answered.
    while (!lookback.Found().has_value() && !lookback.Exhausted()) {
      bool pending = false;
      for (auto it = jobs.begin(); it != jobs.end();) {
        const int d = it->first;
        auto tried = lookback.tried().find(d);
        if (tried != lookback.tried().end() && tried->second.has_value()) {
          ++it;
          continue;
        }
        v1::GetJobRequest request;
        request.set_job_id(it->second);
        v1::GetJobResponse response;
        const grpc::Status status = stub->GetJob(NewContext().get(), request, &response);
        const v1::JobStatus& job = response.job();
        if (!status.ok()) {
          cancel_all_but(-1);
          return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                              status.error_message());
        }
        const std::optional<Lookback::Outcome> outcome = LookbackOutcome(job);
        if (!outcome.has_value()) {
          pending = true;
          ++it;
          continue;
        }
        lookback.Record(d, *outcome);
        if (progress != nullptr) {
          *progress << "Looking back: " << bad << "~" << d
                    << (*outcome == Lookback::Outcome::kBetter ? " is better than "
                        : *outcome == Lookback::Outcome::kNotBetter
                            ? " is not better than "
                            : " cannot be measured against ")
                    << bad << "\n"
                    << std::flush;
        }
        if (*outcome != Lookback::Outcome::kBetter) {
          it = jobs.erase(it);  // Finished, nothing to cancel.
        } else {
          ++it;
        }
      }
      if (!pending) break;  // Everything handed out answered: the next round, if any.
      std::this_thread::sleep_for(absl::ToChronoNanoseconds(poll));
    }
  }
  result.reach = lookback.Reach();
  result.largest_not_better = lookback.LargestNotBetter();
  if (std::optional<int> found = lookback.Found()) {
    result.found = *found;
    result.job_id = jobs.at(*found);
    cancel_all_but(*found);
  } else {
    cancel_all_but(-1);
  }
  return result;
}

absl::StatusOr<absl::Time> ParseSince(const std::string& text, absl::Time now,
                                      absl::TimeZone zone) {
  const std::string trimmed(absl::StripAsciiWhitespace(text));
  int64_t seconds = 0;
  if (absl::StartsWith(trimmed, "@") &&
      absl::SimpleAtoi(absl::string_view(trimmed).substr(1), &seconds)) {
    return absl::FromUnixSeconds(seconds);
  }
  // A trailing Z is UTC (ISO 8601), whatever the parser's %z makes of it.
  absl::string_view body = trimmed;
  const bool utc = absl::ConsumeSuffix(&body, "Z") || absl::ConsumeSuffix(&body, "z");
  for (const char* date :
       {"%Y-%m-%d", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"}) {
    for (const char* suffix : {"", "%Ez", " %Ez", "%z", " %z"}) {
      if (utc && *suffix != '\0') continue;
      absl::Time time;
      std::string error;
      if (absl::ParseTime(absl::StrCat(date, suffix), body, utc ? absl::UTCTimeZone() : zone, &time,
                          &error)) {
        return time;
      }
    }
  }
  if (absl::StatusOr<absl::Duration> age = ParseAge(trimmed); age.ok()) return now - *age;
  return absl::InvalidArgumentError(absl::StrCat(
      "--since expects a date (2026-01-31, '2026-01-31 14:00', 2026-01-31T14:00:00Z, with an "
      "optional zone such as +01:00), @SECONDS, or an age such as 14d or 12h; got '",
      text, "'"));
}

absl::StatusOr<int> SinceReach(const std::string& repository, const std::string& bad,
                               absl::Time since, int max_lookback) {
  absl::string_view path = repository;
  if (absl::ConsumePrefix(&path, "file://")) {
    // A local path in URL form.
  } else if (absl::StrContains(repository, "://")) {
    return absl::FailedPreconditionError(
        absl::StrCat("--since reads the commit dates of a local repository, and ", repository,
                     " is remote: pass its local clone with --repo, or --max-lookback N"));
  }
  absl::StatusOr<std::unique_ptr<GitRepo>> repo = GitRepo::Open(std::string(path));
  if (!repo.ok()) return repo.status();
  absl::StatusOr<std::string> sha = (*repo)->ResolveCommit(bad.empty() ? "HEAD" : bad);
  if (!sha.ok()) return sha.status();
  std::vector<int64_t> times;  // Of BAD~1, BAD~2, ...
  const int64_t cutoff = absl::ToUnixSeconds(since);
  while (static_cast<int>(times.size()) < max_lookback) {
    absl::StatusOr<CommitInfo> commit = (*repo)->GetCommit(*sha);
    if (!commit.ok()) return commit.status();
    if (commit->parents.empty()) break;  // The root: the chain ends.
    *sha = commit->parents.front();
    absl::StatusOr<CommitInfo> parent = (*repo)->GetCommit(*sha);
    if (!parent.ok()) return parent.status();
    times.push_back(parent->commit_time);
    if (parent->commit_time < cutoff) break;
  }
  return LookbackReachSince(times, cutoff, max_lookback);
}

absl::StatusOr<int> LookbackReach(const std::string& since, int max_lookback,
                                  const std::string& repository, const std::string& bad) {
  if (since.empty()) return max_lookback;
  absl::StatusOr<absl::Time> date = ParseSince(since, absl::Now(), absl::LocalTimeZone());
  if (!date.ok()) return date.status();
  return SinceReach(repository, bad, *date, max_lookback);
}

std::string NothingSinceText(const std::string& since, const std::string& bad) {
  return absl::StrCat("no commit before ", bad,
                      " on its first-parent chain is as recent as --since ", since,
                      ": nothing to look back at. Give an earlier --since, or GOOD yourself");
}

std::string FoundGoodText(const FindGoodResult& result, const std::string& bad) {
  const std::string step =
      result.largest_not_better > 0
          ? absl::StrCat(bad, "~", result.largest_not_better, " is not, so the step is in ", bad,
                         "~", result.found, "..", bad, "~", result.largest_not_better)
          : absl::StrCat("the step is in ", bad, "~", result.found, "..", bad);
  return absl::StrCat("GOOD found by looking back: ", bad, "~", result.found, " is better than ",
                      bad, "; ", step, " (", Count(result.jobs, "lookback job"), " in ",
                      Count(result.rounds, "round"), "). Bisecting ", bad, "~", result.found, "..",
                      bad, ":");
}

std::string NothingBetterText(const FindGoodResult& result, const std::string& bad,
                              const std::string& since) {
  return absl::StrCat(
      "no commit within ", bad, "~1..", bad, "~", result.reach,
      since.empty() ? "" : absl::StrCat(" (the commits since ", since, ")"), " is better than ",
      bad, " (by --min-effect; with --exit-code: passes). Look further back with ",
      since.empty() ? "--max-lookback" : "an earlier --since", ", or give GOOD yourself");
}

}  // namespace kbisect
