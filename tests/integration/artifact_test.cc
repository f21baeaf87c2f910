// Copyright 2026 The kbisect Authors.
//
// `kbisect run --artifact kern (--find-links DIR | --index-url URL) GOOD BAD -- python bench.py`
// over real nightly wheels (issue 47): a generated package `kern` with a real git history is
// released as one wheel a day, 1.0.devYYYYMMDD, each knowing the commit it was built from
// (kern.version.git_version). The kernel slows down by 45% with a commit of January 5th, whose
// nightly is missing (so is January 4th's); January 8th's nightly is broken (it cannot be
// imported). With --repo and --build the bisect goes on into the commits between the two
// nightlies. The indexes are a
// find-links directory, a PEP 503 index as files, and the same served by a loopback HTTP server.
// Real pip installs each probe's wheel into a layer of its own over the user's virtualenv;
// every case asserts the nightlies named, their commits, that the user's virtualenv is untouched
// and that no pip call used another index (PIP_INDEX_URL and PIP_EXTRA_INDEX_URL point at a
// closed port).
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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

// Writes the package's source history into OUT/src (a git repository: three commits a day,
// January 1st to 10th; commit 13, the second of January 5th, makes the kernel 45% slower) and
// one nightly wheel a day from each day's last commit (real zip files with METADATA, WHEEL and
// RECORD, kern.version.git_version its commit) into OUT/wheels, the PEP 503 index into
// OUT/simple, the bench into OUT/bench.py and the commits, one per line, into OUT/commits.
// January 4th and 5th have no nightly; January 8th's cannot be imported (a broken packaging).
constexpr char kMakeNightlies[] = R"py(import base64, hashlib, os, subprocess, sys, zipfile
out = sys.argv[1]
src = os.path.join(out, "src")
wheels = os.path.join(out, "wheels")
os.makedirs(os.path.join(src, "kern"), exist_ok=True)
os.makedirs(wheels, exist_ok=True)
def git(*args):
    return subprocess.run(["git", "-C", src, "-c", "user.name=t", "-c", "user.email=t@t"] + list(args),
                          check=True, capture_output=True, text=True).stdout.strip()
git("init", "-q")
with open(os.path.join(src, "pyproject.toml"), "w") as f:
    f.write('[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
            '[project]\nname = "kern"\nversion = "1.0"\n[tool.setuptools]\npackages = ["kern"]\n')
def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
commits, links = [], []
for i in range(30):
    latency = 10.0 if i < 13 else 14.5
    init = "def latency():\n    return %r  # commit %d\n" % (latency, i)
    with open(os.path.join(src, "kern", "__init__.py"), "w") as f:
        f.write(init)
    git("add", "-A")
    git("commit", "-qm", "commit %d" % i)
    commits.append(git("rev-parse", "HEAD"))
    day = i // 3 + 1
    if i % 3 != 2 or day in (4, 5):
        continue
    version = "1.0.dev202601%02d" % day
    files = {
        "kern/__init__.py": ("raise ImportError('broken nightly')\n" if day == 8 else "")
            + "from kern import version\n" + init,
        "kern/version.py": "__version__ = %r\ngit_version = %r\n" % (version, commits[-1]),
        "kern-%s.dist-info/METADATA" % version:
            "Metadata-Version: 2.1\nName: kern\nVersion: %s\nRequires-Dist: kern-triton==%s\n"
            % (version, "3.2.0+git4b3bb1f8" if day < 6 else "3.3.0+git96316ce5"),
        "kern-%s.dist-info/WHEEL" % version:
            "Wheel-Version: 1.0\nGenerator: kbisect-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join("%s,%s,%d\n" % (name, record_hash(text.encode()), len(text.encode()))
                     for name, text in files.items())
    files["kern-%s.dist-info/RECORD" % version] = record + "kern-%s.dist-info/RECORD,,\n" % version
    name = "kern-%s-py3-none-any.whl" % version
    with zipfile.ZipFile(os.path.join(wheels, name), "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    digest = hashlib.sha256(open(os.path.join(wheels, name), "rb").read()).hexdigest()
    links.append('<a href="../../wheels/%s#sha256=%s">%s</a><br/>' % (name, digest, name))
project = os.path.join(out, "simple", "kern")
os.makedirs(project, exist_ok=True)
with open(os.path.join(project, "index.html"), "w") as f:
    f.write("<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n")
with open(os.path.join(out, "bench.py"), "w") as f:
    f.write("import kern\nprint('Latency: %.3f ms' % kern.latency())\n")
with open(os.path.join(out, "commits"), "w") as f:
    f.write("\n".join(commits) + "\n")
)py";

// OUT/companion/wheels: kern nightlies for January 1st to 10th that pin kern-triton (3.2.0 until
// the 5th, 3.3.0 from the 6th), and both kern-triton wheels. kern.latency() is kern-triton's
// with MODE "companion" (kern-triton 3.3.0 is 45% slower, kern never changes); with MODE "own"
// kern itself is 45% slower from the 6th and the two kern-tritons measure the same.
constexpr char kMakeCompanionNightlies[] = R"py(import base64, hashlib, os, sys, zipfile
out, mode = os.path.join(sys.argv[1], "companion"), sys.argv[2]
wheels = os.path.join(out, "wheels")
os.makedirs(wheels, exist_ok=True)
def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
def wheel(name, version, files, requires=()):
    dist = "%s-%s.dist-info" % (name, version)
    files = dict(files)
    files[dist + "/METADATA"] = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
                                 + "".join("Requires-Dist: %s\n" % r for r in requires))
    files[dist + "/WHEEL"] = "Wheel-Version: 1.0\nGenerator: kbisect-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = "".join("%s,%s,%d\n" % (p, record_hash(t.encode()), len(t.encode())) for p, t in files.items())
    files[dist + "/RECORD"] = record + dist + "/RECORD,,\n"
    with zipfile.ZipFile(os.path.join(wheels, "%s-%s-py3-none-any.whl" % (name, version)), "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
for version, latency in (("3.2.0+git4b3bb1f8", 10.0), ("3.3.0+git96316ce5", 14.5 if mode == "companion" else 10.0)):
    wheel("kern_triton", version, {"kern_triton/__init__.py": "def latency():\n    return %r\n" % latency})
for day in range(1, 11):
    pin = "3.2.0+git4b3bb1f8" if day < 6 else "3.3.0+git96316ce5"
    own = 1.45 if mode == "own" and day >= 6 else 1.0
    wheel("kern", "1.0.dev202601%02d" % day,
          {"kern/__init__.py": "import kern_triton\ndef latency():\n    return kern_triton.latency() * %r\n" % own},
          ["kern-triton==" + pin])
)py";

// Serves a directory on a free loopback port; writes the port into a file once listening.
constexpr char kServe[] = R"py(import functools, http.server, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
server.serve_forever()
)py";

// Writes the nightlies of kMakeNightlies into `dir`; returns the source's 30 commits.
std::vector<std::string> MakeNightlies(const TempDir& dir) {
  WriteFile(dir.Join("make.py"), kMakeNightlies);
  const CommandResult made = RunShell(absl::StrCat(
      "/usr/bin/python3 ", ShellQuote(dir.Join("make.py")), " ", ShellQuote(dir.path())));
  EXPECT_EQ(made.exit_code, 0) << made.err;
  std::vector<std::string> commits =
      absl::StrSplit(ReadFile(dir.Join("commits")), '\n', absl::SkipEmpty());
  EXPECT_EQ(commits.size(), 30u);
  return commits;
}

bool HasPipAndVenv() { return RunShell("/usr/bin/python3 -c 'import venv, pip'").exit_code == 0; }

class ArtifactTest : public KbisectRunTest {
 protected:
  void SetUp() override {
    if (!HasPipAndVenv()) {
      GTEST_SKIP() << "needs python3-venv and python3-pip (scripts/install-deps.sh)";
    }
    // The user's virtualenv, as kernel teams have one with torch in it.
    ASSERT_EQ(RunShell(absl::StrCat("/usr/bin/python3 -m venv --system-site-packages ",
                                    ShellQuote(venv_)))
                  .exit_code,
              0);
    ASSERT_NO_FATAL_FAILURE(commits_ = MakeNightlies(tmp_));
  }

  // The commit January `day`'s nightly was built from: the day's last.
  std::string Commit(int day) const { return commits_[day * 3 - 1]; }

  void TearDown() override {
    if (!server_pid_.empty()) RunShell(absl::StrCat("kill ", server_pid_));
  }

  // Serves tmp_ over HTTP; returns the index URL.
  std::string Serve() {
    WriteFile(tmp_.Join("serve.py"), kServe);
    const std::string port_file = tmp_.Join("port");
    const CommandResult started = RunShell(absl::StrCat(
        "/usr/bin/python3 ", ShellQuote(tmp_.Join("serve.py")), " ", ShellQuote(tmp_.path()), " ",
        ShellQuote(port_file), " >/dev/null 2>&1 & echo $!; for i in $(seq 100); do [ -e ",
        ShellQuote(port_file), " ] && break; sleep 0.1; done"));
    server_pid_ = Trim(started.out);
    return absl::StrCat("http://127.0.0.1:", Trim(ReadFile(port_file)), "/simple");
  }

  // What the user's environment holds: pip's view and every file of the venv.
  std::string UserEnvironment() {
    return RunShell(absl::StrCat(ShellQuote(venv_ + "/bin/python"),
                                 " -m pip list --format=freeze 2>&1; find ", ShellQuote(venv_),
                                 " -printf '%p %s %T@\\n' | sort"))
        .out;
  }

  // `kbisect run` in tmp_ (where bench.py is) with the user's venv active, and pip's own
  // variables pointing at a closed port: a pip call that used them would fail.
  CommandResult RunArtifacts(const std::string& args) {
    return RunShell(absl::StrCat(
        "cd ", ShellQuote(tmp_.path()), " && VIRTUAL_ENV=", ShellQuote(venv_),
        " PATH=", ShellQuote(venv_ + "/bin"), ":$PATH PIP_INDEX_URL=http://127.0.0.1:9/simple ",
        "PIP_EXTRA_INDEX_URL=http://127.0.0.1:9/extra KBISECT_CACHE_DIR=",
        ShellQuote(tmp_.Join("cache")), " ", Kbisect(), " run --artifact kern ", args));
  }

  // Runs the bisect and checks the nightlies named, their commits and the user's venv.
  void ExpectJanuarySixth(const std::string& index, const std::string& good, const std::string& bad,
                          int workers) {
    const std::string before = UserEnvironment();
    const std::string json = tmp_.Join(absl::StrCat("result-", workers, ".json"));
    const CommandResult run =
        RunArtifacts(absl::StrCat(index, " ", good, " ", bad, " --workers ", workers, " --json ",
                                  ShellQuote(json), " -- python bench.py"));
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_THAT(run.out, HasSubstr(absl::StrCat("Last good artifact: kern 1.0.dev20260103 (commit ",
                                                Commit(3), ")")));
    EXPECT_THAT(run.out, HasSubstr(absl::StrCat("First bad artifact: kern 1.0.dev20260106 (commit ",
                                                Commit(6), ")")));
    // The first bad nightly also pins another Triton (not installed: --no-deps).
    EXPECT_THAT(run.out, HasSubstr("Companion pin changed: kern-triton 3.2.0+git4b3bb1f8 -> "
                                   "3.3.0+git96316ce5"));
    const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
    EXPECT_EQ(result["status"], "culprit_found");
    EXPECT_EQ(result["artifacts"]["companions"][0]["name"], "kern-triton");
    EXPECT_EQ(result["artifacts"]["first_bad"]["version"], "1.0.dev20260106");
    EXPECT_EQ(result["artifacts"]["first_bad"]["commit"], Commit(6));
    EXPECT_EQ(result["artifacts"]["last_good"]["version"], "1.0.dev20260103");
    // January 8th's nightly cannot be imported: skipped when probed, and named.
    for (const auto& skipped : result["artifacts"]["skipped"]) {
      EXPECT_EQ(skipped, "1.0.dev20260108");
    }
    // The missing days are no candidates; the broken nightly was skipped, never a bound.
    EXPECT_EQ(result["artifacts"]["versions"].size(), good == "2026-01-01" ? 8u : 7u);
    EXPECT_TRUE(result["confirmation"]["confirmed"].get<bool>()) << result["confirmation"].dump();
    EXPECT_EQ(UserEnvironment(), before) << "the bisect changed the user's virtualenv";
  }

  const std::string venv_ = tmp_.Join("venv");
  std::string server_pid_;
  std::vector<std::string> commits_;
};

TEST_F(ArtifactTest, NightliesByDateFromAFindLinksDirectory) {
  ExpectJanuarySixth(absl::StrCat("--find-links ", ShellQuote(tmp_.Join("wheels"))), "2026-01-01",
                     "2026-01-10", 1);
}

TEST_F(ArtifactTest, NightliesByVersionFromAnIndexServedOverHttp) {
  ExpectJanuarySixth(absl::StrCat("--index-url ", Serve()), "1.0.dev20260102", "1.0.dev20260110",
                     4);
}

TEST_F(ArtifactTest, NightliesFromAnIndexOfFiles) {
  ExpectJanuarySixth(absl::StrCat("--index-url file://", tmp_.Join("simple")), "2026-01-01",
                     "1.0.dev20260110", 2);
}

// Then on into the commits between the two nightlies, built from the source with `pip install
// .` on the same workers: the second commit of January 5th, which had no nightly.
TEST_F(ArtifactTest, GoesOnIntoTheCommitsBetweenTheTwoNightlies) {
  const std::string before = UserEnvironment();
  const std::string json = tmp_.Join("stages.json");
  const CommandResult run = RunArtifacts(absl::StrCat(
      "--find-links ", ShellQuote(tmp_.Join("wheels")), " 2026-01-01 2026-01-10 --repo ",
      ShellQuote(tmp_.Join("src")), " --build 'pip install -q --no-deps --no-build-isolation ",
      "--no-index .' --workers 2 --json ", ShellQuote(json), " -- python bench.py"));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("Going on into the commits between 1.0.dev20260103 and "
                                 "1.0.dev20260106"));
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["artifacts"]["first_bad"]["commit"], Commit(6));
  EXPECT_EQ(result["commit_stage"]["status"], "culprit_found") << run.out;
  EXPECT_EQ(result["commit_stage"]["culprit"]["sha"], commits_[13]) << run.out;
  EXPECT_EQ(result["commit_stage"]["good_sha"], Commit(3));
  EXPECT_EQ(result["commit_stage"]["bad_sha"], Commit(6));
  EXPECT_EQ(UserEnvironment(), before) << "the bisect changed the user's virtualenv";
}

// A nightly that pins a new companion: --with-deps installs what each pins, the bisect names the
// first bad nightly and the pin that moved, and --isolate-companions measures the first bad
// nightly with the last good one's companion to say which of the two moved the metric.
TEST_F(ArtifactTest, IsolatingTheCompanionsSaysWhichOfTheTwoMovedTheMetric) {
  for (const std::string mode : {"companion", "own"}) {
    SCOPED_TRACE(mode);
    WriteFile(tmp_.Join("companion.py"), kMakeCompanionNightlies);
    ASSERT_EQ(RunShell(absl::StrCat("rm -rf ", ShellQuote(tmp_.Join("companion")),
                                    " && /usr/bin/python3 ", ShellQuote(tmp_.Join("companion.py")),
                                    " ", ShellQuote(tmp_.path()), " ", mode))
                  .exit_code,
              0);
    const std::string before = UserEnvironment();
    const std::string json = tmp_.Join(mode + ".json");
    const CommandResult run = RunArtifacts(
        absl::StrCat("--find-links ", ShellQuote(tmp_.Join("companion/wheels")),
                     " --with-deps --isolate-companions 2026-01-01 2026-01-10 --workers 2 --json ",
                     ShellQuote(json), " -- python bench.py"));
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_THAT(run.out, HasSubstr("First bad artifact: kern 1.0.dev20260106"));
    EXPECT_THAT(run.out, HasSubstr("Companion pin changed: kern-triton 3.2.0+git4b3bb1f8 -> "
                                   "3.3.0+git96316ce5"));
    const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
    // Both pairings: the first bad kern with the old kern-triton, the last good with the new.
    const std::string expected = mode == "companion" ? "companions" : "artifact";
    if (mode == "companion") {
      EXPECT_THAT(run.out, HasSubstr("Companions isolated: the step came with kern-triton "
                                     "3.2.0+git4b3bb1f8 -> 3.3.0+git96316ce5"));
      EXPECT_THAT(run.out, HasSubstr("Companions isolated (reversed): the step came with "
                                     "kern-triton 3.2.0+git4b3bb1f8 -> 3.3.0+git96316ce5: kern "
                                     "1.0.dev20260105 with kern-triton 3.3.0+git96316ce5 is "
                                     "already slow"));
    } else {
      EXPECT_THAT(run.out, HasSubstr("Companions isolated: the step is kern's own"));
      EXPECT_THAT(run.out, HasSubstr("Companions isolated (reversed): the step is kern's own"));
    }
    const nlohmann::json& isolation = result["artifacts"]["isolation"];
    EXPECT_EQ(isolation["verdict"], expected) << run.out;
    EXPECT_EQ(isolation["forward"]["verdict"], expected) << run.out;
    EXPECT_EQ(isolation["reverse"]["verdict"], expected) << run.out;
    EXPECT_EQ(UserEnvironment(), before) << "the bisect changed the user's virtualenv";
  }
}

TEST_F(ArtifactTest, AnEndTheIndexDoesNotListIsNamedWithTheNearest) {
  const std::string links = absl::StrCat("--find-links ", ShellQuote(tmp_.Join("wheels")));
  CommandResult missing_day =
      RunArtifacts(absl::StrCat(links, " 2026-01-04 2026-01-10 -- python bench.py"));
  EXPECT_EQ(missing_day.exit_code, 1) << missing_day.out << missing_day.err;
  EXPECT_THAT(missing_day.err, HasSubstr("lists no kern nightly of that day"));
  CommandResult missing_version =
      RunArtifacts(absl::StrCat(links, " 1.0.dev20260101 1.0.dev20260105 -- python bench.py"));
  EXPECT_EQ(missing_version.exit_code, 1) << missing_version.out << missing_version.err;
  EXPECT_THAT(missing_version.err, HasSubstr("1.0.dev20260103"));
  EXPECT_THAT(missing_version.err, HasSubstr("1.0.dev20260106"));
  CommandResult swapped =
      RunArtifacts(absl::StrCat(links, " 2026-01-10 2026-01-01 -- python bench.py"));
  EXPECT_EQ(swapped.exit_code, 2) << swapped.out << swapped.err;
  CommandResult no_index = RunArtifacts("2026-01-01 2026-01-10 -- python bench.py");
  EXPECT_EQ(no_index.exit_code, 2) << no_index.out << no_index.err;
  EXPECT_THAT(no_index.err, HasSubstr("--find-links DIR or --index-url URL"));
}

// The same on a cluster: `kbisect submit --artifact --wait` writes the ledger where the workers
// reach it (--ledger-dir), the real kbisect-worker daemons install each nightly into a layer
// over their own Python and run the benchmark in the submitting directory, and the client goes
// on into the commits between the two nightlies on the same workers.
class ArtifactClusterTest : public ClusterFixture {
 protected:
  void SetUp() override {
    if (!HasPipAndVenv()) {
      GTEST_SKIP() << "needs python3-venv and python3-pip (scripts/install-deps.sh)";
    }
    ASSERT_NO_FATAL_FAILURE(commits_ = MakeNightlies(tmp_));
    // The workers' Python: a virtualenv over Debian's, which has setuptools for `pip install .`.
    const std::string venv = tmp_.Join("worker-venv");
    ASSERT_EQ(
        RunShell(absl::StrCat("/usr/bin/python3 -m venv --system-site-packages ", ShellQuote(venv)))
            .exit_code,
        0);
    worker_env_ = absl::StrCat("VIRTUAL_ENV=", ShellQuote(venv),
                               " PATH=", ShellQuote(venv + "/bin"), ":$PATH");
  }
  std::vector<std::string> commits_;
};

TEST_F(ArtifactClusterTest, SubmitBisectsTheNightliesThenTheCommitsOnTheClusterWorkers) {
  std::unique_ptr<Process> coordinator = StartCoordinator();
  std::unique_ptr<Process> w0 = StartWorker("node-n/gpu0", 0);
  std::unique_ptr<Process> w1 = StartWorker("node-n/gpu1", 1);
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 2; }, std::chrono::seconds(15)))
      << w0->log() << w1->log();
  const std::string links = absl::StrCat("--artifact kern --find-links wheels --ledger-dir ",
                                         ShellQuote(tmp_.Join("shared")));

  // The stages after the artifact job are the client's: they need --wait.
  const CommandResult no_wait = Kbisect(
      absl::StrCat("submit ", links, " 2026-01-01 2026-01-10 --repo src -- python bench.py"));
  EXPECT_EQ(no_wait.exit_code, 2) << no_wait.out << no_wait.err;
  EXPECT_THAT(no_wait.err, HasSubstr("needs --wait"));

  const std::string json = tmp_.Join("cluster.json");
  const CommandResult run = Kbisect(absl::StrCat(
      "submit ", links, " 2026-01-01 2026-01-10 --repo src --build 'pip install -q --no-deps ",
      "--no-build-isolation --no-index .' --wait --json ", ShellQuote(json),
      " -- python bench.py"));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err << w0->log();
  EXPECT_THAT(run.out, HasSubstr(absl::StrCat("Last good artifact: kern 1.0.dev20260103 (commit ",
                                              commits_[8], ")")));
  EXPECT_THAT(run.out, HasSubstr(absl::StrCat("First bad artifact: kern 1.0.dev20260106 (commit ",
                                              commits_[17], ")")));
  EXPECT_THAT(run.out, HasSubstr("Going on into the commits between 1.0.dev20260103 and "
                                 "1.0.dev20260106"));
  const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
  EXPECT_EQ(result["status"], "culprit_found");
  EXPECT_EQ(result["artifacts"]["first_bad"]["version"], "1.0.dev20260106");
  EXPECT_EQ(result["commit_stage"]["culprit"]["sha"], commits_[13]) << run.out;
  // Both workers took part in the artifact job.
  std::set<std::string> workers;
  for (const auto& probe : result["probes"]) {
    if (!probe["worker"].get<std::string>().empty())
      workers.insert(probe["worker"].get<std::string>());
  }
  EXPECT_EQ(workers.size(), 2u) << result["probes"].dump();

  // Without --wait the job id comes back and the job bisects the ledger on its own.
  const CommandResult submitted =
      Kbisect(absl::StrCat("submit ", links, " 2026-01-01 2026-01-10 -- python bench.py"));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const std::string job_id = Trim(submitted.out);
  EXPECT_THAT(job_id, ::testing::StartsWith("job-"));
}

}  // namespace
}  // namespace testing
}  // namespace kbisect
