// Copyright 2026 The kbisect Authors.
#include "triage/source.h"

#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/unit/triage/fixtures.h"

namespace kbisect {
namespace triage {
namespace {

using ::testing::HasSubstr;

// A real HTTP server on 127.0.0.1 (an ephemeral port) serving the shared fixture.
class LocalServer {
 public:
  LocalServer() {
    body_ = testing::Fixture("helion-dashboard-sample.json");
    server_.Get("/dashboard/dashboard-data.json",
                [this](const httplib::Request&, httplib::Response& res) {
                  res.set_content(body_, "application/json");
                });
    server_.Get("/old", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/dashboard/dashboard-data.json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LocalServer() {
    server_.stop();
    thread_.join();
  }
  std::string Url(const std::string& path) const {
    return absl::StrCat("http://127.0.0.1:", port_, path);
  }
  const std::string& body() const { return body_; }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::string body_;
};

TEST(SourceTest, FetchesUrlsFromALocalServer) {
  LocalServer server;
  absl::StatusOr<std::string> text = ReadSource(server.Url("/dashboard/dashboard-data.json"));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, server.body());
  text = ReadSource(server.Url("/old"));  // Redirects are followed.
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, server.body());
  text = ReadSource(server.Url("/missing.json"));
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(text.status().message(), HasSubstr("HTTP 404"));
  SourceOptions small;
  small.max_bytes = 100;
  text = ReadSource(server.Url("/dashboard/dashboard-data.json"), small);
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr("larger than 100 bytes"));
}

TEST(SourceTest, ConnectionRefused) {
  int port = 0;
  {
    httplib::Server probe;
    port = probe.bind_to_any_port("127.0.0.1");
  }  // Closed again: nothing listens there now.
  SourceOptions options;
  options.timeout_seconds = 5;
  absl::StatusOr<std::string> text =
      ReadSource(absl::StrCat("http://127.0.0.1:", port, "/x.json"), options);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(text.status().message(), HasSubstr("127.0.0.1"));
}

TEST(SourceTest, Files) {
  absl::StatusOr<std::string> text = ReadSource(testing::FixturePath("generic_runner.csv"));
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("date,sha"));
  text = ReadSource("/nonexistent/dash.json");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(text.status().message(), HasSubstr("/nonexistent/dash.json"));
  // A directory is named, not thrown at the user (exit 134 before).
  text = ReadSource("/tmp");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().message(), HasSubstr("'/tmp': it is a directory"));
  EXPECT_TRUE(IsUrl("HTTPS://x"));
  EXPECT_FALSE(IsUrl("dash.json"));
}

}  // namespace
}  // namespace triage
}  // namespace kbisect
