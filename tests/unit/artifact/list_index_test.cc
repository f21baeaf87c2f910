// Copyright 2026 The kbisect Authors.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/artifact/package_index.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kWheel1[] = "torch-2.6.0.dev20250101%2Bcpu-cp311-cp311-linux_x86_64.whl";
constexpr char kWheel2[] = "torch-2.6.0.dev20250102%2Bcpu-cp311-cp311-linux_x86_64.whl";

// A PEP 503 page for torch whose files live in ../../packages/.
std::string TorchPage() {
  return absl::StrCat(
      "<html><body>\n<a href=\"../../packages/", kWheel2,
      "#sha256=2222\">w2</a><br/>\n<a href=\"../../packages/", kWheel1,
      "#sha256=1111\" data-requires-python=\"&gt;=3.9\">w1</a><br/>\n</body></html>");
}

std::vector<std::string> VersionTexts(const std::vector<ArtifactVersion>& versions) {
  std::vector<std::string> texts;
  for (const ArtifactVersion& v : versions) texts.push_back(v.version);
  return texts;
}

TEST(ListIndexFileTest, ReadsAProjectsIndexHtml) {
  testing::TempDir dir("artifact-file-index");
  testing::WriteFile(dir.Join("simple/torch/index.html"), TorchPage());
  for (const std::string& url : {absl::StrCat("file://", dir.Join("simple")),
                                 absl::StrCat("file://", dir.Join("simple"), "/")}) {
    absl::StatusOr<std::vector<ArtifactVersion>> versions = ListIndex(url, "Torch");
    ASSERT_TRUE(versions.ok()) << versions.status();
    ASSERT_THAT(VersionTexts(*versions),
                ElementsAre("2.6.0.dev20250101+cpu", "2.6.0.dev20250102+cpu"));
    EXPECT_EQ((*versions)[0].files[0].url, absl::StrCat("file://", dir.Join("packages/"), kWheel1));
    EXPECT_EQ((*versions)[0].files[0].sha256, "1111");
  }
}

TEST(ListIndexFileTest, ListsAProjectDirectoryWithoutIndexHtmlLikeFindLinks) {
  testing::TempDir dir("artifact-file-index-dir");
  const std::string wheel = "pytorch_triton-3.2.0+git4b3bb1f8-cp311-cp311-linux_x86_64.whl";
  testing::WriteFile(dir.Join("simple/pytorch-triton/" + wheel), "triton bytes");
  absl::StatusOr<std::vector<ArtifactVersion>> versions =
      ListIndex("file://" + dir.Join("simple"), "pytorch_triton");
  ASSERT_TRUE(versions.ok()) << versions.status();
  ASSERT_EQ(versions->size(), 1u);
  const ArtifactFile& file = (*versions)[0].files[0];
  EXPECT_EQ(file.url, "file://" + dir.Join("simple/pytorch-triton/" + wheel));
  EXPECT_EQ(file.sha256, "7ff1ced6468e387972c1135b3646375355392ddba86eaac2ccb8e28363eaa00c")
      << "update from: printf 'triton bytes' | sha256sum";
}

TEST(ListIndexFileTest, MissingProjectAndMissingIndexAreNotFound) {
  testing::TempDir dir("artifact-file-index-missing");
  testing::WriteFile(dir.Join("simple/torch/index.html"), TorchPage());
  absl::StatusOr<std::vector<ArtifactVersion>> jax =
      ListIndex("file://" + dir.Join("simple"), "jax");
  EXPECT_EQ(jax.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(jax.status().message(), HasSubstr("has no project jax"));
  absl::StatusOr<std::vector<ArtifactVersion>> none =
      ListIndex("file://" + dir.Join("nope"), "torch");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
}

TEST(ListIndexTest, OtherSchemes) {
  absl::StatusOr<std::vector<ArtifactVersion>> https =
      ListIndex("https://download.pytorch.org/whl/nightly", "torch");
  EXPECT_EQ(https.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(https.status().message(), HasSubstr("https://download.pytorch.org/whl/nightly"));
  EXPECT_EQ(ListIndex("ftp://h/simple", "torch").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ListIndex("http:///simple", "torch").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A PEP 503 index on 127.0.0.1, served from a thread for the test's lifetime.
class LocalIndex {
 public:
  LocalIndex() {
    server_.Get("/simple/torch/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(TorchPage(), "text/html");
    });
    server_.Get("/simple/pytorch-triton/", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/mirror/triton/");  // A relative href resolves against this one.
    });
    server_.Get("/mirror/triton/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(
          "<a href=\"pytorch_triton-3.2.0%2Bgit4b3bb1f8-cp311-cp311-linux_x86_64.whl\">t</a>",
          "text/html");
    });
    server_.Get("/simple/loop/", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/simple/loop2/");
    });
    server_.Get("/simple/loop2/", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/simple/loop/");
    });
    server_.Get("/simple/broken/",
                [](const httplib::Request&, httplib::Response& res) { res.status = 503; });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LocalIndex() {
    server_.stop();
    thread_.join();
  }

  std::string Url(const std::string& path) const {
    return absl::StrCat("http://127.0.0.1:", port_, path);
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

TEST(ListIndexHttpTest, FetchesAProjectPage) {
  LocalIndex index;
  absl::StatusOr<std::vector<ArtifactVersion>> versions = ListIndex(index.Url("/simple"), "torch");
  ASSERT_TRUE(versions.ok()) << versions.status();
  ASSERT_THAT(VersionTexts(*versions),
              ElementsAre("2.6.0.dev20250101+cpu", "2.6.0.dev20250102+cpu"));
  EXPECT_EQ((*versions)[1].files[0].url, index.Url("/packages/") + kWheel2);
  EXPECT_EQ((*versions)[1].files[0].sha256, "2222");
}

TEST(ListIndexHttpTest, FollowsOneRedirectAndResolvesAgainstItsTarget) {
  LocalIndex index;
  absl::StatusOr<std::vector<ArtifactVersion>> versions =
      ListIndex(index.Url("/simple/"), "PyTorch_Triton");
  ASSERT_TRUE(versions.ok()) << versions.status();
  ASSERT_THAT(VersionTexts(*versions), ElementsAre("3.2.0+git4b3bb1f8"));
  EXPECT_EQ(
      (*versions)[0].files[0].url,
      index.Url("/mirror/triton/pytorch_triton-3.2.0%2Bgit4b3bb1f8-cp311-cp311-linux_x86_64.whl"));
  absl::StatusOr<std::vector<ArtifactVersion>> loop = ListIndex(index.Url("/simple"), "loop");
  EXPECT_EQ(loop.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(loop.status().message(), HasSubstr("HTTP 302"));
}

TEST(ListIndexHttpTest, AMissingProjectIsNotFoundAndAFailingServerUnavailable) {
  LocalIndex index;
  absl::StatusOr<std::vector<ArtifactVersion>> missing = ListIndex(index.Url("/simple"), "nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("has no project nope"));
  EXPECT_EQ(ListIndex(index.Url("/simple"), "broken").status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(ListIndexHttpTest, AClosedPortIsUnavailable) {
  std::string url;
  {
    LocalIndex stopped;  // Stopping a running server closes its socket (a bound one leaks).
    url = stopped.Url("/simple");
  }  // Nothing listens on its port now.
  absl::StatusOr<std::vector<ArtifactVersion>> versions = ListIndex(url, "torch");
  EXPECT_EQ(versions.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(versions.status().message(), HasSubstr("could not be reached"));
  EXPECT_THAT(versions.status().message(), HasSubstr(url));
}

}  // namespace
}  // namespace kbisect
