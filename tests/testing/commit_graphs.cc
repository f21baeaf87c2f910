// Copyright 2026 The kbisect Authors.

#include "tests/testing/commit_graphs.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace kbisect {
namespace testing {
namespace {

int Uniform(std::mt19937* rng, int low, int high) {
  return std::uniform_int_distribution<int>(low, high)(*rng);
}

// Appends a node with `parents` and returns its index.
int Add(CommitGraph* graph, std::vector<int> parents) {
  graph->parents.push_back(std::move(parents));
  return static_cast<int>(graph->parents.size()) - 1;
}

int Size(const CommitGraph& graph) { return static_cast<int>(graph.parents.size()); }

// Ends the graph with BAD: a merge of `tips` (a commit on the tip when there is one).
void Close(CommitGraph* graph, std::vector<int> tips) {
  if (tips.size() == 1) {
    Add(graph, {tips[0]});
  } else {
    Add(graph, std::move(tips));
  }
}

}  // namespace

CommitGraph RandomMergesGraph(std::mt19937* rng, int size) {
  CommitGraph graph{"random-merges", {{}}};
  std::vector<int> tips = {0};
  while (Size(graph) < size - 1) {
    const int roll = Uniform(rng, 0, 99);
    if (roll < 55 || (roll >= 75 && tips.size() < 2)) {
      int& tip = tips[Uniform(rng, 0, static_cast<int>(tips.size()) - 1)];
      tip = Add(&graph, {tip});
    } else if (roll < 75) {
      tips.push_back(Add(&graph, {Uniform(rng, 0, Size(graph) - 1)}));
    } else if (roll < 90) {
      const int a = Uniform(rng, 0, static_cast<int>(tips.size()) - 1);
      int b = Uniform(rng, 0, static_cast<int>(tips.size()) - 2);
      if (b >= a) ++b;
      tips[a] = Add(&graph, {tips[a], tips[b]});
      tips.erase(tips.begin() + b);
    } else {
      // Merge an older commit into a tip: a branch merged again later, or a criss-cross.
      int& tip = tips[Uniform(rng, 0, static_cast<int>(tips.size()) - 1)];
      const int older = Uniform(rng, 0, Size(graph) - 1);
      if (older != tip) tip = Add(&graph, {tip, older});
    }
  }
  Close(&graph, tips);
  return graph;
}

CommitGraph CrissCrossGraph(std::mt19937* rng, int size) {
  CommitGraph graph{"criss-cross", {{}}};
  int a = Add(&graph, {0});
  int b = Add(&graph, {0});
  while (Size(graph) < size - 1) {
    for (int i = Uniform(rng, 0, 2); i > 0; --i) a = Add(&graph, {a});
    for (int i = Uniform(rng, 0, 2); i > 0; --i) b = Add(&graph, {b});
    const int merged_a = Add(&graph, {a, b});
    const int merged_b = Add(&graph, {b, a});
    a = merged_a;
    b = merged_b;
  }
  Close(&graph, {a, b});
  return graph;
}

CommitGraph OctopusGraph(std::mt19937* rng, int size) {
  CommitGraph graph{"octopus", {{}}};
  int main = 0;
  // A group adds at most 14 nodes.
  while (Size(graph) == 1 || Size(graph) + 14 < size) {
    main = Add(&graph, {main});
    std::vector<int> parents = {main};
    const int branches = Uniform(rng, 2, 4);
    for (int branch = 0; branch < branches; ++branch) {
      int tip = main;
      for (int i = Uniform(rng, 1, 3); i > 0; --i) tip = Add(&graph, {tip});
      parents.push_back(tip);
    }
    main = Add(&graph, std::move(parents));
  }
  Close(&graph, {main});
  return graph;
}

CommitGraph LongSideBranchGraph(std::mt19937* rng, int size) {
  CommitGraph graph{"long-side-branch", {{}}};
  int main = Add(&graph, {0});
  int side = main;
  const int side_length = std::max(2, size / 2);
  const int main_length = std::max(2, size - side_length - 4);
  int side_done = 0;
  int main_done = 0;
  bool merged_once = false;
  while (side_done < side_length || main_done < main_length) {
    const bool on_side =
        main_done >= main_length || (side_done < side_length && Uniform(rng, 0, 1) == 0);
    if (on_side) {
      side = Add(&graph, {side});
      ++side_done;
    } else {
      main = Add(&graph, {main});
      ++main_done;
    }
    if (!merged_once && side_done >= side_length / 2) {
      main = Add(&graph, {main, side});
      merged_once = true;
    }
  }
  main = Add(&graph, {main, side});
  Close(&graph, {main});
  return graph;
}

CommitGraph MercurialBisectGraph() {
  CommitGraph graph{"mercurial-bisect2", {}};
  graph.parents = {
      {},        // 0: root (GOOD)
      {0},       // 1
      {1},       // 2
      {2},       // 3
      {0},       // 4: the side branch forks at the root
      {3, 4},    // 5: first merge of the side branch
      {5},       // 6
      {4},       // 7: the side branch goes on (the bad change in the tests)
      {7},       // 8
      {6, 8},    // 9: second merge
      {9},       // 10
      {10},      // 11
      {8},       // 12
      {12},      // 13
      {11, 13},  // 14: third merge
      {14},      // 15
      {15},      // 16
      {16},      // 17
      {17},      // 18: BAD
  };
  return graph;
}

std::set<std::string> GitBisectAnswer(const std::string& output) {
  std::set<std::string> answer;
  bool listing = false;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (absl::StrContains(line, " is the first bad commit")) {
      answer.insert(std::string(line.substr(0, 40)));
    } else if (absl::StrContains(line, "could be any of")) {
      listing = true;
    } else if (listing && line.size() == 40) {
      answer.insert(std::string(line));
    } else {
      listing = false;
    }
  }
  return answer;
}

std::string FastImportStream(const CommitGraph& graph,
                             const std::function<CommitFiles(int)>& files) {
  std::string stream;
  for (size_t i = 0; i < graph.parents.size(); ++i) {
    const std::string message = absl::StrCat("c", i, "\n");
    absl::StrAppend(&stream, "commit refs/heads/main\nmark :", i + 1,
                    "\ncommitter C <c@example.com> ", 1767225600 + 60 * i, " +0000\ndata ",
                    message.size(), "\n", message);
    for (size_t p = 0; p < graph.parents[i].size(); ++p) {
      absl::StrAppend(&stream, p == 0 ? "from :" : "merge :", graph.parents[i][p] + 1, "\n");
    }
    if (files) {
      absl::StrAppend(&stream, "deleteall\n");
      for (const auto& [path, contents] : files(static_cast<int>(i))) {
        absl::StrAppend(&stream, "M 644 inline ", path, "\ndata ", contents.size(), "\n", contents);
      }
    }
    absl::StrAppend(&stream, "\n");
  }
  return stream;
}

}  // namespace testing
}  // namespace kbisect
