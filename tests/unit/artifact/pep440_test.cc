// Copyright 2026 The kbisect Authors.
#include "common/artifact/pep440.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Optional;
using PreKind = Pep440Version::PreKind;
using LocalSegment = Pep440Version::LocalSegment;

Pep440Version Parse(const std::string& text) {
  absl::StatusOr<Pep440Version> v = ParsePep440(text);
  EXPECT_TRUE(v.ok()) << text << ": " << v.status();
  return v.ok() ? *v : Pep440Version{};
}

TEST(ParsePep440Test, ReadsEveryPartOfANormalisedVersion) {
  const Pep440Version v = Parse("1!2.0.3rc4.post5.dev6+cu124.git4b3bb1f8.7");
  EXPECT_EQ(v.epoch, 1);
  EXPECT_THAT(v.release, ElementsAre(2, 0, 3));
  ASSERT_TRUE(v.pre.has_value());
  EXPECT_EQ(v.pre->kind, PreKind::kRc);
  EXPECT_EQ(v.pre->number, 4);
  EXPECT_THAT(v.post, Optional(5));
  EXPECT_THAT(v.dev, Optional(6));
  EXPECT_THAT(v.local, ElementsAre(LocalSegment("cu124"), LocalSegment("git4b3bb1f8"),
                                   LocalSegment(int64_t{7})));
  EXPECT_EQ(v.text, "1!2.0.3rc4.post5.dev6+cu124.git4b3bb1f8.7");
}

TEST(ParsePep440Test, AFinalHasNoSuffixes) {
  const Pep440Version v = Parse(" v2.6.0 ");
  EXPECT_EQ(v.epoch, 0);
  EXPECT_THAT(v.release, ElementsAre(2, 6, 0));
  EXPECT_FALSE(v.pre || v.post || v.dev);
  EXPECT_TRUE(v.local.empty());
  EXPECT_EQ(v.text, "v2.6.0");
}

TEST(ParsePep440Test, PreReleaseSpellingsAndSeparators) {
  for (const char* text : {"1.0a1", "1.0alpha1", "1.0-ALPHA.1", "1.0_a_1", "1.0.a1", "V1.0A1"}) {
    const Pep440Version v = Parse(text);
    ASSERT_TRUE(v.pre.has_value()) << text;
    EXPECT_EQ(v.pre->kind, PreKind::kAlpha) << text;
    EXPECT_EQ(v.pre->number, 1) << text;
  }
  EXPECT_EQ(Parse("1.0beta2").pre->kind, PreKind::kBeta);
  for (const char* text : {"1.0c1", "1.0rc1", "1.0pre1", "1.0preview1", "1.0-RC-1"}) {
    EXPECT_EQ(Parse(text).pre->kind, PreKind::kRc) << text;
  }
  EXPECT_EQ(Parse("1.0a").pre->number, 0);  // Implicit number.
}

TEST(ParsePep440Test, PostAndDevSpellingsWithImplicitNumbers) {
  for (const char* text : {"1.0-1", "1.0.post1", "1.0post1", "1.0-r1", "1.0.rev1", "1.0_post_1"}) {
    EXPECT_THAT(Parse(text).post, Optional(1)) << text;
  }
  EXPECT_THAT(Parse("1.0.post").post, Optional(0));
  EXPECT_THAT(Parse("1.0.dev").dev, Optional(0));
  EXPECT_THAT(Parse("1.0-dev2").dev, Optional(2));
  EXPECT_THAT(Parse("1.0dev2").dev, Optional(2));
  EXPECT_THAT(Parse("2.6.0.dev20250101").dev, Optional(20250101));
}

TEST(ParsePep440Test, LocalLabelsAreLowercaseSegments) {
  EXPECT_THAT(Parse("1.0+Ubuntu-1").local,
              ElementsAre(LocalSegment("ubuntu"), LocalSegment(int64_t{1})));
  EXPECT_THAT(Parse("1.0+a_b.c").local,
              ElementsAre(LocalSegment("a"), LocalSegment("b"), LocalSegment("c")));
  EXPECT_THAT(Parse("2.6.0.dev20250101+cpu").local, ElementsAre(LocalSegment("cpu")));
}

TEST(ParsePep440Test, RejectsWhatIsNotAVersion) {
  for (const char* text : {"", "abc", "1.0.", "1..0", "1.0+", "1.0+a..b", "1.0-", "1.0a1b2",
                           "1.0+-a", "1.0 .dev1", "-1.0", "1.0!1", "2.6.0.dev20250101+cpu-x!"}) {
    absl::StatusOr<Pep440Version> v = ParsePep440(text);
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  EXPECT_THAT(ParsePep440("not-a-version").status().message(), HasSubstr("'not-a-version'"));
  EXPECT_THAT(ParsePep440("1.99999999999999999999").status().message(), HasSubstr("too large"));
}

// A list in ascending PEP 440 order (packaging's test list plus nightlies of torch, triton, jax).
const std::vector<std::string>& SortedVersions() {
  static const auto* const kVersions = new std::vector<std::string>{
      "0.1",
      "0.4.36.dev20241001",
      "0.4.36",
      "1.0.dev0",
      "1.0.dev456",
      "1.0a1",
      "1.0a2.dev456",
      "1.0a12.dev456",
      "1.0a12",
      "1.0b1.dev456",
      "1.0b2",
      "1.0b2.post345.dev456",
      "1.0b2.post345",
      "1.0b2-346",
      "1.0rc1.dev456",
      "1.0rc1",
      "1.0rc2",
      "1.0c3",
      "1.0",
      "1.0+local",
      "1.0.post1.dev2",
      "1.0.post1",
      "1.0.post456.dev34",
      "1.0.post456",
      "1.1.dev1",
      "1.2+123abc",
      "1.2+123abc456",
      "1.2+abc",
      "1.2+abc123",
      "1.2+abc123def",
      "1.2+1234.abc",
      "1.2+123456",
      "1.2.r32+123456",
      "1.2.rev1999+123456",
      "2.6.0.dev20250101",
      "2.6.0.dev20250101+cpu",
      "2.6.0.dev20250101+cu124",
      "2.6.0.dev20250102",
      "2.6.0rc1",
      "2.6.0",
      "3.2.0",
      "3.2.0+git4b3bb1f8",
      "3.3.0+git96316ce5",
      "1!0.1",
      "1!1.0.dev456",
      "1!1.0",
  };
  return *kVersions;
}

TEST(ComparePep440Test, ALongSortedListIsInOrderPairwise) {
  const std::vector<std::string>& texts = SortedVersions();
  std::vector<Pep440Version> versions;
  for (const std::string& text : texts) versions.push_back(Parse(text));
  for (size_t i = 0; i < versions.size(); ++i) {
    for (size_t j = 0; j < versions.size(); ++j) {
      const int want = i < j ? -1 : (i > j ? 1 : 0);
      EXPECT_EQ(ComparePep440(versions[i], versions[j]), want) << texts[i] << " vs " << texts[j];
      EXPECT_EQ(versions[i] < versions[j], i < j) << texts[i] << " < " << texts[j];
    }
  }
}

TEST(ComparePep440Test, SpellingsOfOneVersionAreEqual) {
  const std::vector<std::vector<std::string>> groups = {
      {"1.0", "1.0.0", "v1.0", "1", "1.0.0.0"},
      {"1.0c1", "1.0rc1", "1.0pre1", "1.0-preview-1"},
      {"1.0-1", "1.0.post1", "1.0r1"},
      {"1.0.dev", "1.0.dev0", "1.0-DEV0"},
      {"1.0+ubuntu-1", "1.0+ubuntu.1", "1.0+UBUNTU_01"},
      {"0!1.0", "1.0"},
  };
  for (const std::vector<std::string>& group : groups) {
    for (const std::string& other : group) {
      EXPECT_EQ(ComparePep440(Parse(group[0]), Parse(other)), 0) << group[0] << " vs " << other;
    }
  }
}

TEST(NightlyDateTest, ReadsTheDevNumberThenOtherNumbers) {
  EXPECT_THAT(NightlyDate(Parse("2.6.0.dev20250101+cpu")), Optional(std::string("20250101")));
  EXPECT_THAT(NightlyDate(Parse("0.4.36.dev20241001")), Optional(std::string("20241001")));
  EXPECT_THAT(NightlyDate(Parse("0.0.20240315")), Optional(std::string("20240315")));
  EXPECT_THAT(NightlyDate(Parse("1.0.post20240229")), Optional(std::string("20240229")));
  EXPECT_THAT(NightlyDate(Parse("1.0+cu124.20240101")), Optional(std::string("20240101")));
  // The dev number wins over a date elsewhere.
  EXPECT_THAT(NightlyDate(Parse("2024.1.1.dev20250102")), Optional(std::string("20250102")));
}

TEST(NightlyDateTest, NoneWithoutAnEightDigitCalendarDay) {
  for (const char* text :
       {"3.2.0+git4b3bb1f8", "2.6.0", "1.0.dev123", "1.0.dev20250230", "1.0.dev20231301",
        "1.0.dev19691231", "1.0.dev123456789", "1.0+12345678"}) {
    EXPECT_EQ(NightlyDate(Parse(text)), std::nullopt) << text;
  }
}

TEST(LocalCommitTest, ReadsGitAndGSegments) {
  EXPECT_THAT(LocalCommit(Parse("3.2.0+git4b3bb1f8")), Optional(std::string("4b3bb1f8")));
  EXPECT_THAT(LocalCommit(Parse("1.0+g4B3BB1F")), Optional(std::string("4b3bb1f")));
  EXPECT_THAT(LocalCommit(Parse("1.0+cu124.git4b3bb1f8")), Optional(std::string("4b3bb1f8")));
  const std::string full(40, 'a');
  EXPECT_THAT(LocalCommit(Parse("1.0+g" + full)), Optional(full));
}

TEST(LocalCommitTest, NoneWithoutAHexSegment) {
  for (const std::string& text :
       {std::string("1.0"), std::string("1.0+cpu"), std::string("1.0+git123abc"),
        std::string("1.0+gitxyz1234567"), std::string("1.0+g") + std::string(41, 'a'),
        std::string("1.0+4b3bb1f8")}) {
    EXPECT_EQ(LocalCommit(Parse(text)), std::nullopt) << text;
  }
}

TEST(NormalizeProjectNameTest, LowercasesAndFoldsSeparatorRuns) {
  EXPECT_EQ(NormalizeProjectName("Triton_Nightly"), "triton-nightly");
  EXPECT_EQ(NormalizeProjectName("a.-_b"), "a-b");
  EXPECT_EQ(NormalizeProjectName("torch"), "torch");
  EXPECT_EQ(NormalizeProjectName("JAX.lib"), "jax-lib");
}

}  // namespace
}  // namespace kbisect
