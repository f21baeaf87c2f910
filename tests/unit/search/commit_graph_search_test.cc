// Copyright 2026 The kbisect Authors.
//
// CommitGraphSearch against `git bisect run` as the oracle: generated commit graphs (random,
// criss-cross and octopus merges, long side branches, Mercurial's bisect-test shape) are made
// into real repositories, laid out as kbisect lays out a --no-first-parent range (`git rev-list
// --topo-order --reverse good..bad`), and bisected for random culprits, with and without skipped
// commits, by git and by the search with W = 1..8 synchronous probes a round.
#include "common/search/commit_graph_search.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/commit_graphs.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::kbisect::testing::CommitGraph;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kMaxWorkers = 8;

// A generated graph as a real repository, and the range good..bad laid out as kbisect does.
struct GraphRepo {
  std::string path;
  std::vector<std::string> shas;               // Range index -> full id; 0 is GOOD.
  std::vector<std::vector<int>> parents;       // Range index -> in-range parents.
  std::vector<std::vector<bool>> is_ancestor;  // [a][d]: a is an ancestor of d (or d itself).

  int n() const { return static_cast<int>(shas.size()) - 1; }
};

std::string Run(const std::string& command) {
  testing::CommandResult result = RunShell(command);
  EXPECT_EQ(result.exit_code, 0) << command << "\n" << result.err;
  return result.out;
}

std::string GitPrefix(const std::string& path) {
  return absl::StrCat("GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -C ", ShellQuote(path),
                      " ");
}

// Writes `graph` into a new repository at `path` with git fast-import (node i dated 60 i
// seconds after the first) and lays out good..bad, good = node `good`, bad = the last node.
GraphRepo MakeRepo(const std::string& path, const CommitGraph& graph, int good) {
  Run(absl::StrCat("git init -q -b main ", ShellQuote(path)));
  const std::string stream = testing::FastImportStream(graph);
  testing::WriteFile(path + ".stream", stream);
  Run(absl::StrCat(GitPrefix(path), "fast-import --quiet --export-marks=", ShellQuote(path),
                   ".marks < ", ShellQuote(path + ".stream")));
  std::map<int, std::string> marks;
  for (absl::string_view line :
       absl::StrSplit(testing::ReadFile(path + ".marks"), '\n', absl::SkipEmpty())) {
    std::vector<std::string> words = absl::StrSplit(line, ' ');
    marks[std::stoi(words[0].substr(1)) - 1] = words[1];
  }
  GraphRepo repo;
  repo.path = path;
  const std::string good_sha = marks[good];
  const std::string bad_sha = marks[static_cast<int>(graph.parents.size()) - 1];
  std::map<std::string, int> index = {{good_sha, 0}};
  repo.shas = {good_sha};
  repo.parents = {{}};
  for (absl::string_view line : absl::StrSplit(
           Run(absl::StrCat(GitPrefix(path), "rev-list --topo-order --reverse --parents ", bad_sha,
                            " ^", good_sha)),
           '\n', absl::SkipEmpty())) {
    std::vector<std::string> words = absl::StrSplit(line, ' ');
    std::vector<int> parents;
    for (size_t p = 1; p < words.size(); ++p) {
      auto it = index.find(words[p]);
      if (it != index.end()) parents.push_back(it->second);  // Else an ancestor of GOOD.
    }
    // As the coordinator lays it out (GitRepositoryView): GOOD stands for the parents outside.
    if (parents.empty()) parents.push_back(0);
    index[words[0]] = static_cast<int>(repo.shas.size());
    repo.shas.push_back(words[0]);
    repo.parents.push_back(parents);
  }
  const int size = static_cast<int>(repo.shas.size());
  repo.is_ancestor.assign(size, std::vector<bool>(size, false));
  for (int d = 0; d < size; ++d) {
    std::vector<int> stack = {d};
    while (!stack.empty()) {
      const int a = stack.back();
      stack.pop_back();
      if (repo.is_ancestor[a][d]) continue;
      repo.is_ancestor[a][d] = true;
      for (int p : repo.parents[a]) stack.push_back(p);
    }
  }
  return repo;
}

// What `git bisect run` reports: the first bad commit, or the commits it could be any of.
std::set<std::string> GitBisect(const GraphRepo& repo, int culprit, const std::set<int>& skipped,
                                int* steps) {
  std::string script = "h=$(git rev-parse BISECT_HEAD)\n";
  if (!skipped.empty()) {
    std::vector<std::string> skipped_shas;
    for (int index : skipped) skipped_shas.push_back(repo.shas[index]);
    absl::StrAppend(&script, "case \"$h\" in ", absl::StrJoin(skipped_shas, "|"),
                    ") exit 125;; esac\n");
  }
  absl::StrAppend(&script, "git merge-base --is-ancestor ", repo.shas[culprit],
                  " \"$h\" && exit 1\nexit 0\n");
  testing::WriteFile(repo.path + ".check", script);
  const std::string git = GitPrefix(repo.path);
  testing::CommandResult result = RunShell(absl::StrCat(
      git, "bisect start --no-checkout ", repo.shas[repo.n()], " ", repo.shas[0], " && ", git,
      "bisect run sh ", ShellQuote(repo.path + ".check"), "; ", git, "bisect reset -q"));
  const std::string output = result.out + result.err;
  *steps = 0;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (absl::StrContains(line, "running")) ++*steps;
  }
  std::set<std::string> answer = testing::GitBisectAnswer(output);
  EXPECT_FALSE(answer.empty()) << output;
  return answer;
}

// The candidate sets git bisect can end with, whatever commit it probes at each step (within the
// candidates, as it does), found by following every path. Ranges of up to 63 commits.
std::set<uint64_t> GitTerminals(const GraphRepo& repo, int culprit, const std::set<int>& skipped) {
  const int n = repo.n();
  std::vector<uint64_t> ancestors(n + 1, 0);
  for (int d = 0; d <= n; ++d) {
    for (int a = 0; a <= n; ++a) {
      if (repo.is_ancestor[a][d]) ancestors[d] |= uint64_t{1} << a;
    }
  }
  const uint64_t start = ancestors[n] & ~ancestors[0];
  std::set<uint64_t> seen;
  std::set<uint64_t> terminals;
  std::vector<uint64_t> stack = {start};
  while (!stack.empty()) {
    const uint64_t state = stack.back();
    stack.pop_back();
    if (!seen.insert(state).second) continue;
    bool terminal = true;
    for (int p = 1; p <= n; ++p) {
      const uint64_t inside = state & ancestors[p];
      if (!(state >> p & 1U) || skipped.count(p) != 0 || inside == 0 || inside == state) continue;
      terminal = false;
      stack.push_back(repo.is_ancestor[culprit][p] ? inside : state & ~ancestors[p]);
    }
    if (terminal) terminals.insert(state);
  }
  return terminals;
}

struct Outcome {
  std::vector<int> candidates;
  int rounds = 0;
};

// Bisects with `workers` synchronous probes a round; a commit is bad iff the culprit is one of
// its ancestors (or itself), and the skipped ones say skip.
Outcome Search(const GraphRepo& repo, int culprit, const std::set<int>& skipped, int workers) {
  absl::StatusOr<CommitGraphSearch> created = CommitGraphSearch::Create(repo.parents);
  EXPECT_TRUE(created.ok()) << created.status();
  CommitGraphSearch search = *std::move(created);
  Outcome outcome;
  for (std::vector<int> probes = search.NextProbes(workers); !probes.empty();
       probes = search.NextProbes(workers)) {
    ++outcome.rounds;
    for (int p : probes) {
      const v1::Verdict verdict = skipped.count(p) != 0          ? v1::VERDICT_SKIP
                                  : repo.is_ancestor[culprit][p] ? v1::VERDICT_BAD
                                                                 : v1::VERDICT_GOOD;
      EXPECT_TRUE(search.Record(p, verdict).ok());
    }
    EXPECT_THAT(search.UselessInFlight(), ::testing::IsEmpty());
  }
  EXPECT_TRUE(search.Done());
  outcome.candidates = search.Candidates();
  return outcome;
}

uint64_t Mask(const std::vector<int>& indices) {
  uint64_t mask = 0;
  for (int index : indices) mask |= uint64_t{1} << index;
  return mask;
}

std::set<std::string> Shas(const GraphRepo& repo, const std::vector<int>& indices) {
  std::set<std::string> shas;
  for (int index : indices) shas.insert(repo.shas[index]);
  return shas;
}

struct Tally {
  int cases = 0;         // (graph, culprit, skips) bisected by git.
  int comparisons = 0;   // ... times the 8 worker counts.
  int determined = 0;    // Skip cases where git's answer is the only one it can give.
  int undetermined = 0;  // Skip cases where it depends on git's choice of probes.
};

// Bisects `repo` for `culprit` with git and with W = 1..8 and checks that they agree.
void Compare(const GraphRepo& repo, int culprit, const std::set<int>& skipped,
             const std::string& label, Tally* tally) {
  int steps = 0;
  const std::set<std::string> git = GitBisect(repo, culprit, skipped, &steps);
  ++tally->cases;
  const std::set<uint64_t> terminals = GitTerminals(repo, culprit, skipped);
  const uint64_t git_mask = [&] {
    std::vector<int> indices;
    for (int i = 0; i <= repo.n(); ++i) {
      if (git.count(repo.shas[i]) != 0) indices.push_back(i);
    }
    return Mask(indices);
  }();
  // The model of git's search is right: its answer is one it can give.
  EXPECT_EQ(terminals.count(git_mask), 1U) << label;
  // The commits no non-skipped commit tells apart from the culprit: every answer must list them.
  std::vector<int> indistinguishable;
  for (int h = 1; h <= repo.n(); ++h) {
    bool same = true;
    for (int p = 0; p <= repo.n() && same; ++p) {
      if (skipped.count(p) == 0) same = repo.is_ancestor[h][p] == repo.is_ancestor[culprit][p];
    }
    if (same) indistinguishable.push_back(h);
  }
  if (!skipped.empty()) ++(terminals.size() == 1 ? tally->determined : tally->undetermined);
  for (int workers = 1; workers <= kMaxWorkers; ++workers) {
    ++tally->comparisons;
    const Outcome ours = Search(repo, culprit, skipped, workers);
    const std::string where = absl::StrCat(label, " W=", workers);
    for (int h : indistinguishable) {
      EXPECT_THAT(ours.candidates, ::testing::Contains(h)) << where;
    }
    if (skipped.empty() || terminals.size() == 1) {
      EXPECT_EQ(Shas(repo, ours.candidates), git) << where;
    } else if (workers == 1) {
      // git's answer depends on which commit it probes; ours is one it can give.
      EXPECT_EQ(terminals.count(Mask(ours.candidates)), 1U) << where;
    }
  }
}

std::set<int> RandomSkips(std::mt19937* rng, const GraphRepo& repo, int culprit) {
  std::set<int> skipped;
  const int count = std::uniform_int_distribution<int>(1, 4)(*rng);
  if (std::uniform_int_distribution<int>(0, 1)(*rng) == 0) skipped.insert(culprit);
  while (static_cast<int>(skipped.size()) < count) {
    const int index = std::uniform_int_distribution<int>(1, repo.n() - 1)(*rng);
    skipped.insert(index);
  }
  skipped.erase(repo.n());  // BAD is known bad.
  return skipped;
}

TEST(CommitGraphSearchTest, AgreesWithGitBisectRunOnGeneratedGraphs) {
  TempDir tmp("graph-search");
  std::mt19937 rng(20261211);
  Tally tally;
  constexpr int kGraphs = 16;
  for (int g = 0; g < kGraphs; ++g) {
    const int size = std::uniform_int_distribution<int>(15, 60)(rng);
    CommitGraph graph;
    switch (g % 4) {
      case 0:
        graph = testing::RandomMergesGraph(&rng, size);
        break;
      case 1:
        graph = testing::CrissCrossGraph(&rng, size);
        break;
      case 2:
        graph = testing::OctopusGraph(&rng, size);
        break;
      default:
        graph = testing::LongSideBranchGraph(&rng, size);
        break;
    }
    ASSERT_LE(graph.parents.size(), 63U);
    // Every other graph is bisected from a GOOD inside it, so that some parents lie outside.
    const int last = static_cast<int>(graph.parents.size()) - 1;
    const int good = g % 2 == 0 ? 0 : std::uniform_int_distribution<int>(0, last / 3)(rng);
    const GraphRepo repo = MakeRepo(tmp.Join(absl::StrCat("g", g)), graph, good);
    if (repo.n() < 2) continue;
    for (int c = 0; c < 10; ++c) {
      const int culprit = std::uniform_int_distribution<int>(1, repo.n())(rng);
      const std::set<int> skipped = c < 6 ? std::set<int>() : RandomSkips(&rng, repo, culprit);
      Compare(repo, culprit, skipped,
              absl::StrCat(graph.shape, " #", g, " n=", repo.n(), " culprit=", culprit,
                           " skipped=", absl::StrJoin(skipped, ",")),
              &tally);
    }
  }
  std::printf(
      "%d cases (%d comparisons with W = 1..8); skip cases: %d where git's answer is "
      "the only one it can give, %d where it depends on git's choice of probes\n",
      tally.cases, tally.comparisons, tally.determined, tally.undetermined);
  EXPECT_GE(tally.cases, 150);
}

TEST(CommitGraphSearchTest, MercurialShapeNamesTheSideBranchCommitAsGitDoes) {
  TempDir tmp("graph-search");
  const GraphRepo repo = MakeRepo(tmp.Join("hg"), testing::MercurialBisectGraph(), 0);
  ASSERT_EQ(repo.n(), 18);
  Tally tally;
  for (int culprit = 1; culprit <= repo.n(); ++culprit) {
    Compare(repo, culprit, {}, absl::StrCat("culprit=", culprit), &tally);
  }
}

// Every order in which W parallel probes can finish: each worker takes the next probe as soon
// as its last one finished, any in-flight probe may finish first, and the probes made useless
// are cancelled. Calls `answer` with the candidates of every end reached; returns the number.
int EveryCompletionOrder(const CommitGraphSearch& search, const GraphRepo& repo, int culprit,
                         int workers, const std::function<void(const std::vector<int>&)>& answer) {
  CommitGraphSearch filled = search;
  for (int index : filled.UselessInFlight()) filled.Abandon(index);
  filled.NextProbes(workers - static_cast<int>(filled.InFlight().size()));
  const std::vector<int> in_flight = filled.InFlight();
  if (in_flight.empty()) {
    EXPECT_TRUE(filled.Done());
    answer(filled.Candidates());
    return 1;
  }
  int ends = 0;
  for (int finished : in_flight) {
    CommitGraphSearch next = filled;
    const v1::Verdict verdict =
        repo.is_ancestor[culprit][finished] ? v1::VERDICT_BAD : v1::VERDICT_GOOD;
    EXPECT_TRUE(next.Record(finished, verdict).ok());
    ends += EveryCompletionOrder(next, repo, culprit, workers, answer);
  }
  return ends;
}

// Mercurial's tests/test-bisect2.t DAG as issue 46 rebuilt it in git (0-4 in a line, 5 on 2,
// 6 = merge(5, 4), 7 on 4, 8 and 9 on 1, 10 = merge(9, 6), 11-13 on 8, 14 on 11,
// 15 = merge(13, 10), 16 and 17 on 15, 18 on 15), bisected from 11 to 17: revisions 2 and 9
// fork below GOOD, so none of their parents is in the range. Laid out as a list, the range's
// order put good commits of another branch after the culprit 9, and two runs in three named
// the merge 10. Every culprit, with every number of workers from 2 to 4 and every order of
// completion, must give git's answer.
TEST(CommitGraphSearchTest, BranchesForkedBelowGoodGiveGitsAnswerInEveryCompletionOrder) {
  TempDir tmp("graph-search");
  // Node i is revision i, except that 17 (BAD) is written last: nodes 17 and 18 are
  // revisions 18 and 17.
  CommitGraph graph{"hg-test-bisect2", {}};
  graph.parents = {{},     {0}, {1},  {2},  {3},  {2},      {5, 4}, {4},  {1}, {8},
                   {9, 6}, {8}, {11}, {12}, {11}, {13, 10}, {15},   {15}, {16}};
  const GraphRepo repo = MakeRepo(tmp.Join("hg2"), graph, /*good=*/11);
  ASSERT_EQ(repo.n(), 12);  // 2 3 4 5 6 9 10 12 13 15 16 17.
  absl::StatusOr<CommitGraphSearch> created = CommitGraphSearch::Create(repo.parents);
  ASSERT_TRUE(created.ok()) << created.status();
  int orders = 0;
  for (int culprit = 1; culprit <= repo.n(); ++culprit) {
    int steps = 0;
    const std::set<std::string> git = GitBisect(repo, culprit, {}, &steps);
    ASSERT_EQ(git, std::set<std::string>({repo.shas[culprit]})) << culprit;
    for (int workers = 2; workers <= 4; ++workers) {
      orders += EveryCompletionOrder(
          *created, repo, culprit, workers, [&](const std::vector<int>& candidates) {
            EXPECT_EQ(Shas(repo, candidates), git) << "culprit " << culprit << " W=" << workers;
          });
    }
  }
  // Revisions 2 and 9 hang from GOOD, as the coordinator lays them out.
  for (int i = 1; i <= repo.n(); ++i) EXPECT_FALSE(repo.parents[i].empty()) << i;
  std::printf("%d completion orders over 12 culprits and W = 2..4\n", orders);
  EXPECT_GE(orders, 100);
}

TEST(CommitGraphSearchTest, OneWorkerProbesTheCommitWithHalfTheCandidatesAsAncestors) {
  // 0 - 1 - 2 - 3 - 4 - 7 (merge of 4 and 6), side branch 0 - 5 - 6.
  absl::StatusOr<CommitGraphSearch> search =
      CommitGraphSearch::Create({{}, {0}, {1}, {2}, {3}, {0}, {5}, {4, 6}});
  ASSERT_TRUE(search.ok()) << search.status();
  // 7 candidates; 3 has 3 candidate ancestors (1, 2, 3) and 4 has 4: |3.5 - 3| = |3.5 - 4|, the
  // lower index wins.
  EXPECT_THAT(search->PlanProbes(1), ElementsAre(3));
  // Two probes: 3 and the side branch's tip 6 leave classes {1,2,3}, {5,6}, {4,7}.
  EXPECT_THAT(search->PlanProbes(2), ElementsAre(3, 6));
}

TEST(CommitGraphSearchTest, VerdictsNarrowToAncestorsAndAwayFromThem) {
  absl::StatusOr<CommitGraphSearch> search =
      CommitGraphSearch::Create({{}, {0}, {1}, {2}, {3}, {0}, {5}, {4, 6}});
  ASSERT_TRUE(search.ok());
  ASSERT_TRUE(search->Record(6, v1::VERDICT_BAD).ok());
  EXPECT_THAT(search->Candidates(), ElementsAre(5, 6));
  EXPECT_FALSE(search->Splits(3));  // Not an ancestor of 6, and none of 5, 6 is its ancestor.
  ASSERT_TRUE(search->Record(5, v1::VERDICT_GOOD).ok());
  EXPECT_THAT(search->Candidates(), ElementsAre(6));
  EXPECT_TRUE(search->Done());
  // A good verdict at 7 would leave nothing: a contradiction, and the state stays as it was.
  absl::Status contradiction = search->Record(7, v1::VERDICT_GOOD);
  EXPECT_EQ(contradiction.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(contradiction.message(), HasSubstr("contradicts"));
  EXPECT_THAT(search->Candidates(), ElementsAre(6));
}

TEST(CommitGraphSearchTest, InFlightProbesThatNoLongerSplitAreUseless) {
  absl::StatusOr<CommitGraphSearch> search =
      CommitGraphSearch::Create({{}, {0}, {1}, {2}, {3}, {0}, {5}, {4, 6}});
  ASSERT_TRUE(search.ok());
  search->MarkInFlight(2);
  search->MarkInFlight(5);
  ASSERT_TRUE(search->Record(6, v1::VERDICT_BAD).ok());
  EXPECT_THAT(search->UselessInFlight(), ElementsAre(2));
  EXPECT_FALSE(search->Done());
  search->Abandon(2);
  EXPECT_THAT(search->InFlight(), ElementsAre(5));
}

TEST(CommitGraphSearchTest, SkippedCandidatesAreListedAsGitListsThem) {
  // A chain 0 - 1 - 2 - 3 with 1 and 2 skipped and 3 bad: "could be any of 1, 2, 3".
  absl::StatusOr<CommitGraphSearch> search = CommitGraphSearch::Create({{}, {0}, {1}, {2}});
  ASSERT_TRUE(search.ok());
  ASSERT_TRUE(search->Record(2, v1::VERDICT_SKIP).ok());
  ASSERT_TRUE(search->Record(1, v1::VERDICT_SKIP).ok());
  EXPECT_TRUE(search->Done());
  EXPECT_THAT(search->Candidates(), ElementsAre(1, 2, 3));
}

TEST(CommitGraphSearchTest, RejectsWhatIsNotARange) {
  EXPECT_FALSE(CommitGraphSearch::Create({{}}).ok());
  EXPECT_FALSE(CommitGraphSearch::Create({{0}, {0}}).ok());
  EXPECT_FALSE(CommitGraphSearch::Create({{}, {1}}).ok());
  // Node 1 is not an ancestor of BAD (node 2).
  EXPECT_FALSE(CommitGraphSearch::Create({{}, {0}, {0}}).ok());
}

}  // namespace
}  // namespace kbisect
