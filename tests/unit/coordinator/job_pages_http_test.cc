// Copyright 2026 The kbisect Authors.
//
// The live job pages on the coordinator's HTTP listener (MetricsHttpServer with JobPages) over
// real loopback HTTP: the routes, 404 for an unknown job, and the bearer token (401 without it
// or with a wrong one, the page with it). The pages of a real coordinator are fetched in
// tests/integration/job_pages_browser_test.cc.
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "coordinator/metrics_http.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace kbisect {
namespace {

JobPages FakePages(const std::string& token) {
  JobPages pages;
  pages.token = token;
  pages.list = []() -> absl::StatusOr<std::string> { return std::string("<p>list</p>"); };
  pages.job = [](const std::string& id) -> absl::StatusOr<std::string> {
    if (id != "job-1") return absl::NotFoundError(absl::StrCat("no job ", id));
    return absl::StrCat("<p>", id, "</p>");
  };
  return pages;
}

TEST(JobPagesHttpTest, ServesTheListAndAJobAndNotFoundForOthers) {
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server = MetricsHttpServer::Start(
      "127.0.0.1:0", [] { return std::string("m 1\n"); }, FakePages(""));
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client http("127.0.0.1", (*server)->port());
  httplib::Result list = http.Get("/jobs");
  ASSERT_TRUE(list);
  EXPECT_EQ(list->status, 200);
  EXPECT_EQ(list->body, "<p>list</p>");
  EXPECT_EQ(list->get_header_value("Cache-Control"), "no-store");
  httplib::Result job = http.Get("/jobs/job-1");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->body, "<p>job-1</p>");
  EXPECT_EQ(http.Get("/jobs/job-2")->status, 404);
  EXPECT_EQ(http.Get("/metrics")->body, "m 1\n");
  EXPECT_EQ(http.Get("/elsewhere")->status, 404);
}

TEST(JobPagesHttpTest, WithATokenThePagesNeedIt) {
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
      MetricsHttpServer::Start("127.0.0.1:0", nullptr, FakePages("s3cr3t"));
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client http("127.0.0.1", (*server)->port());
  httplib::Result anonymous = http.Get("/jobs/job-1");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  EXPECT_EQ(anonymous->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_THAT(anonymous->body, ::testing::Not(::testing::HasSubstr("job-1")));
  EXPECT_EQ(http.Get("/jobs", {{"Authorization", "Bearer wrong!"}})->status, 401);
  httplib::Result with_token = http.Get("/jobs/job-1", {{"Authorization", "Bearer s3cr3t"}});
  ASSERT_TRUE(with_token);
  EXPECT_EQ(with_token->status, 200);
  EXPECT_EQ(with_token->body, "<p>job-1</p>");
  // Without a render callback there is no /metrics.
  EXPECT_EQ(http.Get("/metrics")->status, 404);
}

}  // namespace
}  // namespace kbisect
