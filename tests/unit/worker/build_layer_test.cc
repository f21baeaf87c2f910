// Copyright 2026 The kbisect Authors.
//
// BuildLayers with real virtual environments (Debian's python3-venv), a real pip and a real
// package: a layer sees the user's environment, pip installs land in the layer, the user's
// environment stays byte-for-byte as it was, and a build that escapes is seen.
#include "worker/build_layer.h"

#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

using ::kbisect::testing::CommandResult;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::TempDir;
using ::kbisect::testing::WriteFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;
using ::testing::StartsWith;

TEST(LayerVariablesTest, PutTheLayerFirstAndKeepWhatWasThere) {
  const std::map<std::string, std::string> vars = LayerVariables(
      "/c/layer", /*python=*/true, {{"PATH", "/usr/bin:/bin"}, {"LD_LIBRARY_PATH", "/opt/lib"}});
  EXPECT_EQ(vars.at("PATH"), "/c/layer/bin:/usr/bin:/bin");
  EXPECT_EQ(vars.at("LD_LIBRARY_PATH"), "/c/layer/lib:/opt/lib");
  EXPECT_EQ(vars.at("PKG_CONFIG_PATH"), "/c/layer/lib/pkgconfig:/c/layer/share/pkgconfig");
  EXPECT_EQ(vars.at("CMAKE_PREFIX_PATH"), "/c/layer");
  EXPECT_EQ(vars.at("KBISECT_PREFIX"), "/c/layer");
  EXPECT_EQ(vars.at("VIRTUAL_ENV"), "/c/layer");
  EXPECT_EQ(vars.at("PIP_NO_BUILD_ISOLATION"), "0");
}

TEST(LayerVariablesTest, APrefixLayerSetsNoPythonAndTheUsersPipSettingWins) {
  EXPECT_EQ(LayerVariables("/l", /*python=*/false, {}).count("VIRTUAL_ENV"), 0u);
  EXPECT_EQ(LayerVariables("/l", /*python=*/true, {{"PIP_NO_BUILD_ISOLATION", "1"}})
                .count("PIP_NO_BUILD_ISOLATION"),
            0u);
}

TEST(ParsePythonBaseTest, ReadsTheLastJsonLine) {
  absl::StatusOr<PythonBase> base = ParsePythonBase(
      "/home/u/venv/bin/python", "virtualenv",
      "hello from sitecustomize\n"
      R"({"site": ["/home/u/venv/lib/python3.11/site-packages"], "user_site": "/root/.local/x", )"
      R"("system": false, "version": "3.11"})"
      "\n");
  ASSERT_TRUE(base.ok()) << base.status();
  EXPECT_THAT(base->site_packages, ElementsAre("/home/u/venv/lib/python3.11/site-packages"));
  EXPECT_EQ(base->user_site, "/root/.local/x");
  EXPECT_FALSE(base->system_site_packages);
  EXPECT_EQ(base->description, "virtualenv /home/u/venv");
  EXPECT_FALSE(ParsePythonBase("/p", "python3", "not json").ok());
}

TEST(FindBasePythonTest, PrefersTheActiveVirtualenvThenPath) {
  TempDir tmp;
  WriteFile(tmp.Join("venv/bin/python"), "#!/bin/sh\n");
  WriteFile(tmp.Join("bin/python3"), "#!/bin/sh\n");
  fs::permissions(tmp.Join("venv/bin/python"), fs::perms::owner_all);
  fs::permissions(tmp.Join("bin/python3"), fs::perms::owner_all);
  auto found = FindBasePython({{"VIRTUAL_ENV", tmp.Join("venv")}, {"PATH", tmp.Join("bin")}});
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->first, tmp.Join("venv/bin/python"));
  EXPECT_EQ(found->second, "virtualenv");
  found = FindBasePython({{"PATH", "/nonexistent:" + tmp.Join("bin")}});
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->first, tmp.Join("bin/python3"));
  EXPECT_FALSE(FindBasePython({{"PATH", "/nonexistent"}}).has_value());
}

TEST(EnvironmentSnapshotTest, NamesWhatABuildAddedChangedOrRemoved) {
  TempDir tmp;
  WriteFile(tmp.Join("site/a.pth"), "/one\n");
  WriteFile(tmp.Join("site/gone.py"), "x = 1\n");
  const EnvironmentSnapshot before = EnvironmentSnapshot::Take(
      {tmp.Join("site"), tmp.Join("user-site"), tmp.Join("empty-user-site")});
  WriteFile(tmp.Join("site/a.pth"), "/two\n");  // Same size, other contents.
  fs::remove(tmp.Join("site/gone.py"));
  WriteFile(tmp.Join("site/__pycache__/m.cpython-311.pyc"), "bytecode");  // Not a change.
  fs::create_directories(tmp.Join("empty-user-site"));  // Made, but holding nothing: no change.
  WriteFile(tmp.Join("user-site/kern.pth"), "/src\n");
  const std::vector<std::string> changes = before.ChangesIn(EnvironmentSnapshot::Take(
      {tmp.Join("site"), tmp.Join("user-site"), tmp.Join("empty-user-site")}));
  EXPECT_THAT(changes, ::testing::UnorderedElementsAre("changed " + tmp.Join("site/a.pth"),
                                                       "removed " + tmp.Join("site/gone.py"),
                                                       "added " + tmp.Join("user-site/kern.pth")));
  EXPECT_THAT(before.ChangesIn(before), IsEmpty());
}

// A user's virtualenv (over Debian's Python, seeing its setuptools and wheel, as kernel teams'
// environments see torch) and a package checkout.
class BuildLayersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (RunShell("/usr/bin/python3 -c 'import venv, setuptools, wheel, pip'").exit_code != 0) {
      GTEST_SKIP() << "needs python3-venv, python3-setuptools, python3-wheel and python3-pip "
                      "(scripts/install-deps.sh)";
    }
    const CommandResult made = RunShell(absl::StrCat(
        "/usr/bin/python3 -m venv --without-pip --system-site-packages ", ShellQuote(venv_)));
    ASSERT_EQ(made.exit_code, 0) << made.err;
    WriteFile(tmp_.Join("kern/pyproject.toml"),
              "[build-system]\nrequires = [\"setuptools>=61\"]\n"
              "build-backend = \"setuptools.build_meta\"\n"
              "[project]\nname = \"kern\"\nversion = \"0.1\"\n");
    WriteFile(tmp_.Join("kern/kern/__init__.py"), "DELAY = 0.02\n");
    env_ = {{"VIRTUAL_ENV", venv_},
            {"PATH", venv_ + "/bin:/usr/bin:/bin"},
            {"HOME", tmp_.Join("home")}};
  }

  // Runs `command` in the package checkout with the layer's variables (and the user's env).
  CommandResult InLayer(const BuildLayer& layer, const std::string& command) {
    std::string assignments;
    std::map<std::string, std::string> env = env_;
    for (const auto& [name, value] : layer.variables) env[name] = value;
    for (const auto& [name, value] : env)
      absl::StrAppend(&assignments, name, "=", ShellQuote(value), " ");
    return RunShell(absl::StrCat("cd ", ShellQuote(tmp_.Join("kern")), " && env -i ", assignments,
                                 "sh -c ", ShellQuote(command)));
  }

  // What the user's environment holds: pip's view and every file of its site-packages.
  std::string UserEnvironment() {
    return RunShell(absl::StrCat(ShellQuote(venv_ + "/bin/python"),
                                 " -m pip list --format=freeze 2>/dev/null; find ",
                                 ShellQuote(venv_), " -newer ", ShellQuote(venv_ + "/pyvenv.cfg"),
                                 " -printf '%p %s\\n' | sort"))
        .out;
  }

  TempDir tmp_;
  const std::string venv_ = tmp_.Join("user-venv");
  std::map<std::string, std::string> env_;
  std::unique_ptr<CommandRunner> runner_ = NewSubprocessRunner();
};

TEST_F(BuildLayersTest, AnEditableInstallLandsInTheLayerAndTheUsersVenvStaysAsItWas) {
  BuildLayers layers(runner_.get(), env_);
  const std::optional<PythonBase> base = layers.Base();
  ASSERT_TRUE(base.has_value());
  EXPECT_EQ(base->description, "virtualenv " + venv_);
  EXPECT_TRUE(base->system_site_packages);
  const std::string user_before = UserEnvironment();
  const EnvironmentSnapshot watched_before = EnvironmentSnapshot::Take(layers.WatchedDirs());

  absl::StatusOr<BuildLayer> layer =
      layers.Create(tmp_.Join("layer"), v1::BUILD_ISOLATION_UNSPECIFIED, {});
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_EQ(layer->isolation, v1::BUILD_ISOLATION_PYTHON);
  // The README's example, offline: no package index is needed.
  const CommandResult installed = InLayer(*layer, "pip install -e . 2>&1");
  ASSERT_EQ(installed.exit_code, 0) << installed.out;
  const CommandResult imported = InLayer(
      *layer, "python -c 'import kern, setuptools, sys; print(kern.__file__); print(sys.prefix)'");
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_THAT(imported.out, StartsWith(tmp_.Join("kern/kern/__init__.py") + "\n"));
  EXPECT_THAT(imported.out, HasSubstr(tmp_.Join("layer")));

  EXPECT_EQ(UserEnvironment(), user_before);
  EXPECT_THAT(watched_before.ChangesIn(EnvironmentSnapshot::Take(layers.WatchedDirs())), IsEmpty());
  EXPECT_NE(
      RunShell(absl::StrCat(ShellQuote(venv_ + "/bin/python"), " -c 'import kern'")).exit_code, 0)
      << "the user's venv imports the build's package";

  // A second layer is fresh: it does not see the first one's install.
  absl::StatusOr<BuildLayer> other =
      layers.Create(tmp_.Join("layer2"), v1::BUILD_ISOLATION_PYTHON, {});
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(InLayer(*other, "cd / && python -c 'import kern'").exit_code, 0);
}

TEST_F(BuildLayersTest, ALayerIsKeptWhileUnchangedAndMadeAgainOnceSomethingWasInstalled) {
  BuildLayers layers(runner_.get(), env_);
  absl::StatusOr<BuildLayer> layer =
      layers.Create(tmp_.Join("layer"), v1::BUILD_ISOLATION_PYTHON, {});
  ASSERT_TRUE(layer.ok()) << layer.status();
  // A file of its own that venv made marks this very directory; a layer made again lacks it.
  const std::string config = tmp_.Join("layer/pyvenv.cfg");
  struct stat made;
  ASSERT_EQ(lstat(config.c_str(), &made), 0);
  // A build that installed nothing (make, cmake --build) leaves the layer as it was: kept.
  absl::StatusOr<BuildLayer> again =
      layers.Create(tmp_.Join("layer"), v1::BUILD_ISOLATION_PYTHON, {});
  ASSERT_TRUE(again.ok()) << again.status();
  struct stat kept;
  ASSERT_EQ(lstat(config.c_str(), &kept), 0);
  EXPECT_EQ(kept.st_ino, made.st_ino) << "an unchanged layer was made again";
  EXPECT_EQ(again->variables, layer->variables);

  // A build that installed into it: the next build gets a fresh layer, without the install.
  ASSERT_EQ(InLayer(*again, "pip install -e . 2>&1").exit_code, 0);
  ASSERT_EQ(InLayer(*again, "cd / && python -c 'import kern'").exit_code, 0);
  absl::StatusOr<BuildLayer> fresh =
      layers.Create(tmp_.Join("layer"), v1::BUILD_ISOLATION_PYTHON, {});
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_NE(InLayer(*fresh, "cd / && python -c 'import kern'").exit_code, 0)
      << "the earlier build's install survived";
  // A file written into it by hand counts too.
  WriteFile(tmp_.Join("layer/bin/extra-tool"), "#!/bin/sh\n");
  ASSERT_TRUE(layers.Create(tmp_.Join("layer"), v1::BUILD_ISOLATION_PYTHON, {}).ok());
  EXPECT_FALSE(std::filesystem::exists(tmp_.Join("layer/bin/extra-tool")));
}

TEST_F(BuildLayersTest, AnUnchangedLayerIsCopiedToAnotherEntryAsItsOwn) {
  BuildLayers layers(runner_.get(), env_);
  absl::StatusOr<BuildLayer> first =
      layers.Create(tmp_.Join("e0/layer"), v1::BUILD_ISOLATION_PYTHON, {});
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(layers.CopyPristine(tmp_.Join("e0/layer"), tmp_.Join("e1/layer")));
  const std::string config = tmp_.Join("e1/layer/pyvenv.cfg");
  struct stat copied;
  ASSERT_EQ(lstat(config.c_str(), &copied), 0);
  absl::StatusOr<BuildLayer> second =
      layers.Create(tmp_.Join("e1/layer"), v1::BUILD_ISOLATION_PYTHON, {});
  ASSERT_TRUE(second.ok()) << second.status();
  struct stat kept;
  ASSERT_EQ(lstat(config.c_str(), &kept), 0);
  EXPECT_EQ(kept.st_ino, copied.st_ino) << "the copy was made again: not taken as unchanged";
  // It is the new entry's own: pip installs into it, and the first layer does not see it.
  const CommandResult where = InLayer(*second, "python -c 'import sys; print(sys.prefix)'");
  EXPECT_EQ(where.out, tmp_.Join("e1/layer") + "\n");
  EXPECT_THAT(ReadFile(tmp_.Join("e1/layer/bin/pip")), Not(HasSubstr(tmp_.Join("e0/"))));
  ASSERT_EQ(InLayer(*second, "pip install -e . 2>&1").exit_code, 0);
  EXPECT_EQ(InLayer(*second, "cd / && python -c 'import kern'").exit_code, 0);
  EXPECT_NE(InLayer(*first, "cd / && python -c 'import kern'").exit_code, 0)
      << "the install reached the layer the copy came from";
  // A layer something was installed into is not copied.
  EXPECT_FALSE(layers.CopyPristine(tmp_.Join("e1/layer"), tmp_.Join("e2/layer")));
  EXPECT_FALSE(std::filesystem::exists(tmp_.Join("e2/layer")));
}

TEST_F(BuildLayersTest, ACopyInstalledWithPipInstallDotIsTheLayersOwn) {
  BuildLayers layers(runner_.get(), env_);
  absl::StatusOr<BuildLayer> layer =
      layers.Create(tmp_.Join("layer"), v1::BUILD_ISOLATION_UNSPECIFIED, {});
  ASSERT_TRUE(layer.ok()) << layer.status();
  ASSERT_EQ(InLayer(*layer, "python -m pip install . 2>&1").exit_code, 0);
  const CommandResult imported =
      InLayer(*layer, "cd / && python -c 'import kern; print(kern.__file__)'");
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_THAT(imported.out, StartsWith(tmp_.Join("layer/lib/")));
}

TEST_F(BuildLayersTest, AnInstallIntoTheUsersVenvIsSeen) {
  BuildLayers layers(runner_.get(), env_);
  absl::StatusOr<BuildLayer> layer =
      layers.Create(tmp_.Join("layer"), v1::BUILD_ISOLATION_UNSPECIFIED, {});
  ASSERT_TRUE(layer.ok()) << layer.status();
  const EnvironmentSnapshot before = EnvironmentSnapshot::Take(layers.WatchedDirs());
  // An absolute path to the user's own Python escapes the layer.
  ASSERT_EQ(
      InLayer(*layer, absl::StrCat(ShellQuote(venv_ + "/bin/python"), " -m pip install -e . 2>&1"))
          .exit_code,
      0);
  const std::vector<std::string> changes =
      before.ChangesIn(EnvironmentSnapshot::Take(layers.WatchedDirs()));
  ASSERT_THAT(changes, ::testing::Not(IsEmpty()));
  const std::string message = EscapedBuildMessage(std::string(40, 'a'), layers.Base(), changes);
  EXPECT_THAT(message, HasSubstr("the build at aaaaaaa changed an environment it must leave alone "
                                 "(virtualenv " +
                                 venv_ + ")"));
  EXPECT_THAT(message, HasSubstr("added " + venv_ + "/lib/python3"));
  EXPECT_THAT(message, HasSubstr("kern"));
}

TEST_F(BuildLayersTest, APrefixLayerIsADirectoryOnThePaths) {
  BuildLayers layers(runner_.get(), env_);
  absl::StatusOr<BuildLayer> layer =
      layers.Create(tmp_.Join("prefix"), v1::BUILD_ISOLATION_PREFIX, {});
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_EQ(layer->variables.count("VIRTUAL_ENV"), 0u);
  ASSERT_EQ(InLayer(*layer,
                    "printf '#!/bin/sh\\necho installed\\n' > \"$KBISECT_PREFIX/bin/tool\" "
                    "&& chmod +x \"$KBISECT_PREFIX/bin/tool\"")
                .exit_code,
            0);
  EXPECT_EQ(InLayer(*layer, "tool").out, "installed\n");
  const BuildLayer none = layers.Open(tmp_.Join("x"), v1::BUILD_ISOLATION_NONE, {});
  EXPECT_THAT(none.variables, IsEmpty());
}

TEST(BuildLayersWithoutPythonTest, AutomaticFallsBackToAPrefixAndPythonIsRefused) {
  TempDir tmp;
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  BuildLayers layers(runner.get(), {{"PATH", "/nonexistent"}});
  EXPECT_FALSE(layers.Base().has_value());
  EXPECT_THAT(layers.WatchedDirs(), IsEmpty());
  absl::StatusOr<BuildLayer> layer =
      layers.Create(tmp.Join("l"), v1::BUILD_ISOLATION_UNSPECIFIED, {});
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_EQ(layer->isolation, v1::BUILD_ISOLATION_PREFIX);
  absl::StatusOr<BuildLayer> python = layers.Create(tmp.Join("p"), v1::BUILD_ISOLATION_PYTHON, {});
  EXPECT_EQ(python.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(python.status().message(), HasSubstr("activate a virtualenv"));
}

}  // namespace
}  // namespace kbisect
