// Copyright 2026 The kbisect Authors.
#include "common/log/log.h"

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace kbisect {
namespace {

const absl::Time kTime = absl::FromUnixMillis(1'796'029'200'123);  // 2026-11-30T09:00:00.123Z

TEST(LoggerTest, JsonLinesCarryTimeLevelComponentMessageAndFields) {
  std::ostringstream out;
  Logger log("kbisect-coordinator", LogFormat::kJson, &out);
  const std::string line = log.Format("info", "job state", {{"job", "job-1"}, {"state", "done"}},
                                      kTime);
  const nlohmann::json parsed = nlohmann::json::parse(line);
  EXPECT_EQ(parsed["time"], "2026-11-30T09:00:00.123Z");
  EXPECT_EQ(parsed["level"], "info");
  EXPECT_EQ(parsed["component"], "kbisect-coordinator");
  EXPECT_EQ(parsed["msg"], "job state");
  EXPECT_EQ(parsed["job"], "job-1");
  EXPECT_EQ(parsed["state"], "done");
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one event, one line";
}

TEST(LoggerTest, JsonEscapesQuotesNewlinesAndInvalidUtf8) {
  std::ostringstream out;
  Logger log("w", LogFormat::kJson, &out);
  const std::string line =
      log.Format("error", "bench said \"no\"\nthen died", {{"tail", std::string("\xff\xfe ok")}},
                 kTime);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const nlohmann::json parsed = nlohmann::json::parse(line);
  EXPECT_EQ(parsed["msg"], "bench said \"no\"\nthen died");
  EXPECT_EQ(parsed["level"], "error");
  EXPECT_THAT(parsed["tail"].get<std::string>(), ::testing::EndsWith(" ok"));
}

TEST(LoggerTest, TextLinesReadLikeTheOldLogWithKeyValueFields) {
  std::ostringstream out;
  Logger log("kbisect-worker", LogFormat::kText, &out);
  EXPECT_EQ(log.Format("info", "listening", {{"address", "127.0.0.1:7070"}}, kTime),
            "2026-11-30T09:00:00Z kbisect-worker: listening address=127.0.0.1:7070");
  EXPECT_EQ(log.Format("warning", "lease lost", {{"why", "expired after 30 s"}}, kTime),
            "2026-11-30T09:00:00Z kbisect-worker: warning: lease lost why=\"expired after 30 s\"");
}

TEST(LoggerTest, ConcurrentLinesNeverInterleave) {
  std::ostringstream out;
  Logger log("c", LogFormat::kJson, &out);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&log, t] {
      for (int i = 0; i < 200; ++i) log.Info("tick", {{"thread", std::to_string(t)}});
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<std::string> lines = absl::StrSplit(out.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 800u);
  for (const std::string& line : lines) EXPECT_EQ(nlohmann::json::parse(line)["msg"], "tick");
}

TEST(LoggerTest, ParseLogFormatNamesTheChoices) {
  EXPECT_EQ(*ParseLogFormat("json"), LogFormat::kJson);
  EXPECT_EQ(*ParseLogFormat("TEXT"), LogFormat::kText);
  EXPECT_THAT(std::string(ParseLogFormat("xml").status().message()),
              ::testing::HasSubstr("use text or json"));
}

}  // namespace
}  // namespace kbisect
