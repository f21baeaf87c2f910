// Copyright 2026 The kbisect Authors.
#include "coordinator/job/marks.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;

// Commits 0..n with shas "a0000<i>..." (index 0 = GOOD, n = BAD).
std::vector<v1::CommitRef> Commits(int n) {
  std::vector<v1::CommitRef> commits;
  for (int i = 0; i <= n; ++i) {
    v1::CommitRef ref;
    ref.set_sha(absl::StrCat("a", 1000 + i, "bcdef0123456789abcdef0123456789abcd"));
    ref.set_index(i);
    commits.push_back(ref);
  }
  return commits;
}

v1::JobSpec WithMarks(const std::vector<std::pair<std::string, v1::Verdict>>& marks) {
  v1::JobSpec spec;
  for (const auto& [commit, verdict] : marks) {
    v1::CommitMark* mark = spec.add_marks();
    mark->set_commit(commit);
    mark->set_verdict(verdict);
  }
  return spec;
}

TEST(ResolveMarksTest, PrefixesResolveToIndicesInRangeOrder) {
  const std::vector<v1::CommitRef> commits = Commits(20);
  absl::StatusOr<std::vector<v1::CommitMark>> marks =
      ResolveMarks(WithMarks({{"a1015", v1::VERDICT_BAD},
                              {"A1003BCD", v1::VERDICT_GOOD},
                              {commits[9].sha(), v1::VERDICT_SKIP},
                              {"a1015b", v1::VERDICT_BAD}}),
                   commits);
  ASSERT_TRUE(marks.ok()) << marks.status();
  ASSERT_EQ(marks->size(), 3u) << "a commit marked twice alike counts once";
  EXPECT_EQ((*marks)[0].index(), 3);
  EXPECT_EQ((*marks)[0].sha(), commits[3].sha());
  EXPECT_EQ((*marks)[0].verdict(), v1::VERDICT_GOOD);
  EXPECT_EQ((*marks)[1].index(), 9);
  EXPECT_EQ((*marks)[1].verdict(), v1::VERDICT_SKIP);
  EXPECT_EQ((*marks)[2].index(), 15);
  EXPECT_EQ((*marks)[2].commit(), "a1015");
}

TEST(ResolveMarksTest, BadMarksSayWhatToChange) {
  const std::vector<v1::CommitRef> commits = Commits(20);
  struct Case {
    std::vector<std::pair<std::string, v1::Verdict>> marks;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{{"ffff", v1::VERDICT_GOOD}}, "no commit of the range"},
      {{{"a10", v1::VERDICT_GOOD}}, "at least 4 hex digits"},
      {{{"a101", v1::VERDICT_GOOD}}, "matches several commits"},
      {{{"main~3", v1::VERDICT_GOOD}}, "sha or a prefix"},
      {{{"a1000", v1::VERDICT_BAD}}, "names GOOD"},
      {{{"a1020", v1::VERDICT_GOOD}}, "names BAD"},
      {{{"a1005", v1::VERDICT_AMBIGUOUS}}, "good, bad or skip"},
      {{{"a1005", v1::VERDICT_GOOD}, {"a1005", v1::VERDICT_SKIP}}, "marked both good and skip"},
      {{{"a1012", v1::VERDICT_GOOD}, {"a1007", v1::VERDICT_BAD}}, "contradict each other"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<v1::CommitMark>> marks = ResolveMarks(WithMarks(c.marks), commits);
    ASSERT_FALSE(marks.ok()) << c.error;
    EXPECT_EQ(marks.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(marks.status().message(), HasSubstr(c.error));
  }
  // Good before bad, with skips anywhere, is consistent.
  EXPECT_TRUE(ResolveMarks(WithMarks({{"a1007", v1::VERDICT_GOOD},
                                      {"a1012", v1::VERDICT_BAD},
                                      {"a1019", v1::VERDICT_SKIP}}),
                           commits)
                  .ok());
}

TEST(MarksTest, MarkedCommitsAreVerdictsOfTheSearch) {
  google::protobuf::RepeatedPtrField<v1::CommitMark> marks;
  v1::CommitMark* good = marks.Add();
  good->set_index(3);
  good->set_verdict(v1::VERDICT_GOOD);
  v1::CommitMark* skip = marks.Add();
  skip->set_index(5);
  skip->set_verdict(v1::VERDICT_SKIP);
  v1::CommitMark* bad = marks.Add();
  bad->set_index(8);
  bad->set_verdict(v1::VERDICT_BAD);
  EXPECT_TRUE(IsMarked(marks, 5));
  EXPECT_FALSE(IsMarked(marks, 4));
  BisectSearch search(10);
  RecordMarks(marks, &search);
  EXPECT_EQ(search.last_good(), 3);
  EXPECT_EQ(search.first_bad(), 8);
  EXPECT_EQ(search.VerdictAt(5), v1::VERDICT_SKIP);
  EXPECT_FALSE(search.VerdictAt(6).has_value());
}

}  // namespace
}  // namespace kbisect
