// Copyright 2026 The kbisect Authors.
#include "common/artifact/package_index.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;
using ::testing::Pair;

using NameVersion = std::pair<std::string, std::string>;

// The sha256sum of the file at `path`, as the coreutils tool prints it.
std::string Sha256Sum(const std::string& path) {
  testing::CommandResult result = testing::RunShell("sha256sum " + testing::ShellQuote(path));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return result.out.substr(0, result.out.find(' '));
}

std::vector<std::string> VersionTexts(const std::vector<ArtifactVersion>& versions) {
  std::vector<std::string> texts;
  for (const ArtifactVersion& v : versions) texts.push_back(v.version);
  return texts;
}

std::vector<std::string> Filenames(const ArtifactVersion& version) {
  std::vector<std::string> names;
  for (const ArtifactFile& file : version.files) names.push_back(file.filename);
  return names;
}

// Versions with one file each (no hash), in the given order.
std::vector<ArtifactVersion> Versions(const std::vector<std::string>& texts) {
  std::vector<ArtifactVersion> versions;
  for (const std::string& text : texts) {
    absl::StatusOr<Pep440Version> parsed = ParsePep440(text);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    versions.push_back({text, *parsed, {{"p-" + text + ".tar.gz", "", "", text}}});
  }
  return versions;
}

TEST(ParseDistributionFilenameTest, Wheels) {
  EXPECT_THAT(ParseDistributionFilename("torch-2.6.0.dev20250101+cpu-cp311-cp311-linux_x86_64.whl"),
              Optional(NameVersion("torch", "2.6.0.dev20250101+cpu")));
  EXPECT_THAT(ParseDistributionFilename(
                  "pytorch_triton-3.2.0+git4b3bb1f8-1-cp311-cp311-manylinux_2_28_x86_64.whl"),
              Optional(NameVersion("pytorch-triton", "3.2.0+git4b3bb1f8")));
  EXPECT_THAT(
      ParseDistributionFilename("jaxlib-0.4.36.dev20241001-cp311-cp311-manylinux2014_x86_64.whl"),
      Optional(NameVersion("jaxlib", "0.4.36.dev20241001")));
  EXPECT_THAT(ParseDistributionFilename("Jax_Lib-1.0-py3-none-any.whl"),
              Optional(NameVersion("jax-lib", "1.0")));
}

TEST(ParseDistributionFilenameTest, Sdists) {
  EXPECT_THAT(ParseDistributionFilename("python-dateutil-2.8.2.tar.gz"),
              Optional(NameVersion("python-dateutil", "2.8.2")));
  EXPECT_THAT(ParseDistributionFilename("foo-1.0.zip"), Optional(NameVersion("foo", "1.0")));
  EXPECT_THAT(ParseDistributionFilename("foo-1.0-1.tar.bz2"),
              Optional(NameVersion("foo", "1.0-1")));
}

TEST(ParseDistributionFilenameTest, NoneForOtherNames) {
  for (const char* name : {"README.md", "torch.whl", "torch-2.0.whl", "torch-2.0-a-b-c-d-e.whl",
                           "foo.tar.gz", "foo-bar.tar.gz", "-1.0.tar.gz", "torch-2.0-py3.egg"}) {
    EXPECT_EQ(ParseDistributionFilename(name), std::nullopt) << name;
  }
}

TEST(ArtifactVersionTest, DigestIsTheSortedHashesOrFilenames) {
  ArtifactVersion v;
  v.files = {
      {"b.whl", "u", "ffff", "1.0"}, {"a.whl", "u", "", "1.0"}, {"c.whl", "u", "0000", "1.0"}};
  EXPECT_EQ(v.Digest(), "0000,a.whl,ffff");
}

TEST(ListFindLinksTest, GroupsADirectorysDistributionsByVersionWithTheirHashes) {
  testing::TempDir dir("artifact-find-links");
  const std::vector<std::string> wheels = {
      "torch-2.6.0.dev20250102+cpu-cp311-cp311-linux_x86_64.whl",
      "torch-2.6.0.dev20250101+cpu-cp312-cp312-linux_x86_64.whl",
      "torch-2.6.0.dev20250101+cpu-cp311-cp311-linux_x86_64.whl",
      "torch-2.5.0.tar.gz",
      "torchvision-0.21.0.dev20250101+cpu-cp311-cp311-linux_x86_64.whl",  // Another project.
      "torch-notaversion-cp311-cp311-linux_x86_64.whl",                   // Does not parse.
      "notes.txt",
      "sub/torch-9.0-py3-none-any.whl",  // Not recursive.
  };
  for (const std::string& name : wheels) testing::WriteFile(dir.Join(name), "bytes of " + name);
  absl::StatusOr<std::vector<ArtifactVersion>> versions = ListFindLinks(dir.path(), "Torch");
  ASSERT_TRUE(versions.ok()) << versions.status();
  EXPECT_THAT(VersionTexts(*versions),
              ElementsAre("2.5.0", "2.6.0.dev20250101+cpu", "2.6.0.dev20250102+cpu"));
  EXPECT_THAT(Filenames((*versions)[1]),
              ElementsAre("torch-2.6.0.dev20250101+cpu-cp311-cp311-linux_x86_64.whl",
                          "torch-2.6.0.dev20250101+cpu-cp312-cp312-linux_x86_64.whl"));
  for (const ArtifactVersion& version : *versions) {
    for (const ArtifactFile& file : version.files) {
      const std::string path = dir.Join(file.filename);
      EXPECT_EQ(file.sha256, Sha256Sum(path)) << file.filename;
      EXPECT_EQ(file.url, "file://" + path);
      EXPECT_EQ(file.version, version.version);
    }
  }
  EXPECT_EQ((*versions)[1].Digest().size(), 64u * 2 + 1);
}

TEST(ListFindLinksTest, ARelativeDirectoryGivesAbsoluteUrls) {
  testing::TempDir dir("artifact-find-links-relative");
  testing::WriteFile(dir.Join("wheels/foo-1.0-py3-none-any.whl"), "x");
  const std::filesystem::path old = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  absl::StatusOr<std::vector<ArtifactVersion>> versions = ListFindLinks("wheels", "foo");
  std::filesystem::current_path(old);
  ASSERT_TRUE(versions.ok()) << versions.status();
  ASSERT_EQ(versions->size(), 1u);
  EXPECT_EQ((*versions)[0].files[0].url, "file://" +
                                             std::filesystem::canonical(dir.path()).string() +
                                             "/wheels/foo-1.0-py3-none-any.whl");
}

TEST(ListFindLinksTest, NotFoundWhenTheDirectoryIsMissing) {
  testing::TempDir dir("artifact-find-links-missing");
  absl::StatusOr<std::vector<ArtifactVersion>> versions = ListFindLinks(dir.Join("nope"), "torch");
  EXPECT_EQ(versions.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(versions.status().message(), HasSubstr(dir.Join("nope")));
}

constexpr char kTorchPage[] = R"html(<!DOCTYPE html>
<html>
  <head><meta name="pypi:repository-version" content="1.0"><title>Links for torch</title></head>
  <body>
    <h1>Links for torch</h1>
    <a href="/whl/nightly/cpu/torch-2.6.0.dev20250101%2Bcpu-cp311-cp311-linux_x86_64.whl#sha256=AB12CD34" data-requires-python="&gt;=3.9">torch-2.6.0.dev20250101+cpu-cp311-cp311-linux_x86_64.whl</a><br/>
    <a href="../../packages/torch-2.6.0.dev20250102%2Bcpu-cp311-cp311-linux_x86_64.whl#sha256=ef56" data-requires-python="&gt;=3.9" >torch-2.6.0.dev20250102+cpu-cp311-cp311-linux_x86_64.whl</a><br/>
    <a data-requires-python="&gt;=3.9"
       href='http://files.example.org/whl/torch-2.6.0.dev20250102%2Bcpu-cp312-cp312-linux_x86_64.whl?a=1&amp;b=2#sha256=0a0b'>torch-2.6.0.dev20250102+cpu-cp312-cp312-linux_x86_64.whl</a><br/>
    <a href="torch-2.5.0-cp311-cp311-linux_x86_64.whl#md5=99aa">torch-2.5.0-cp311-cp311-linux_x86_64.whl</a><br/>
    <A HREF=./torch-2.4.0.tar.gz>torch-2.4.0.tar.gz</A><br/>
    <a href="../torchvision/torchvision-0.21.0.dev20250101%2Bcpu-cp311-cp311-linux_x86_64.whl">torchvision</a>
    <a name="no-href">nothing</a>
    <abbr title="torch-1.0.tar.gz">not an anchor</abbr>
  </body>
</html>
)html";

TEST(ParseSimpleIndexPageTest, ResolvesHrefsAndReadsHashes) {
  absl::StatusOr<std::vector<ArtifactVersion>> versions =
      ParseSimpleIndexPage(kTorchPage, "http://mirror.example:8080/simple/torch/", "torch");
  ASSERT_TRUE(versions.ok()) << versions.status();
  ASSERT_THAT(VersionTexts(*versions),
              ElementsAre("2.4.0", "2.5.0", "2.6.0.dev20250101+cpu", "2.6.0.dev20250102+cpu"));
  const ArtifactFile& sdist = (*versions)[0].files[0];
  EXPECT_EQ(sdist.url, "http://mirror.example:8080/simple/torch/torch-2.4.0.tar.gz");
  EXPECT_EQ(sdist.sha256, "");
  const ArtifactFile& relative = (*versions)[1].files[0];
  EXPECT_EQ(relative.url,
            "http://mirror.example:8080/simple/torch/torch-2.5.0-cp311-cp311-linux_x86_64.whl");
  EXPECT_EQ(relative.sha256, "");  // Only sha256 fragments count.
  const ArtifactFile& absolute = (*versions)[2].files[0];
  EXPECT_EQ(absolute.filename, "torch-2.6.0.dev20250101+cpu-cp311-cp311-linux_x86_64.whl");
  EXPECT_EQ(absolute.url,
            "http://mirror.example:8080/whl/nightly/cpu/"
            "torch-2.6.0.dev20250101%2Bcpu-cp311-cp311-linux_x86_64.whl");
  EXPECT_EQ(absolute.sha256, "ab12cd34");
  ASSERT_EQ((*versions)[3].files.size(), 2u);
  EXPECT_EQ((*versions)[3].files[0].url,
            "http://mirror.example:8080/packages/"
            "torch-2.6.0.dev20250102%2Bcpu-cp311-cp311-linux_x86_64.whl");
  EXPECT_EQ((*versions)[3].files[1].url,
            "http://files.example.org/whl/"
            "torch-2.6.0.dev20250102%2Bcpu-cp312-cp312-linux_x86_64.whl?a=1&b=2");
  EXPECT_EQ((*versions)[3].Digest(), "0a0b,ef56");
}

TEST(ParseSimpleIndexPageTest, ResolvesAgainstAPageWithoutATrailingSlashAndFileUrls) {
  const std::string page = R"(<a href="../pkgs/./x/../foo-1.0.tar.gz">f</a>
      <a href="//cdn.example/foo-2.0.tar.gz">g</a>)";
  absl::StatusOr<std::vector<ArtifactVersion>> versions =
      ParseSimpleIndexPage(page, "file:///srv/simple/foo/index.html", "foo");
  ASSERT_TRUE(versions.ok()) << versions.status();
  ASSERT_EQ(versions->size(), 2u);
  EXPECT_EQ((*versions)[0].files[0].url, "file:///srv/simple/pkgs/foo-1.0.tar.gz");
  EXPECT_EQ((*versions)[1].files[0].url, "file://cdn.example/foo-2.0.tar.gz");
}

TEST(ParseSimpleIndexPageTest, AnEmptyPageListsNothingAndARelativePageUrlIsAnError) {
  absl::StatusOr<std::vector<ArtifactVersion>> empty =
      ParseSimpleIndexPage("<html></html>", "http://h/simple/torch/", "torch");
  ASSERT_TRUE(empty.ok());
  EXPECT_THAT(*empty, IsEmpty());
  EXPECT_EQ(ParseSimpleIndexPage(kTorchPage, "simple/torch/", "torch").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NearestVersionsTest, SomeBelowAndSomeAboveInOrder) {
  const std::vector<ArtifactVersion> versions =
      Versions({"1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9"});
  const Pep440Version wanted = *ParsePep440("1.4.5");
  EXPECT_THAT(NearestVersions(versions, wanted, 4), ElementsAre("1.3", "1.4", "1.5", "1.6"));
  EXPECT_THAT(NearestVersions(versions, *ParsePep440("1.4"), 3), ElementsAre("1.3", "1.4", "1.5"));
  EXPECT_THAT(NearestVersions(versions, *ParsePep440("0.1"), 3), ElementsAre("1.0", "1.1", "1.2"));
  EXPECT_THAT(NearestVersions(versions, *ParsePep440("9"), 3), ElementsAre("1.7", "1.8", "1.9"));
  EXPECT_THAT(NearestVersions(versions, wanted, 0), IsEmpty());
  EXPECT_EQ(NearestVersions(versions, wanted, 50).size(), 10u);
  EXPECT_THAT(NearestVersions(Versions({"2.0", "1.0", "3.0"}), *ParsePep440("2.5"), 2),
              ElementsAre("2.0", "3.0"));
}

TEST(FindByDateTest, TheHighestVersionOfThatNight) {
  const std::vector<ArtifactVersion> versions = Versions(
      {"2.6.0.dev20250101", "2.6.0.dev20250101+cpu", "2.6.0.dev20250102", "3.2.0+git4b3bb1f8"});
  EXPECT_THAT(FindByDate(versions, "2025-01-01"), Optional(1u));
  EXPECT_THAT(FindByDate(versions, "2025-01-02"), Optional(2u));
  EXPECT_EQ(FindByDate(versions, "2025-01-03"), std::nullopt);
  EXPECT_EQ(FindByDate(versions, "20250101"), std::nullopt);
}

TEST(LooksLikeDateTest, OnlyCalendarDaysAsYyyyMmDd) {
  EXPECT_TRUE(LooksLikeDate("2024-02-29"));
  EXPECT_TRUE(LooksLikeDate("2025-12-31"));
  for (const char* text :
       {"2025-02-29", "2025-13-01", "2025-00-10", "2025-01-00", "2025-1-01", "2025-01-01x",
        "abcd-ef-gh", "20250101", "", "2025/01/01", "0000-01-01", "+025-01-01"}) {
    EXPECT_FALSE(LooksLikeDate(text)) << text;
  }
}

}  // namespace
}  // namespace kbisect
