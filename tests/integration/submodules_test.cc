// Copyright 2026 The kbisect Authors.
//
// `kbisect run` on a superproject whose benchmark depends on a submodule with a nested submodule
// of its own, all three served over file:// remotes and related by relative URLs, as kernel
// projects vendor CUTLASS: no build step, real binaries, real gRPC on loopback. The regression
// arrives with a bump of the dependency; the bisect finds the bump and the report names the
// dependency's range; with --descend-submodules a follow-up finds the commit inside the
// dependency, and with --descend-pin the same for a commit pinned in a file. A submodule commit
// nobody can fetch gives a clear message.
#include <signal.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/run_fixture.h"
#include "tests/testing/git_fixture.h"
#include "tests/testing/process.h"

namespace kbisect {
namespace testing {
namespace {

using ::testing::HasSubstr;

// Makes ROOT/{leaf,dep,super}.git (bare) and the user's clone ROOT/work of super.git, all in
// ROOT (the script's only argument, which must exist). leaf: 4 commits; its file "latency" is 1
// until leaf 2 makes it 2. dep: 6 commits (dep change 0..5); its submodule "nested"
// (../leaf.git) is at leaf 0 up to dep change 2 and at leaf 3 from dep change 3 on. super: 20
// commits; super 0 (tag v1.0) adds third_party/dep (../dep.git) at dep change 0, commit 12
// ("bump dep") moves it to dep change 5, the others change main.txt. Branch "lost" adds a commit
// recording a dep commit that was never pushed. ROOT/pinned (no remote) pins a leaf commit in
// the file pins/leaf.txt (a comment line, then the sha): leaf 0 from pinned 0 (tag v1.0), leaf 3
// from pinned 6 ("pin leaf"); its bench.sh reads the leaf from KBISECT_DEPENDENCY_DIR when set,
// else from leaf.git at the pinned commit. Prints the culprit's sha, the lost one's, then
// "pin leaf"'s.
constexpr char kMakeRepos[] = R"sh(set -eu
root="$1"; cd "$root"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t GIT_COMMITTER_NAME=t
export GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_EMAIL=t@example.com
gitlink() { mkdir -p "$2"; git update-index --add --cacheinfo "160000,$1,$2"; }
git init -q -b main leaf; cd leaf
for i in 0 1 2 3; do
  v=1; [ "$i" -ge 2 ] && v=2
  echo "$v" > latency; echo "$i" > rev; git add -A; git commit -qm "leaf $i"
done
leaf0=$(git rev-parse HEAD~3); leaf3=$(git rev-parse HEAD)
cd "$root"; git clone -q --bare leaf leaf.git
git init -q -b main dep; cd dep
printf '[submodule "nested"]\n\tpath = nested\n\turl = ../leaf.git\n' > .gitmodules
for i in 0 1 2 3 4 5; do
  if [ "$i" -ge 3 ]; then gitlink "$leaf3" nested; else gitlink "$leaf0" nested; fi
  echo "$i" > dep.txt; git add -A; git commit -qm "dep change $i"
done
dep0=$(git rev-parse HEAD~5); dep5=$(git rev-parse HEAD)
cd "$root"; git clone -q --bare dep dep.git
git init -q -b main super; cd super
printf '[submodule "dep"]\n\tpath = third_party/dep\n\turl = ../dep.git\n' > .gitmodules
printf '#!/bin/sh\nv=$(cat third_party/dep/nested/latency) || exit 1\n' > bench.sh
printf 'awk -v v="$v" -v s="$$" %s\n' \
  "'BEGIN { srand(s); printf \"Latency: %.4f ms\\n\", v * (1 + 0.002 * rand()) }'" >> bench.sh
chmod +x bench.sh
for i in $(seq 0 19); do
  msg="super $i"
  if [ "$i" -eq 0 ]; then gitlink "$dep0" third_party/dep; fi
  if [ "$i" -eq 12 ]; then gitlink "$dep5" third_party/dep; msg="bump dep"; fi
  echo "$i" > main.txt; git add -A; git commit -qm "$msg"
  if [ "$i" -eq 0 ]; then git tag v1.0; fi
  if [ "$i" -eq 12 ]; then git rev-parse HEAD > "$root/culprit"; fi
done
cd "$root"; git clone -q dep.git dep-clone; cd dep-clone
echo lost > dep.txt; git commit -qam "never pushed"; lost=$(git rev-parse HEAD)
cd "$root/super"; git checkout -q -b lost; gitlink "$lost" third_party/dep
git commit -qm "bump dep to a commit never pushed"; git checkout -q main
cd "$root"; git clone -q --bare super super.git
git clone -q "file://$root/super.git" work; git -C work branch -q lost origin/lost
git init -q -b main pinned; cd pinned
printf '#!/bin/sh\nd="${KBISECT_DEPENDENCY_DIR:-}"\n' > bench.sh
printf 'if [ -n "$d" ]; then v=$(cat "$d/latency"); else v=$(git --git-dir=%s show "$(tail -n 1 pins/leaf.txt):latency"); fi || exit 1\n' \
  "$root/leaf.git" >> bench.sh
printf 'awk -v v="$v" -v s="$$" %s\n' \
  "'BEGIN { srand(s); printf \"Latency: %.4f ms\\n\", v * (1 + 0.002 * rand()) }'" >> bench.sh
chmod +x bench.sh; mkdir pins
for i in $(seq 0 9); do
  msg="pinned $i"
  if [ "$i" -eq 0 ]; then printf '# leaf commit\n%s\n' "$leaf0" > pins/leaf.txt; fi
  if [ "$i" -eq 6 ]; then printf '# leaf commit\n%s\n' "$leaf3" > pins/leaf.txt; msg="pin leaf"; fi
  echo "$i" > main.txt; git add -A; git commit -qm "$msg"
  if [ "$i" -eq 0 ]; then git tag v1.0; fi
  if [ "$i" -eq 6 ]; then git rev-parse HEAD > "$root/pin-culprit"; fi
done
cat "$root/culprit"; echo "$lost"; cat "$root/pin-culprit"
)sh";

// The repositories of kMakeRepos, made in `tmp`, and the shas it prints.
struct SubmoduleRepos {
  std::string culprit, lost, pin_culprit;
};

void MakeSubmoduleRepos(const TempDir& tmp, SubmoduleRepos* repos) {
  WriteFile(tmp.Join("make.sh"), kMakeRepos);
  const CommandResult made = RunShell(
      absl::StrCat("sh ", ShellQuote(tmp.Join("make.sh")), " ", ShellQuote(tmp.path())));
  ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
  const std::string out = Trim(made.out);
  ASSERT_EQ(out.size(), 122u) << out;
  repos->culprit = out.substr(0, 40);
  repos->lost = out.substr(41, 40);
  repos->pin_culprit = out.substr(82, 40);
}

class SubmodulesRunTest : public KbisectRunTest {
 protected:
  void SetUp() override {
    SubmoduleRepos repos;
    ASSERT_NO_FATAL_FAILURE(MakeSubmoduleRepos(tmp_, &repos));
    culprit_ = repos.culprit;
    lost_ = repos.lost;
    pin_culprit_ = repos.pin_culprit;
  }

  std::string culprit_, lost_, pin_culprit_;
};

TEST_F(SubmodulesRunTest, FindsTheBumpAndNamesTheDependencysRange) {
  const std::string json = tmp_.Join("result.json");
  const std::string markdown = tmp_.Join("summary.md");
  const CommandResult run = Run(
      absl::StrCat("run v1.0 main --repo ", ShellQuote(tmp_.Join("work")), " --workers 2 --json ",
                   ShellQuote(json), " --markdown ", ShellQuote(markdown), " -- ./bench.sh"));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["status"], "culprit_found");
  EXPECT_EQ(result["culprit"]["sha"], culprit_) << run.out;
  ASSERT_EQ(result["submodule_bumps"].size(), 1u) << result.dump();
  const nlohmann::json& bump = result["submodule_bumps"][0];
  EXPECT_EQ(bump["path"], "third_party/dep");
  EXPECT_EQ(bump["url"], "file://" + tmp_.Join("dep.git"));
  EXPECT_EQ(bump["commit_count"], 5);
  ASSERT_EQ(bump["commits"].size(), 5u);
  EXPECT_EQ(bump["commits"][0]["subject"], "dep change 1");
  EXPECT_EQ(bump["commits"][4]["subject"], "dep change 5");
  // The terminal report and the Markdown name the bump and the dependency's commits.
  EXPECT_THAT(run.out, HasSubstr("Dependency bumps:"));
  EXPECT_THAT(run.out, HasSubstr("third_party/dep bumped "));
  EXPECT_THAT(run.out, HasSubstr("(5 commits), from"));
  EXPECT_THAT(run.out, HasSubstr("file://" + tmp_.Join("dep.git")));
  EXPECT_THAT(run.out, HasSubstr(" dep change 3"));
  EXPECT_THAT(ReadFile(markdown), HasSubstr("**Dependency bump:** third_party/dep bumped"));
}

// --descend-submodules: the bump is the superproject's culprit, and a follow-up bisects the
// dependency's own range dep change 0..5 with the superproject pinned at the bump; the commit
// that moved the nested submodule to the slow leaf is the dependency's culprit, and the descent
// goes on into the nested submodule (leaf 0..3, dep pinned at that commit): leaf 2.
TEST_F(SubmodulesRunTest, DescendsIntoTheBumpedSubmodule) {
  const std::string json = tmp_.Join("descend.json");
  const std::string markdown = tmp_.Join("descend.md");
  const std::string html = tmp_.Join("descend.html");
  const CommandResult run =
      Run(absl::StrCat("run v1.0 main --repo ", ShellQuote(tmp_.Join("work")),
                       " --workers 2 --descend-submodules --json ", ShellQuote(json),
                       " --markdown ", ShellQuote(markdown), " --html ", ShellQuote(html),
                       " -- ./bench.sh"));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["culprit"]["sha"], culprit_) << run.out;
  ASSERT_EQ(result["follow_up_job_ids"].size(), 1u) << result.dump();
  ASSERT_EQ(result["dependency_culprits"].size(), 2u) << result.dump();
  const nlohmann::json& found = result["dependency_culprits"][0];
  EXPECT_EQ(found["path"], "third_party/dep");
  EXPECT_EQ(found["kind"], "submodule");
  EXPECT_EQ(found["repository"], "file://" + tmp_.Join("dep.git"));
  EXPECT_EQ(found["commit"]["subject"], "dep change 3") << run.out;
  EXPECT_EQ(found["job_id"], result["follow_up_job_ids"][0]);
  const nlohmann::json& nested = result["dependency_culprits"][1];
  EXPECT_EQ(nested["path"], "third_party/dep/nested");
  EXPECT_EQ(nested["repository"], "file://" + tmp_.Join("leaf.git"));
  EXPECT_EQ(nested["commit"]["subject"], "leaf 2") << run.out;
  EXPECT_THAT(run.out, HasSubstr("Inside the dependency third_party/dep (file://"));
  EXPECT_THAT(run.out, HasSubstr("dep change 3"));
  EXPECT_THAT(run.out, HasSubstr("Inside the dependency third_party/dep/nested (file://"));
  EXPECT_THAT(run.out, HasSubstr("[dependency third_party/dep] [dependency nested] "));
  EXPECT_THAT(ReadFile(markdown), HasSubstr("**Inside the dependency `third_party/dep`:**"));
  EXPECT_THAT(ReadFile(html), HasSubstr("Inside the dependency"));
}

// --descend-pin FILE=REPOSITORY: the commit that changes the pin is the culprit; a follow-up
// bisects the pinned repository between the two pins, checked out in KBISECT_DEPENDENCY_DIR,
// and names its first slow commit.
TEST_F(SubmodulesRunTest, DescendsIntoThePinnedCommit) {
  const std::string json = tmp_.Join("pin.json");
  const CommandResult run = Run(absl::StrCat(
      "run v1.0 main --repo ", ShellQuote(tmp_.Join("pinned")), " --workers 2 --descend-pin ",
      ShellQuote("pins/leaf.txt=" + tmp_.Join("leaf.git")), " --json ", ShellQuote(json),
      " -- ./bench.sh"));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["culprit"]["sha"], pin_culprit_) << run.out;
  ASSERT_EQ(result["dependency_culprits"].size(), 1u) << result.dump();
  const nlohmann::json& found = result["dependency_culprits"][0];
  EXPECT_EQ(found["path"], "pins/leaf.txt");
  EXPECT_EQ(found["kind"], "pin_file");
  EXPECT_EQ(found["repository"], tmp_.Join("leaf.git"));
  EXPECT_EQ(found["commit"]["subject"], "leaf 2") << run.out;
  EXPECT_THAT(run.out, HasSubstr("Inside the dependency pins/leaf.txt"));
}

TEST_F(SubmodulesRunTest, ASubmoduleCommitNobodyCanFetchIsNamed) {
  const CommandResult run = Run(absl::StrCat("run v1.0 lost --repo ", ShellQuote(tmp_.Join("work")),
                                             " --workers 2 -- ./bench.sh"));
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.out + run.err,
              HasSubstr("submodule 'third_party/dep' at commit " + lost_.substr(0, 12) +
                        " from 'file://" + tmp_.Join("dep.git") + "' cannot be fetched"));
}

using SubmodulesClusterTest = ClusterFixture;

// The same descents as cluster jobs: `kbisect submit` to the real coordinator daemon, two real
// workers, a build step (so the parent's probes build through the host's build cache and the
// dependency's in the slots' own checkouts, with KBISECT_DEPENDENCY_DIR set for the build).
TEST_F(SubmodulesClusterTest, SubmitDescendsIntoASubmoduleAndAPin) {
  SubmoduleRepos repos;
  ASSERT_NO_FATAL_FAILURE(MakeSubmoduleRepos(tmp_, &repos));
  std::unique_ptr<Process> coordinator = StartCoordinator();
  std::unique_ptr<Process> w0 = StartWorker("node-d/gpu0", 0);
  std::unique_ptr<Process> w1 = StartWorker("node-d/gpu1", 1);
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 2; }, std::chrono::seconds(15)))
      << w0->log() << w1->log();

  const std::string json = tmp_.Join("submodule.json");
  const CommandResult submodule = Kbisect(absl::StrCat(
      "submit v1.0 main --repo ", ShellQuote(tmp_.Join("work")),
      " --descend-submodules --build 'test -f third_party/dep/dep.txt' --wait --json ",
      ShellQuote(json), " -- ./bench.sh"));
  ASSERT_EQ(submodule.exit_code, 0) << submodule.out << submodule.err << coordinator->log();
  nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["culprit"]["sha"], repos.culprit);
  ASSERT_EQ(result["dependency_culprits"].size(), 2u) << result.dump();
  EXPECT_EQ(result["dependency_culprits"][0]["path"], "third_party/dep");
  EXPECT_EQ(result["dependency_culprits"][0]["commit"]["subject"], "dep change 3");
  EXPECT_EQ(result["dependency_culprits"][1]["path"], "third_party/dep/nested");
  EXPECT_EQ(result["dependency_culprits"][1]["commit"]["subject"], "leaf 2");
  EXPECT_THAT(submodule.out, HasSubstr("[dependency third_party/dep] "));
  EXPECT_THAT(submodule.out, HasSubstr("Inside the dependency third_party/dep"));

  // The pin's dependency is built beside the checkout: the build sees it.
  const std::string pin_json = tmp_.Join("pin.json");
  const CommandResult pin = Kbisect(absl::StrCat(
      "submit v1.0 main --repo ", ShellQuote(tmp_.Join("pinned")), " --descend-pin ",
      ShellQuote("pins/leaf.txt=file://" + tmp_.Join("leaf.git")),
      " --build 'test -z \"${KBISECT_DEPENDENCY_DIR:-}\" ||",
      " test -f \"$KBISECT_DEPENDENCY_DIR/rev\"' --wait --json ", ShellQuote(pin_json), " -- ./bench.sh"));
  ASSERT_EQ(pin.exit_code, 0) << pin.out << pin.err << coordinator->log();
  result = nlohmann::json::parse(ReadFile(pin_json));
  EXPECT_EQ(result["culprit"]["sha"], repos.pin_culprit);
  ASSERT_EQ(result["dependency_culprits"].size(), 1u) << result.dump();
  EXPECT_EQ(result["dependency_culprits"][0]["path"], "pins/leaf.txt");
  EXPECT_EQ(result["dependency_culprits"][0]["repository"], "file://" + tmp_.Join("leaf.git"));
  EXPECT_EQ(result["dependency_culprits"][0]["commit"]["subject"], "leaf 2");
  coordinator->Signal(SIGTERM);
  EXPECT_EQ(coordinator->Wait(std::chrono::seconds(15)), 0) << coordinator->log();
}

}  // namespace
}  // namespace testing
}  // namespace kbisect
