// Copyright 2026 The kbisect Authors.
#include "coordinator/root_cause/unified_diff.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::SizeIs;

TEST(UnifiedDiffTest, ParsesGitDiffWithTwoFilesAndHunks) {
  const std::string patch =
      "diff --git a/kernels/attn.py b/kernels/attn.py\n"
      "index 1a2b3c4..5d6e7f8 100644\n"
      "--- a/kernels/attn.py\n"
      "+++ b/kernels/attn.py\n"
      "@@ -10,4 +10,4 @@ def attn_kernel(q_ptr, k_ptr):\n"
      "     pid = tl.program_id(0)\n"
      "-    BLOCK_SIZE = 64\n"
      "+    BLOCK_SIZE = 32\n"
      "     offs = tl.arange(0, BLOCK_SIZE)\n"
      "     return offs\n"
      "@@ -40,2 +40,3 @@ def other():\n"
      "     x = 1\n"
      "+    y = 2\n"
      "     return x\n"
      "diff --git a/csrc/gemm.cu b/csrc/gemm.cu\n"
      "index 0000001..0000002 100644\n"
      "--- a/csrc/gemm.cu\n"
      "+++ b/csrc/gemm.cu\n"
      "@@ -1 +1 @@\n"
      "-int a;\n"
      "+int b;\n";
  const std::vector<FileDiff> files = ParseUnifiedDiff(patch);
  ASSERT_THAT(files, SizeIs(2));
  EXPECT_EQ(files[0].old_path, "kernels/attn.py");
  EXPECT_EQ(files[0].new_path, "kernels/attn.py");
  ASSERT_THAT(files[0].hunks, SizeIs(2));
  const DiffHunk& first = files[0].hunks[0];
  EXPECT_EQ(first.header, "@@ -10,4 +10,4 @@ def attn_kernel(q_ptr, k_ptr):");
  EXPECT_EQ(first.old_start, 10);
  EXPECT_EQ(first.new_count, 4);
  ASSERT_THAT(first.lines, SizeIs(5));
  EXPECT_EQ(first.lines[1].kind, '-');
  EXPECT_EQ(first.lines[1].text, "    BLOCK_SIZE = 64");
  EXPECT_EQ(first.lines[1].old_line, 11);
  EXPECT_EQ(first.lines[2].kind, '+');
  EXPECT_EQ(first.lines[2].new_line, 11);
  EXPECT_EQ(first.lines[3].old_line, 12);
  EXPECT_EQ(first.lines[3].new_line, 12);
  EXPECT_THAT(files[0].hunks[1].lines, SizeIs(3));
  EXPECT_EQ(files[1].path(), "csrc/gemm.cu");
  ASSERT_THAT(files[1].hunks, SizeIs(1));
  EXPECT_EQ(files[1].hunks[0].old_count, 1);
  EXPECT_THAT(files[1].hunks[0].lines,
              ElementsAre(Field(&DiffLine::kind, '-'), Field(&DiffLine::kind, '+')));
}

TEST(UnifiedDiffTest, RemovedLineThatLooksLikeAHeaderStaysInTheHunk) {
  const std::string patch =
      "diff --git a/q.sql b/q.sql\n"
      "--- a/q.sql\n"
      "+++ b/q.sql\n"
      "@@ -1,2 +1,2 @@\n"
      "--- a/comment\n"
      "+++ b/not-a-header\n"
      " select 1;\n";
  const std::vector<FileDiff> files = ParseUnifiedDiff(patch);
  ASSERT_THAT(files, SizeIs(1));
  ASSERT_THAT(files[0].hunks, SizeIs(1));
  ASSERT_THAT(files[0].hunks[0].lines, SizeIs(3));
  EXPECT_EQ(files[0].hunks[0].lines[0].kind, '-');
  EXPECT_EQ(files[0].hunks[0].lines[0].text, "-- a/comment");
  EXPECT_EQ(files[0].hunks[0].lines[1].kind, '+');
}

TEST(UnifiedDiffTest, NewDeletedRenamedAndBinaryFiles) {
  const std::string patch =
      "diff --git a/new.py b/new.py\n"
      "new file mode 100644\n"
      "index 0000000..1111111\n"
      "--- /dev/null\n"
      "+++ b/new.py\n"
      "@@ -0,0 +1,2 @@\n"
      "+x = 1\n"
      "+y = 2\n"
      "\\ No newline at end of file\n"
      "diff --git a/old.py b/old.py\n"
      "deleted file mode 100644\n"
      "--- a/old.py\n"
      "+++ /dev/null\n"
      "@@ -1 +0,0 @@\n"
      "-z = 3\n"
      "diff --git a/src/a.py b/src/b.py\n"
      "similarity index 100%\n"
      "rename from src/a.py\n"
      "rename to src/b.py\n"
      "diff --git a/img.png b/img.png\n"
      "index 1234567..89abcde 100644\n"
      "Binary files a/img.png and b/img.png differ\n";
  const std::vector<FileDiff> files = ParseUnifiedDiff(patch);
  ASSERT_THAT(files, SizeIs(4));
  EXPECT_TRUE(files[0].is_new);
  EXPECT_EQ(files[0].old_path, "");
  EXPECT_EQ(files[0].path(), "new.py");
  ASSERT_THAT(files[0].hunks, SizeIs(1));
  EXPECT_THAT(files[0].hunks[0].lines, SizeIs(2));
  EXPECT_TRUE(files[1].is_deleted);
  EXPECT_EQ(files[1].path(), "old.py");
  EXPECT_TRUE(files[2].is_rename);
  EXPECT_EQ(files[2].old_path, "src/a.py");
  EXPECT_EQ(files[2].new_path, "src/b.py");
  EXPECT_THAT(files[2].hunks, SizeIs(0));
  EXPECT_TRUE(files[3].is_binary);
}

TEST(UnifiedDiffTest, PathsWithSpacesAndQuotes) {
  const std::string patch =
      "diff --git a/my dir/k.py b/my dir/k.py\n"
      "--- a/my dir/k.py\n"
      "+++ b/my dir/k.py\n"
      "@@ -1 +1 @@\n"
      "-a\n"
      "+b\n"
      "diff --git \"a/t\\303\\251st.py\" \"b/t\\303\\251st.py\"\n"
      "--- \"a/t\\303\\251st.py\"\n"
      "+++ \"b/t\\303\\251st.py\"\n"
      "@@ -1 +1 @@\n"
      "-a\n"
      "+b\n";
  const std::vector<FileDiff> files = ParseUnifiedDiff(patch);
  ASSERT_THAT(files, SizeIs(2));
  EXPECT_EQ(files[0].path(), "my dir/k.py");
  EXPECT_EQ(files[1].path(), "t\xc3\xa9st.py");
}

TEST(UnifiedDiffTest, PlainDiffUWithoutGitHeaders) {
  const std::string patch =
      "--- a/k1.py\t2026-01-01 10:00:00.000000000 +0000\n"
      "+++ b/k1.py\t2026-01-02 10:00:00.000000000 +0000\n"
      "@@ -1,2 +1,2 @@\n"
      "-num_warps = 4\n"
      "+num_warps = 8\n"
      " pass\n"
      "--- a/k2.py\n"
      "+++ b/k2.py\n"
      "@@ -3 +3 @@\n"
      "-a\n"
      "+b\n";
  const std::vector<FileDiff> files = ParseUnifiedDiff(patch);
  ASSERT_THAT(files, SizeIs(2));
  EXPECT_EQ(files[0].path(), "k1.py");
  EXPECT_EQ(files[1].path(), "k2.py");
  EXPECT_EQ(files[1].hunks[0].old_start, 3);
}

TEST(UnifiedDiffTest, EmptyAndGarbageInputGiveNothing) {
  EXPECT_THAT(ParseUnifiedDiff(""), SizeIs(0));
  EXPECT_THAT(ParseUnifiedDiff("hello\nworld\n"), SizeIs(0));
}

TEST(UnifiedDiffTest, CrlfLineEndingsAreStripped) {
  const std::vector<FileDiff> files =
      ParseUnifiedDiff("--- a/x.py\r\n+++ b/x.py\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n");
  ASSERT_THAT(files, SizeIs(1));
  ASSERT_THAT(files[0].hunks, SizeIs(1));
  EXPECT_EQ(files[0].hunks[0].lines[1].text, "b");
}

}  // namespace
}  // namespace kbisect
