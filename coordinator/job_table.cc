// Copyright 2026 The kbisect Authors.
#include "coordinator/job_table.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/rpc/proto_time.h"
#include "common/spec/action_digest.h"
#include "coordinator/follow_ups.h"

namespace kbisect {

JobEntry& JobTable::Add(const std::string& job_id, const std::string& request_id) {
  JobEntry& entry = jobs_[job_id];
  entry.position = ++last_position_;
  entry.request_id = request_id;
  order_.push_back(job_id);
  if (!request_id.empty()) request_ids_[request_id] = job_id;
  return entry;
}

JobEntry& JobTable::AddStored(StoredJob stored) {
  // Numbered in creation order once every job is loaded (Renumber).
  JobEntry& entry = Add(stored.job_id, stored.request_id);
  entry.spec_digest = SpecDigest(stored.spec);
  entry.job =
      std::make_unique<BisectJob>(stored.job_id, std::move(stored.spec), std::move(stored.commits),
                                  stored.create_time, std::move(stored.cached));
  entry.has_stored_final = stored.has_final_status;
  entry.stored_final = std::move(stored.final_status);
  return entry;
}

JobEntry& JobTable::AddCompacted(StoredJob stored) {
  JobEntry& entry = Add(stored.job_id, stored.request_id);
  entry.spec_digest = SpecDigest(stored.spec);
  entry.job = BisectJob::Finished(stored.job_id, std::move(stored.spec), stored.final_status,
                                  stored.create_time);
  entry.published.Freeze(std::move(stored.final_status));
  entry.events = std::move(stored.events);
  entry.published.set_revision(static_cast<int64_t>(entry.events.size()));
  entry.reported = true;
  entry.follow_ups_decided = true;
  entry.complete = true;
  for (const std::string& id : entry.published.frozen()->follow_up_job_ids()) {
    entry.follow_ups.push_back(id);
  }
  return entry;
}

JobTable::Applied JobTable::Apply(JobEntry& entry, JournalEntry call, bool replaying) {
  Applied applied{entry.job->Apply(call), std::nullopt};
  const bool leaves_trace =
      call.kind != JournalEntry::Kind::kTakeTasks || !applied.job.assignments.empty();
  if (call.kind == JournalEntry::Kind::kTaskStarted) entry.offers.WorkerUsed(call.worker);
  if (leaves_trace) entry.offers.Changed();
  if (replaying) {
    entry.journal_sequence = call.sequence;
  } else if (leaves_trace) {
    call.sequence = ++entry.journal_sequence;
    applied.journal = std::move(call);
  }
  return applied;
}

JobEntry* JobTable::Find(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const JobEntry* JobTable::Find(const std::string& job_id) const {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const std::string* JobTable::JobOfRequest(const std::string& request_id) const {
  auto it = request_ids_.find(request_id);
  return it == request_ids_.end() ? nullptr : &it->second;
}

void JobTable::AppendEvent(JobEntry& entry, v1::JobEvent event) {
  const std::string parent = entry.job->status().spec().parent_job_id();
  if (!parent.empty() && event.kind() != v1::JOB_EVENT_KIND_FINISHED) {
    JobEntry* parent_entry = Find(parent);
    if (parent_entry != nullptr && !parent_entry->complete) {
      v1::JobEvent copy = event;
      copy.clear_job();
      // In the parent's stream the line is about another job: it travels as its prefixed
      // sentence, and clients word the message (the fact would describe the parent).
      copy.clear_fact();
      const v1::FollowUpKind kind = entry.job->status().spec().follow_up();
      const std::string& dependency = entry.job->status().spec().dependency().path();
      copy.set_message(absl::StrCat(kind == v1::FOLLOW_UP_KIND_DEPENDENCY
                                        ? absl::StrCat("[dependency ", dependency, "] ")
                                        : FollowUpEventPrefix(kind),
                                    event.message()));
      // A follow-up's STARTED line is a progress line in its parent's stream.
      if (copy.kind() == v1::JOB_EVENT_KIND_STARTED) copy.set_kind(v1::JOB_EVENT_KIND_WARNING);
      AppendEvent(*parent_entry, std::move(copy));
      parent_entry->published.set_revision(static_cast<int64_t>(parent_entry->events.size()));
    }
  }
  event.set_sequence(static_cast<int64_t>(entry.events.size()) + 1);
  entry.events.push_back(std::move(event));
}

std::vector<std::string> JobTable::Family(const std::string& job_id) const {
  std::vector<std::string> family;
  if (!contains(job_id)) return family;
  family.push_back(job_id);
  for (size_t i = 0; i < family.size(); ++i) {
    for (const std::string& child : jobs_.at(family[i]).follow_ups) {
      if (contains(child)) family.push_back(child);
    }
  }
  return family;
}

std::vector<std::string> JobTable::ExpiredFamilies(absl::Time now, absl::Duration retain) const {
  std::vector<std::string> expired;
  for (const std::string& job_id : order_) {
    const JobEntry& entry = jobs_.at(job_id);
    const v1::JobStatus& status = entry.Base();
    if (!entry.complete || !status.spec().parent_job_id().empty()) continue;
    const absl::Time finished = status.has_finish_time() ? FromProto(status.finish_time())
                                                         : FromProto(status.create_time());
    if (now - finished <= retain) continue;
    for (std::string& member : Family(job_id)) expired.push_back(std::move(member));
  }
  return expired;
}

void JobTable::Renumber(const std::vector<std::string>& order) {
  std::vector<std::string> renumbered;
  std::set<std::string> placed;
  for (const std::string& job_id : order) {
    if (jobs_.count(job_id) > 0 && placed.insert(job_id).second) renumbered.push_back(job_id);
  }
  for (const std::string& job_id : order_) {
    if (placed.insert(job_id).second) renumbered.push_back(job_id);
  }
  order_ = std::move(renumbered);
  last_position_ = 0;
  for (const std::string& job_id : order_) jobs_.at(job_id).position = ++last_position_;
}

void JobTable::Erase(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  if (!it->second.request_id.empty()) request_ids_.erase(it->second.request_id);
  jobs_.erase(it);
  order_.erase(std::remove(order_.begin(), order_.end(), job_id), order_.end());
}

std::vector<std::string> JobTable::EraseExpired(absl::Time now, absl::Duration retain) {
  if (retain == absl::InfiniteDuration()) return {};
  std::vector<std::string> doomed = ExpiredFamilies(now, retain);
  for (const std::string& job_id : doomed) Erase(job_id);
  return doomed;
}

void JobTable::Clear() {
  jobs_.clear();
  order_.clear();
  request_ids_.clear();
}

v1::ListJobsResponse JobTable::List(const v1::ListJobsRequest& request) const {
  v1::ListJobsResponse response;
  const int page_size =
      request.page_size() > 0 ? std::min(request.page_size(), kMaxListedJobs) : kDefaultListedJobs;
  // The token is the creation position the page starts at ("before:N": the jobs created N-th
  // and before): a job keeps its position when older ones are deleted, so a walk neither repeats
  // nor skips a job when jobs are submitted or deleted between its pages.
  size_t end = order_.size();
  if (absl::string_view token = request.page_token(); absl::ConsumePrefix(&token, "before:")) {
    uint64_t before = 0;
    if (absl::SimpleAtoi(token, &before)) {
      end = std::upper_bound(order_.begin(), order_.end(), before,
                             [&](uint64_t value, const std::string& job_id) {
                               return value < jobs_.at(job_id).position;
                             }) -
            order_.begin();
    }
  }
  for (size_t index = end; index > 0; --index) {
    const JobEntry& entry = jobs_.at(order_[index - 1]);
    const v1::JobStatus& job = entry.Base();
    const v1::JobState state = entry.State();
    if (request.states_size() > 0 && std::find(request.states().begin(), request.states().end(),
                                               state) == request.states().end()) {
      continue;
    }
    if (response.jobs_size() == page_size) {
      response.set_next_page_token(absl::StrCat("before:", entry.position));
      break;
    }
    v1::JobSummary* summary = response.add_jobs();
    summary->set_job_id(job.job_id());
    summary->set_state(state);
    summary->set_status(job.status());
    summary->set_repository(job.spec().repository());
    summary->set_good(job.spec().good());
    summary->set_bad(job.spec().bad());
    summary->set_culprit_sha(job.culprit().sha());
    *summary->mutable_progress() = job.progress();
    *summary->mutable_create_time() = job.create_time();
    *summary->mutable_origin() = job.spec().origin();
  }
  return response;
}

std::vector<v1::Task> BuildAheadHints(const JobTable& jobs, const WorkerRegistry& workers,
                                      const std::string& hardware_class, int limit) {
  std::vector<v1::Task> hints;
  for (const std::string& job_id : jobs.order()) {
    const int left = limit - static_cast<int>(hints.size());
    if (left <= 0) break;
    const JobEntry& entry = jobs.at(job_id);
    if (entry.job->finished()) continue;
    const std::string job_class = workers.HardwareClassOf(entry.job->status());
    if (!job_class.empty() && job_class != hardware_class) continue;
    for (v1::Task& task : entry.job->BuildAheadTasks(left)) hints.push_back(std::move(task));
  }
  return hints;
}

}  // namespace kbisect
