// Copyright 2026 The kbisect Authors.
//
// `kbisect run --build 'pip install -e .'` on a Python kernel package, as Helion's, Triton's and
// vLLM's benchmarks are run: the benchmark imports the package through the active virtualenv.
// Real virtualenvs (Debian's python3-venv), real pip, setuptools and a real C extension; the
// confirmation on. Each case asserts the planted culprit, a confirmed step, exit 0, that every
// benchmark run imported its own commit's code (the benchmark checks it and fails otherwise), and
// that the user's virtualenv is byte-for-byte as it was.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/run_fixture.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace testing {
namespace {

using ::testing::HasSubstr;

constexpr int kCommits = 30;
constexpr int kCulprit = 19;

// Generates the package's history: commit i writes REV = i; from kCulprit on the kernel sleeps
// 50% longer. With `extension`, the kernel is a C extension (kern/_fast.c) that the build
// compiles; its delay is a compiled-in constant, so only a rebuilt extension moves.
constexpr char kMakeRepo[] = R"sh(set -e
repo="$1"; extension="$2"; commits="$3"; culprit="$4"
mkdir -p "$repo/kern" "$repo/benchmarks"; cd "$repo"
git init -q; git config user.email t@example.com; git config user.name test
cat > pyproject.toml <<'EOF'
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"
[project]
name = "kern"
version = "0.1"
[tool.setuptools]
packages = ["kern"]
EOF
if [ "$extension" = 1 ]; then
  cat > setup.py <<'EOF'
from setuptools import Extension, setup
setup(ext_modules=[Extension("kern._fast", ["kern/_fast.c"])])
EOF
fi
# The benchmark: it fails unless the kern it imported is this checkout's commit.
cat > benchmarks/bench.py <<'EOF'
import os, re, sys, time
import kern
want = int(re.search(r"REV = (\d+)", open("kern/__init__.py").read()).group(1))
if kern.REV != want or kern.rev() != want:
    sys.exit("imported kern REV %d (rev() %d) from %s, but this checkout is REV %d"
             % (kern.REV, kern.rev(), kern.__file__, want))
start = time.perf_counter()
kern.run()
print("Latency: %.3f ms" % ((time.perf_counter() - start) * 1000))
EOF
for i in $(seq 0 "$commits"); do
  delay=0.020; [ "$i" -ge "$culprit" ] && delay=0.030
  if [ "$extension" = 1 ]; then
    cat > kern/__init__.py <<EOF
from kern._fast import delay, rev
import time
REV = $i
def run():
    time.sleep(delay())
EOF
    cat > kern/_fast.c <<EOF
#define PY_SSIZE_T_CLEAN
#include <Python.h>
static PyObject* delay(PyObject* self, PyObject* args) { return PyFloat_FromDouble($delay); }
static PyObject* rev(PyObject* self, PyObject* args) { return PyLong_FromLong($i); }
static PyMethodDef methods[] = {{"delay", delay, METH_NOARGS, ""}, {"rev", rev, METH_NOARGS, ""},
                                {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fast", NULL, -1, methods};
PyMODINIT_FUNC PyInit__fast(void) { return PyModule_Create(&module); }
EOF
  else
    cat > kern/__init__.py <<EOF
import time
REV = $i
def rev():
    return REV
def run():
    time.sleep($delay)
EOF
  fi
  git add -A; git commit -qm "commit $i"
  if [ "$i" -eq 0 ]; then git tag v1.0; fi
  if [ "$i" -eq "$culprit" ]; then git rev-parse HEAD > ../culprit; fi
done
)sh";

class PythonBuildsTest : public KbisectRunTest {
 protected:
  void SetUp() override {
    if (RunShell("/usr/bin/python3 -c 'import venv, setuptools, wheel, pip, sysconfig, os; "
                 "assert os.path.exists(sysconfig.get_paths()[\"include\"] + \"/Python.h\")'")
            .exit_code != 0) {
      GTEST_SKIP() << "needs python3-venv, python3-pip, python3-setuptools, python3-wheel and "
                      "python3-dev (scripts/install-deps.sh)";
    }
    // The user's virtualenv, seeing Debian's setuptools and wheel as kernel teams' see torch.
    const CommandResult made = RunShell(
        absl::StrCat("/usr/bin/python3 -m venv --system-site-packages ", ShellQuote(venv_)));
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }

  // The planted culprit of a package history generated at `repo`.
  std::string MakePackage(const std::string& repo, bool extension) {
    const std::string script = tmp_.Join("make-package.sh");
    WriteFile(script, kMakeRepo);
    const CommandResult made =
        RunShell(absl::StrCat("sh ", ShellQuote(script), " ", ShellQuote(repo), " ",
                              extension ? 1 : 0, " ", kCommits, " ", kCulprit));
    EXPECT_EQ(made.exit_code, 0) << made.err;
    return Trim(ReadFile(tmp_.Join("culprit")));
  }

  // What the user's environment holds: pip's view and every file of the venv with its size and
  // modification time.
  std::string UserEnvironment() {
    return RunShell(absl::StrCat(ShellQuote(venv_ + "/bin/python"),
                                 " -m pip list --format=freeze 2>&1; find ", ShellQuote(venv_),
                                 " -printf '%p %s %T@\\n' | sort"))
        .out;
  }

  // `kbisect run` with the user's venv active (as `source venv/bin/activate` leaves it).
  CommandResult RunInVenv(const std::string& args) {
    return RunShell(absl::StrCat(
        "cd ", ShellQuote(tmp_.path()), " && VIRTUAL_ENV=", ShellQuote(venv_),
        " PATH=", ShellQuote(venv_ + "/bin"),
        ":$PATH KBISECT_CACHE_DIR=", ShellQuote(tmp_.Join("cache")), " ", Kbisect(), " ", args));
  }

  // Bisects a generated package with `build` on `workers` workers and checks every promise.
  void ExpectCulpritWithUntouchedVenv(bool extension, const std::string& build, int workers) {
    const std::string repo = tmp_.Join("repo");
    const std::string culprit = MakePackage(repo, extension);
    ASSERT_EQ(culprit.size(), 40u);
    const std::string before = UserEnvironment();
    const std::string json = tmp_.Join("result.json");
    const CommandResult run = RunInVenv(absl::StrCat(
        "run v1.0 HEAD --repo ", ShellQuote(repo), " --workers ", workers, " --build ",
        ShellQuote(build), " --json ", ShellQuote(json), " -- python benchmarks/bench.py"));
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_THAT(run.out, HasSubstr("Builds install into per-build environments layered over "
                                   "virtualenv " +
                                   venv_));
    if (run.exit_code == 0) {
      const nlohmann::json result = nlohmann::json::parse(ReadFile(json));
      EXPECT_EQ(result["status"], "culprit_found") << run.out;
      EXPECT_EQ(result["culprit"]["sha"], culprit) << run.out;
      EXPECT_TRUE(result["confirmation"]["confirmed"].get<bool>()) << result["confirmation"].dump();
      // Every measured probe ran the benchmark, which exits 1 unless it imported its commit.
      for (const auto& probe : result["probes"]) {
        EXPECT_NE(probe.value("outcome", ""), "bench_failed") << probe.dump();
      }
    }
    EXPECT_EQ(UserEnvironment(), before) << "the bisect changed the user's virtualenv";
    EXPECT_NE(
        RunShell(absl::StrCat("cd / && ", ShellQuote(venv_ + "/bin/python"), " -c 'import kern'"))
            .exit_code,
        0)
        << "the user's venv imports a build's kern";
  }

  const std::string venv_ = tmp_.Join("venv");
};

TEST_F(PythonBuildsTest, EditableInstallOnOneWorker) {
  ExpectCulpritWithUntouchedVenv(/*extension=*/false, "pip install -e .", 1);
}

TEST_F(PythonBuildsTest, EditableInstallOnFourWorkers) {
  ExpectCulpritWithUntouchedVenv(/*extension=*/false, "pip install -e .", 4);
}

TEST_F(PythonBuildsTest, CExtensionBuiltInPlaceOnFourWorkers) {
  ExpectCulpritWithUntouchedVenv(/*extension=*/true, "pip install -e .", 4);
}

TEST_F(PythonBuildsTest, CopyInstalledWithPipInstallDotOnTwoWorkers) {
  ExpectCulpritWithUntouchedVenv(/*extension=*/false, "pip install .", 2);
}

TEST_F(PythonBuildsTest, ABuildThatInstallsIntoTheUsersVenvIsStoppedNotMeasured) {
  const std::string repo = tmp_.Join("repo");
  ASSERT_EQ(MakePackage(repo, /*extension=*/false).size(), 40u);
  const CommandResult run = RunInVenv(
      absl::StrCat("run v1.0 HEAD --repo ", ShellQuote(repo), " --workers 2 --build ",
                   ShellQuote(absl::StrCat(ShellQuote(venv_ + "/bin/pip"), " install -e .")),
                   " -- python benchmarks/bench.py"));
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.out + run.err, HasSubstr("changed an environment it must leave alone "
                                           "(virtualenv " +
                                           venv_ + ")"));
  EXPECT_THAT(run.out + run.err, HasSubstr("added " + venv_ + "/lib/python3"));
}

}  // namespace
}  // namespace testing
}  // namespace kbisect
