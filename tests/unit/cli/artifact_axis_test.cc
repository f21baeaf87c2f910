// Copyright 2026 The kbisect Authors.
#include "cli/artifact_axis.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::vector<ArtifactVersion> Listed(const std::vector<std::string>& versions) {
  std::vector<ArtifactVersion> listed;
  for (const std::string& text : versions) {
    ArtifactVersion v;
    v.version = text;
    v.parsed = *ParsePep440(text);
    ArtifactFile file;
    file.filename = "kern-" + text + "-py3-none-any.whl";
    file.sha256 = std::string(64, 'a');
    v.files.push_back(file);
    listed.push_back(v);
  }
  return listed;
}

TEST(ResolveArtifactEndsTest, VersionsAndDatesAmongTheListed) {
  const std::vector<ArtifactVersion> listed =
      Listed({"1.0.dev20260101", "1.0.dev20260102", "1.0.dev20260103", "1.0.dev20260106"});
  absl::StatusOr<ArtifactEnds> ends =
      ResolveArtifactEnds(listed, "kern", "wheels", "2026-01-02", "1.0.dev20260106");
  ASSERT_TRUE(ends.ok()) << ends.status();
  EXPECT_EQ(ends->good, 1u);
  EXPECT_EQ(ends->bad, 3u);
  // A day without a nightly, a version the index lacks: NotFound naming what it has.
  absl::StatusOr<ArtifactEnds> day =
      ResolveArtifactEnds(listed, "kern", "wheels", "2026-01-04", "2026-01-06");
  EXPECT_EQ(day.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(day.status().message(), HasSubstr("lists no kern nightly of that day"));
  EXPECT_THAT(day.status().message(),
              HasSubstr("the nearest it lists: 1.0.dev20260103, 1.0.dev20260106"));
  absl::StatusOr<ArtifactEnds> version =
      ResolveArtifactEnds(listed, "kern", "wheels", "1.0.dev20260101", "1.0.dev20260105");
  EXPECT_EQ(version.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(version.status().message(), HasSubstr("1.0.dev20260106"));
  // Swapped ends and words that are neither: usage errors.
  EXPECT_EQ(
      ResolveArtifactEnds(listed, "kern", "wheels", "2026-01-06", "2026-01-01").status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ResolveArtifactEnds(listed, "kern", "wheels", "yesterday", "2026-01-06").status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(LedgerFilesTest, PinTheVersionAndItsFiles) {
  ArtifactFlags flags;
  flags.name = "kern";
  flags.find_links = "/wheels";
  const ArtifactVersion v = Listed({"1.0.dev20260101"})[0];
  std::map<std::string, std::string> files = LedgerFiles(flags, v);
  EXPECT_EQ(files["requirements.txt"],
            "kern==1.0.dev20260101 --hash=sha256:" + std::string(64, 'a') + "\n");
  EXPECT_THAT(files["artifact.json"], HasSubstr("\"index\": \"/wheels\""));
  // With dependencies pip would ask hashes of them too: the artifact is not pinned by hash.
  flags.with_deps = true;
  EXPECT_EQ(LedgerFiles(flags, v)["requirements.txt"], "kern==1.0.dev20260101\n");
}

TEST(LedgerFilesTest, CompanionsArePinnedBesideTheArtifact) {
  ArtifactFlags flags;
  flags.name = "torch";
  flags.index_url = "http://127.0.0.1:8080/simple";
  const std::vector<ArtifactVersion> torch = Listed({"2.8.0.dev20250602"});
  const std::vector<ArtifactVersion> triton = Listed({"3.2.0+git4b3bb1f8"});
  const LedgerEntry entry{torch[0], {{"pytorch-triton", triton[0]}}};
  EXPECT_EQ(entry.Subject("torch"),
            "torch 2.8.0.dev20250602 with pytorch-triton 3.2.0+git4b3bb1f8");
  std::map<std::string, std::string> files = LedgerFiles(flags, entry.version, entry.companions);
  EXPECT_THAT(files["requirements.txt"], HasSubstr("torch==2.8.0.dev20250602 --hash=sha256:"));
  EXPECT_THAT(files["requirements.txt"],
              HasSubstr("\npytorch-triton==3.2.0+git4b3bb1f8 --hash=sha256:"));
  EXPECT_THAT(files["artifact.json"], HasSubstr("\"companions\""));
  EXPECT_EQ(files["version.txt"], "2.8.0.dev20250602\n");
}

TEST(ArtifactInstallCommandTest, OnlyTheIndexGiven) {
  ArtifactFlags flags;
  flags.name = "pytorch-triton";
  flags.import_name = "triton";
  flags.index_url = "http://127.0.0.1:8080/simple";
  const std::string command = ArtifactInstallCommand(flags);
  EXPECT_THAT(command, HasSubstr("--no-deps --index-url http://127.0.0.1:8080/simple"));
  EXPECT_THAT(command, HasSubstr("-u PIP_EXTRA_INDEX_URL"));
  EXPECT_THAT(command, HasSubstr("PIP_CONFIG_FILE=/dev/null"));
  EXPECT_THAT(command, HasSubstr("import triton"));
  // A failed install whose index is out of reach is the worker's problem (exit 75).
  EXPECT_THAT(command, HasSubstr("http://127.0.0.1:8080/simple/pytorch-triton/"));
  EXPECT_THAT(command, HasSubstr("exit 75"));
  flags.index_url.clear();
  flags.find_links = "/w";
  flags.with_deps = true;
  EXPECT_THAT(ArtifactInstallCommand(flags),
              HasSubstr("install --quiet --no-index --find-links /w"));
  EXPECT_THAT(ArtifactInstallCommand(flags), Not(HasSubstr("--no-deps")));
}

TEST(CompanionChangesTest, PinsThatMovedAreNamed) {
  EXPECT_EQ(PinnedRequirements("pytorch-triton==3.2.0+git4b3bb1f8; platform_system == \"Linux\"\n"
                               "filelock\nsympy>=1.13\nNVIDIA_cudnn (==9.1.0.70)\n"),
            (std::map<std::string, std::string>{{"nvidia-cudnn", "9.1.0.70"},
                                                {"pytorch-triton", "3.2.0+git4b3bb1f8"}}));
  const std::vector<CompanionChange> changes =
      CompanionChanges("pytorch-triton==3.2.0+git4b3bb1f8\nnumpy==1.0\n",
                       "pytorch-triton==3.3.0+git96316ce5\nnumpy==1.0\nnew==2\n");
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].name, "pytorch-triton");
  EXPECT_EQ(changes[0].before, "3.2.0+git4b3bb1f8");
  EXPECT_EQ(changes[0].after, "3.3.0+git96316ce5");
}

TEST(CombineIsolationVerdictsTest, BothPairingsMustAgree) {
  EXPECT_EQ(CombineIsolationVerdicts("artifact", "artifact"), "artifact");
  EXPECT_EQ(CombineIsolationVerdicts("companions", "companions"), "companions");
  EXPECT_EQ(CombineIsolationVerdicts("artifact", "companions"), "both");
  EXPECT_EQ(CombineIsolationVerdicts("companions", "artifact"), "both");
  EXPECT_EQ(CombineIsolationVerdicts("error", "companions"), "companions");
  EXPECT_EQ(CombineIsolationVerdicts("artifact", "error"), "artifact");
  EXPECT_EQ(CombineIsolationVerdicts("none", "artifact"), "undecided");
  EXPECT_EQ(CombineIsolationVerdicts("none", "none"), "none");
}

// The command runs for real with the python3 on PATH: pip is installed there, and says no commit.
TEST(TrackedPackageToolTest, PrintsTheInstalledVersion) {
  absl::StatusOr<std::pair<std::string, std::string>> tool = TrackedPackageTool("pip");
  ASSERT_TRUE(tool.ok()) << tool.status();
  EXPECT_EQ(tool->first, "package:pip");
  testing::CommandResult ran = testing::RunShell(tool->second);
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  testing::CommandResult pip = testing::RunShell(
      "python3 -c 'from importlib import metadata; print(metadata.version(\"pip\"))'");
  EXPECT_EQ(ran.out, pip.out);
  EXPECT_EQ(TrackedPackageTool("pytorch-triton=triton")->first, "package:pytorch-triton");
  EXPECT_FALSE(TrackedPackageTool("torch=").ok());
  EXPECT_FALSE(TrackedPackageTool("").ok());
}

TEST(NightlyReleaseCommitTest, ThePyTorchNightlyBranchNamesItsMainCommit) {
  const std::string main_commit = "0123456789abcdef0123456789abcdef01234567";
  EXPECT_EQ(NightlyReleaseCommit("2025-06-02 nightly release (" + main_commit + ")"), main_commit);
  EXPECT_EQ(NightlyReleaseCommit("Fix the build (#1234)"), std::nullopt);
  EXPECT_EQ(NightlyReleaseCommit("2025-06-02 nightly release (0123abc)"), std::nullopt);
}

}  // namespace
}  // namespace kbisect
