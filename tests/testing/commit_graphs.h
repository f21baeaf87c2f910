// Copyright 2026 The kbisect Authors.
//
// Generated commit graphs for tests and benchmarks of the graph search (CommitGraphSearch):
// random merges, criss-cross merges, octopus merges, long side branches, and the shape of
// Mercurial's bisect tests. Pure: a graph is a list of parent lists, no repository.
//
//   std::mt19937 rng(7);
//   CommitGraph graph = RandomMergesGraph(&rng, 40);
//   // graph.parents[0] is empty (the root, GOOD); the last node is BAD, and every node is one of
//   // its ancestors.
//
#ifndef KBISECT_TESTS_TESTING_COMMIT_GRAPHS_H_
#define KBISECT_TESTS_TESTING_COMMIT_GRAPHS_H_

#include <functional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kbisect {
namespace testing {

// A commit graph in creation order: parents[i] lists node i's parents (first parent first), each
// below i. Node 0 is the only root (GOOD) and the last node (BAD) has every node as an ancestor.
struct CommitGraph {
  std::string shape;                      // "random-merges", "criss-cross", ...
  std::vector<std::vector<int>> parents;  // One entry per node.
};

// Branches from random commits, commits on random branch tips and merges of two tips (about
// `size` nodes in all); BAD merges every tip left (an octopus when more than two).
CommitGraph RandomMergesGraph(std::mt19937* rng, int size);

// Two branches that merge each other at every step (criss-cross merges: each pair of merges has
// two merge bases), about `size` nodes; BAD merges the two.
CommitGraph CrissCrossGraph(std::mt19937* rng, int size);

// A mainline where groups of 2-4 short branches fork and come back in one octopus merge, about
// `size` nodes.
CommitGraph OctopusGraph(std::mt19937* rng, int size);

// A mainline with one long side branch (about half the nodes) forked near the start and merged
// into the mainline twice, in its middle and at its end, about `size` nodes.
CommitGraph LongSideBranchGraph(std::mt19937* rng, int size);

// The shape of Mercurial's bisect tests (tests/test-bisect2.t), 19 commits: node 0 the root, a
// mainline 0-1-2-3-5-6-9-10-11-14-15-16-17-18 and a side branch 4-7-8-12-13 forked at 0 and
// merged three times (5 merges 4, 9 merges 8, 14 merges 13). A bad change at 7 comes into the
// mainline at the merge 9. `git rev-list --topo-order --reverse` lists the nodes as 0..18, so a
// bad change at 2 or 11 is followed in that list by good commits of the other branch.
CommitGraph MercurialBisectGraph();

// The files of one commit, (path, contents) pairs.
using CommitFiles = std::vector<std::pair<std::string, std::string>>;

// The `git fast-import` stream that writes `graph` to refs/heads/main: node i is the commit with
// mark :i+1, message "c<i>", committed 60 i seconds after 2026-01-01 00:00:00 UTC, its parents
// in order. Its tree holds the files `files(i)` returns; without `files`, each commit keeps its
// first parent's tree (empty ones).
// What `git bisect run` answered, from its output: the first bad commit, or the commits it
// says "could be any of" when skips left several (full ids).
std::set<std::string> GitBisectAnswer(const std::string& output);

std::string FastImportStream(const CommitGraph& graph,
                             const std::function<CommitFiles(int)>& files = nullptr);

}  // namespace testing
}  // namespace kbisect

#endif  // KBISECT_TESTS_TESTING_COMMIT_GRAPHS_H_
