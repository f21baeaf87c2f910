// Copyright 2026 The kbisect Authors.
//
// ParseSimpleIndexPage: the anchors of a PEP 503 project page, and the URL resolution and
// decoding it needs.
#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/artifact/index_internal.h"
#include "common/artifact/package_index.h"

namespace kbisect {
namespace {

// An absolute URL split as RFC 3986 does: scheme://authority path, then query and fragment.
struct UrlParts {
  std::string scheme;
  std::string authority;
  std::string path;    // Starts with '/' (or is empty).
  std::string suffix;  // "?query#fragment", either part optional.
};

bool IsSchemeChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
}

// True when `reference` starts with "scheme:".
bool HasScheme(absl::string_view reference) {
  const size_t colon = reference.find(':');
  if (colon == 0 || colon == absl::string_view::npos) return false;
  if (!absl::ascii_isalpha(static_cast<unsigned char>(reference[0]))) return false;
  for (char c : reference.substr(0, colon)) {
    if (!IsSchemeChar(c)) return false;
  }
  return true;
}

// `text` split before its first '?' or '#': {path, suffix}.
std::pair<std::string, std::string> SplitSuffix(absl::string_view text) {
  const size_t at = text.find_first_of("?#");
  if (at == absl::string_view::npos) return {std::string(text), ""};
  return {std::string(text.substr(0, at)), std::string(text.substr(at))};
}

std::optional<UrlParts> SplitUrl(absl::string_view url) {
  const size_t separator = url.find("://");
  if (separator == absl::string_view::npos || !HasScheme(url.substr(0, separator + 1))) {
    return std::nullopt;
  }
  UrlParts parts;
  parts.scheme = std::string(url.substr(0, separator));
  const absl::string_view rest = url.substr(separator + 3);
  const size_t path_at = std::min(rest.find_first_of("/?#"), rest.size());
  parts.authority = std::string(rest.substr(0, path_at));
  std::tie(parts.path, parts.suffix) = SplitSuffix(rest.substr(path_at));
  return parts;
}

// `path` (starting with '/') without its "." and ".." segments.
std::string RemoveDotSegments(absl::string_view path) {
  std::vector<absl::string_view> in = absl::StrSplit(path.substr(1), '/');
  std::vector<absl::string_view> out;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool dots = in[i] == "." || in[i] == "..";
    if (in[i] == ".." && !out.empty()) out.pop_back();
    if (!dots) out.push_back(in[i]);
    if (dots && i + 1 == in.size()) out.push_back("");  // "a/.." names the directory "a/".
  }
  return absl::StrCat("/", absl::StrJoin(out, "/"));
}

std::string Origin(const UrlParts& base) {
  return absl::StrCat(base.scheme, "://", base.authority);
}

// A relative reference's path merged with base's directory.
std::string MergedPath(const UrlParts& base, const std::string& path) {
  const size_t slash = base.path.rfind('/');
  const std::string directory = slash == std::string::npos ? "/" : base.path.substr(0, slash + 1);
  return directory + path;
}

// The character an HTML entity (without '&' and ';') stands for, UTF-8 encoded; nullopt when
// unknown.
std::optional<std::string> DecodeEntity(absl::string_view name) {
  if (name == "amp") return "&";
  if (name == "lt") return "<";
  if (name == "gt") return ">";
  if (name == "quot") return "\"";
  if (name == "apos") return "'";
  uint32_t code = 0;
  const bool numeric =
      name.size() > 1 && name[0] == '#' &&
      ((name[1] == 'x' || name[1] == 'X') ? absl::SimpleHexAtoi(name.substr(2), &code)
                                          : absl::SimpleAtoi(name.substr(1), &code));
  if (!numeric || code == 0 || code > 0x10FFFF) return std::nullopt;
  std::string utf8;
  if (code < 0x80) {
    utf8.push_back(static_cast<char>(code));
  } else if (code < 0x800) {
    utf8 += {static_cast<char>(0xC0 | (code >> 6)), static_cast<char>(0x80 | (code & 0x3F))};
  } else if (code < 0x10000) {
    utf8 += {static_cast<char>(0xE0 | (code >> 12)), static_cast<char>(0x80 | ((code >> 6) & 0x3F)),
             static_cast<char>(0x80 | (code & 0x3F))};
  } else {
    utf8 +=
        {static_cast<char>(0xF0 | (code >> 18)), static_cast<char>(0x80 | ((code >> 12) & 0x3F)),
         static_cast<char>(0x80 | ((code >> 6) & 0x3F)), static_cast<char>(0x80 | (code & 0x3F))};
  }
  return utf8;
}

// `text` with its HTML entities ("&amp;", "&#43;", "&#x2B;") decoded; unknown ones kept.
std::string DecodeEntities(absl::string_view text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t semicolon = text[i] == '&' ? text.find(';', i) : absl::string_view::npos;
    std::optional<std::string> decoded;
    if (semicolon != absl::string_view::npos && semicolon - i <= 10) {
      decoded = DecodeEntity(text.substr(i + 1, semicolon - i - 1));
    }
    if (decoded) {
      out += *decoded;
      i = semicolon + 1;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

bool IsHtmlSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

// The value of one attribute starting at `at` in a tag (after its name and '='), and where the
// attribute ends.
std::pair<absl::string_view, size_t> AttributeValue(absl::string_view tag, size_t at) {
  if (at < tag.size() && (tag[at] == '"' || tag[at] == '\'')) {
    const size_t close = std::min(tag.find(tag[at], at + 1), tag.size());
    return {tag.substr(at + 1, close - at - 1), close + 1};
  }
  size_t end = at;
  while (end < tag.size() && !IsHtmlSpace(tag[end]) && tag[end] != '>') ++end;
  return {tag.substr(at, end - at), end};
}

// The href of the tag `tag` (the text after "<a" up to its '>'); nullopt when it has none.
std::optional<std::string> HrefOf(absl::string_view tag) {
  size_t i = 0;
  while (i < tag.size()) {
    while (i < tag.size() && (IsHtmlSpace(tag[i]) || tag[i] == '/')) ++i;
    const size_t name_at = i;
    while (i < tag.size() && !IsHtmlSpace(tag[i]) && tag[i] != '=' && tag[i] != '/') ++i;
    const std::string name = absl::AsciiStrToLower(tag.substr(name_at, i - name_at));
    while (i < tag.size() && IsHtmlSpace(tag[i])) ++i;
    if (i >= tag.size() || tag[i] != '=') continue;
    ++i;
    while (i < tag.size() && IsHtmlSpace(tag[i])) ++i;
    auto [value, end] = AttributeValue(tag, i);
    if (name == "href") return DecodeEntities(value);
    i = end;
  }
  return std::nullopt;
}

// Where the tag whose attributes start at `at` ends: its '>' outside quoted values, or npos.
size_t TagEnd(absl::string_view html, size_t at) {
  char quote = 0;
  for (size_t i = at; i < html.size(); ++i) {
    if (quote != 0) {
      if (html[i] == quote) quote = 0;
    } else if (html[i] == '"' || html[i] == '\'') {
      quote = html[i];
    } else if (html[i] == '>') {
      return i;
    }
  }
  return absl::string_view::npos;
}

// The hrefs of the page's anchors, in page order.
std::vector<std::string> AnchorHrefs(const std::string& html) {
  const std::string lower = absl::AsciiStrToLower(html);
  std::vector<std::string> hrefs;
  size_t at = lower.find("<a");
  while (at != std::string::npos) {
    const size_t after = at + 2;
    if (after < html.size() && IsHtmlSpace(html[after])) {
      const size_t close = TagEnd(html, after);
      if (close == absl::string_view::npos) break;
      std::optional<std::string> href =
          HrefOf(absl::string_view(html).substr(after, close - after));
      if (href) hrefs.push_back(std::move(*href));
    }
    at = lower.find("<a", after);
  }
  return hrefs;
}

// The file an href names, if it is a distribution of `normalized_project`.
std::optional<ArtifactFile> FileOfHref(const std::string& href, const std::string& page_url,
                                       const std::string& normalized_project) {
  const std::string path = SplitSuffix(href).first;
  ArtifactFile file;
  file.filename = artifact_internal::PercentDecode(path.substr(path.rfind('/') + 1));
  std::optional<std::string> version =
      artifact_internal::VersionIfDistributionOf(file.filename, normalized_project);
  std::optional<std::string> url = artifact_internal::ResolveUrl(page_url, href);
  if (!version || !url) return std::nullopt;
  file.version = std::move(*version);
  const size_t hash = url->find('#');
  if (hash != std::string::npos) {
    const absl::string_view fragment = absl::string_view(*url).substr(hash + 1);
    if (absl::StartsWith(fragment, "sha256=")) {
      file.sha256 = absl::AsciiStrToLower(fragment.substr(7));
    }
    url->resize(hash);
  }
  file.url = std::move(*url);
  return file;
}

}  // namespace

namespace artifact_internal {

std::string PercentDecode(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool escape = text[i] == '%' && i + 2 < text.size() &&
                        absl::ascii_isxdigit(static_cast<unsigned char>(text[i + 1])) &&
                        absl::ascii_isxdigit(static_cast<unsigned char>(text[i + 2]));
    if (!escape) {
      out.push_back(text[i]);
      continue;
    }
    out.push_back(static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16)));
    i += 2;
  }
  return out;
}

std::optional<std::string> ResolveUrl(const std::string& base, const std::string& reference) {
  std::optional<UrlParts> parts = SplitUrl(base);
  if (!parts) return std::nullopt;
  if (HasScheme(reference)) return reference;
  if (absl::StartsWith(reference, "//")) return absl::StrCat(parts->scheme, ":", reference);
  if (reference.empty()) return Origin(*parts) + parts->path + SplitSuffix(parts->suffix).first;
  if (reference[0] == '#') {
    return Origin(*parts) + parts->path + parts->suffix.substr(0, parts->suffix.find('#')) +
           reference;
  }
  if (reference[0] == '?') return Origin(*parts) + parts->path + reference;
  auto [path, suffix] = SplitSuffix(reference);
  if (path[0] != '/') path = MergedPath(*parts, path);
  return Origin(*parts) + RemoveDotSegments(path) + suffix;
}

}  // namespace artifact_internal

absl::StatusOr<std::vector<ArtifactVersion>> ParseSimpleIndexPage(const std::string& html,
                                                                  const std::string& page_url,
                                                                  const std::string& project) {
  if (!SplitUrl(page_url)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", page_url, "' is not an absolute URL (scheme://host/path)"));
  }
  const std::string normalized = NormalizeProjectName(project);
  std::vector<ArtifactFile> files;
  for (const std::string& href : AnchorHrefs(html)) {
    std::optional<ArtifactFile> file = FileOfHref(href, page_url, normalized);
    if (file) files.push_back(std::move(*file));
  }
  return artifact_internal::GroupByVersion(std::move(files));
}

}  // namespace kbisect
