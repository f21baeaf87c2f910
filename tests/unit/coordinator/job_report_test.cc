// Copyright 2026 The kbisect Authors.
//
// GatherReportDetails on its own: the identities of the workers that took part, and a culprit's
// diff, submodule bumps and root-cause hints from a fake repository, with what cannot be read as
// warnings.
#include "coordinator/job_report.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_repository_view.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// A repository whose diffs cannot be read (a pruned object, say).
class UnreadableDiffs : public FakeRepositoryView {
 public:
  using FakeRepositoryView::FakeRepositoryView;
  absl::StatusOr<std::vector<v1::FileChange>> DiffStat(const std::string&, const std::string&,
                                                       const std::string&) override {
    return absl::NotFoundError("object 1234 is missing");
  }
  absl::StatusOr<std::vector<v1::SubmoduleBump>> SubmoduleBumps(const std::string&,
                                                                const std::string&,
                                                                const std::string&) override {
    return absl::UnavailableError("the submodule's repository is gone");
  }
};

class JobReportTest : public ::testing::Test {
 protected:
  JobReportTest() {
    WorkerEntry& known = workers_.FindOrAdd("w0");
    known.identity.set_hardware_class("h100");
    status_.set_status(v1::OUTCOME_CULPRIT_FOUND);
    status_.mutable_spec()->set_repository("/repo");
    status_.mutable_last_good()->set_sha(FakeRepositoryView::MainSha(3));
    status_.mutable_culprit()->set_sha(FakeRepositoryView::MainSha(4));
    status_.add_workers()->set_worker("w0");
    status_.add_workers()->set_worker("w-left");  // No longer known: no identity to show.
  }

  SessionMailboxes mailboxes_;
  WorkerRegistry workers_{&mailboxes_};
  v1::JobStatus status_;
};

TEST_F(JobReportTest, ACulpritGetsItsDiffHintsAndTheWorkersIdentities) {
  FakeRepositoryView repository(8);
  const ReportDetails details = GatherReportDetails(status_, workers_, &repository);
  ASSERT_EQ(details.identities.size(), 1u);
  EXPECT_EQ(details.identities.at("w0").hardware_class(), "h100");
  ASSERT_THAT(details.files_changed, SizeIs(1));
  EXPECT_EQ(details.files_changed[0].path(), "kernels/attention.py");
  EXPECT_THAT(details.submodule_bumps, IsEmpty());
  ASSERT_THAT(details.root_cause_hints, SizeIs(1));
  EXPECT_EQ(details.root_cause_hints[0].file(), "kernels/attention.py");
  EXPECT_THAT(details.warnings, IsEmpty());
}

TEST_F(JobReportTest, WithoutACulpritNothingIsRead) {
  FakeRepositoryView repository(8);
  status_.set_status(v1::OUTCOME_NO_REGRESSION);
  const ReportDetails details = GatherReportDetails(status_, workers_, &repository);
  EXPECT_EQ(repository.diffs, 0);
  EXPECT_THAT(details.files_changed, IsEmpty());
  EXPECT_THAT(details.root_cause_hints, IsEmpty());
  EXPECT_EQ(details.identities.size(), 1u);
}

TEST_F(JobReportTest, WhatCannotBeReadIsAWarningNotAnError) {
  UnreadableDiffs repository(8);
  const ReportDetails details = GatherReportDetails(status_, workers_, &repository);
  EXPECT_THAT(details.files_changed, IsEmpty());
  EXPECT_THAT(details.warnings,
              ElementsAre(HasSubstr("could not list the culprit's files: object 1234 is missing"),
                          HasSubstr("could not list the culprit's submodule bumps: the "
                                    "submodule's repository is gone")));
  // The patch still reads: its hints stand.
  EXPECT_THAT(details.root_cause_hints, SizeIs(1));
}

}  // namespace
}  // namespace kbisect
