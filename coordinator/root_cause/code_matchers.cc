// Copyright 2026 The kbisect Authors.
#include "coordinator/root_cause/code_matchers.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "re2/re2.h"

namespace kbisect {
namespace root_cause_internal {
namespace {

std::string CollapseWhitespace(absl::string_view s) {
  std::string out;
  bool space = false;
  for (char c : absl::StripAsciiWhitespace(s)) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

// All matches of `re` (one capture group) in `text`.
std::vector<std::string> FindAll(const RE2& re, const std::string& text) {
  std::vector<std::string> out;
  re2::StringPiece input(text);
  std::string captured;
  while (RE2::FindAndConsume(&input, re, &captured)) out.push_back(captured);
  return out;
}

// All (key, value) matches of `re` (two capture groups) in `text`.
std::vector<Param> FindAllParams(const RE2& re, const std::string& text) {
  std::vector<Param> out;
  re2::StringPiece input(text);
  Param param;
  while (RE2::FindAndConsume(&input, re, &param.key, &param.value)) out.push_back(param);
  return out;
}

// Splits a call's argument list at top-level commas and drops keyword arguments (num_stages=...),
// which are not bounds.
std::string PositionalArgs(const std::string& args) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (char c : args) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
      continue;
    }
    current.push_back(c);
  }
  parts.push_back(current);
  static const auto* const kKeyword = new RE2(R"(^\s*\w+\s*=[^=])");
  std::vector<std::string> positional;
  for (const std::string& part : parts) {
    if (!RE2::PartialMatch(part, *kKeyword)) positional.push_back(CollapseWhitespace(part));
  }
  return absl::StrJoin(positional, ", ");
}

std::vector<Param> IntParam(const Line& line, const RE2& re, const std::string& key) {
  std::vector<Param> out;
  for (std::string& value : FindAll(re, line.code)) out.push_back({key, std::move(value)});
  return out;
}

// Names of floating-point types, as an RE2 alternation (no groups).
constexpr char kDtypeNames[] =
    R"(float8\w*|fp8\w*|f8E\w+|float16|fp16|f16|half2?|__half2?|bfloat16|bf16|__nv_bfloat16)"
    R"(|__hip_bfloat16|nv_bfloat16|float32|fp32|f32|tf32|float|float64|fp64|f64|double)";

struct DtypeToken {
  std::string name;
  int bits;
};

std::vector<DtypeToken> DtypeTokens(const std::string& code) {
  static const auto* const kRe = new RE2(absl::StrCat(R"(\b()", kDtypeNames, R"()\b)"));
  std::vector<DtypeToken> out;
  for (std::string& name : FindAll(*kRe, code)) {
    const std::string lower = absl::AsciiStrToLower(name);
    int bits = 32;
    if (absl::StrContains(lower, "8")) {
      bits = absl::StrContains(lower, "64") ? 64 : 8;
    } else if (absl::StrContains(lower, "16") || absl::StrContains(lower, "half")) {
      bits = 16;
    } else if (absl::StrContains(lower, "64") || lower == "double") {
      bits = 64;
    }
    out.push_back({std::move(name), bits});
  }
  return out;
}

// `code` with every dtype name replaced by "DT", without whitespace.
std::string MaskDtypes(const std::string& code) {
  static const auto* const kRe = new RE2(absl::StrCat(R"(\b(?:)", kDtypeNames, R"()\b)"));
  std::string out = code;
  RE2::GlobalReplace(&out, *kRe, "DT");
  return RemoveWhitespace(out);
}

std::string AssignedName(const std::string& code) {
  static const auto* const kLhs =
      new RE2(R"(^\s*(?:[\w:<>*&]+\s+)*?([\w.\[\]]+)\s*(?::[^=]+)?=[^=])");
  std::string name;
  RE2::PartialMatch(code, *kLhs, &name);
  return name;
}

}  // namespace

void PairChanges(
    const Hunk& hunk, const Extractor& extract,
    const std::function<void(int added_line, const std::string& key, const std::string& before,
                             const std::string& after)>& changed) {
  struct Entry {
    int line;
    Param param;
    bool used = false;
  };
  std::vector<Entry> removed, added;
  for (int i = 0; i < static_cast<int>(hunk.lines.size()); ++i) {
    const Line& line = hunk.lines[i];
    if (line.kind == ' ' || line.moved || line.code.empty()) continue;
    for (Param& param : extract(line)) {
      (line.kind == '-' ? removed : added).push_back({i, std::move(param)});
    }
  }
  for (Entry& before : removed) {
    for (Entry& after : added) {
      if (after.used || after.param.key != before.param.key) continue;
      after.used = true;
      if (RemoveWhitespace(after.param.value) != RemoveWhitespace(before.param.value)) {
        changed(after.line, before.param.key, before.param.value, after.param.value);
      }
      break;
    }
  }
}

// --- Changed loop bounds. ---

std::vector<Param> LoopBounds(const Line& line) {
  static const auto* const kPythonFor = new RE2(
      R"(^\s*(?:async\s+)?for\s+(.+?)\s+in\s+((?:[\w]+\.)*(?:static_)?range)\s*\((.*)\)\s*:)");
  static const auto* const kCFor = new RE2(R"(\bfor\s*\(([^;]*);([^;]*);([^;]*)\))");
  static const auto* const kWhile =
      new RE2(R"(^\s*(?:\}\s*)?while\s*\(?\s*(\w+)\s*(<=|>=|<|>|!=)\s*(.+?)\s*\)?\s*[:{;]?\s*$)");
  static const auto* const kInitVar = new RE2(R"((\w+)\s*(?:=[^=]|=$))");
  static const auto* const kCondVar = new RE2(R"((\w+)\s*(?:<|>|!=))");
  std::vector<Param> out;
  std::string var, func, args, init, cond, step, op, bound;
  if (RE2::PartialMatch(line.code, *kPythonFor, &var, &func, &args)) {
    out.push_back(
        {"for " + RemoveWhitespace(var), absl::StrCat(func, "(", PositionalArgs(args), ")")});
  } else if (RE2::PartialMatch(line.code, *kCFor, &init, &cond, &step)) {
    if (!RE2::PartialMatch(init, *kInitVar, &var)) RE2::PartialMatch(cond, *kCondVar, &var);
    out.push_back({"for (" + var + ")",
                   absl::StrCat("for (", CollapseWhitespace(init), "; ", CollapseWhitespace(cond),
                                "; ", CollapseWhitespace(step), ")")});
  } else if (RE2::PartialMatch(line.code, *kWhile, &var, &op, &bound)) {
    out.push_back({"while " + var, absl::StrCat(var, " ", op, " ", CollapseWhitespace(bound))});
  }
  return out;
}

bool LooksDoubled(const std::string& before, const std::string& after) {
  static const auto* const kDouble = new RE2(R"(\*\s*2\b|\b2\s*\*|<<\s*1\b)");
  return RE2::PartialMatch(after, *kDouble) && !RE2::PartialMatch(before, *kDouble);
}

// --- Changed tile sizes. ---

std::vector<Param> TileSizes(const Line& line) {
  // BLOCK_SIZE = 64, BLOCK_M=128 (keyword), 'BLOCK_N': 64 (config dict), block_size: int = 64,
  // constexpr int kBlockM = 128, TILE_K = 32.
  static const auto* const kAssign = new RE2(
      R"(\b((?:BLOCK|TILE)(?:_[A-Z0-9]+)*)"
      R"(|(?:block|tile)_(?:size|m|n|k|dim|rows|cols)(?:_[a-z0-9]+)*)"
      R"(|k(?:Block|Tile)[A-Za-z0-9]*)"
      // A quote (dict key), an optional annotation (": tl.constexpr"), "=" or ":", a number.
      R"()\b['"]?\s*(?:(?::\s*[A-Za-z_][\w.\[\]]*\s*)?=|:)\s*(\d+)\b)");
  static const auto* const kDefine = new RE2(
      R"(#\s*define\s+((?:BLOCK|TILE)(?:_[A-Z0-9]+)*|(?:block|tile)_\w+|k(?:Block|Tile)\w*))"
      R"(\s+\(?\s*(\d+))");
  static const auto* const kLaunch =
      new RE2(R"(<<<\s*([^,<>]+?)\s*,\s*([^,<>]+?)\s*(?:,[^<>]*)?>>>)");
  static const auto* const kDim3 =
      new RE2(R"(\bdim3\s+(\w*(?:[Bb]lock|[Tt]hread)\w*)\s*[({]([^)}]*)[)}])");
  std::vector<Param> out = FindAllParams(*kAssign, line.code);
  for (Param& param : FindAllParams(*kDefine, line.code)) out.push_back(std::move(param));
  std::string grid, block;
  if (RE2::PartialMatch(line.code, *kLaunch, &grid, &block)) {
    out.push_back({"threads per block (<<<...>>>)", block});
  }
  for (Param& param : FindAllParams(*kDim3, line.code)) {
    param.key = "dim3 " + param.key;
    param.value = CollapseWhitespace(param.value);
    out.push_back(std::move(param));
  }
  return out;
}

// --- Single integer parameters. ---

std::vector<Param> WavesPerEu(const Line& line) {
  static const auto* const kRe = new RE2(
      R"((?:\bwaves_per_eu\b['"]?\s*[=:]|amdgpu_waves_per_eu\s*\(|"amdgpu-waves-per-eu"\s*=\s*"))"
      R"(\s*(\d+))");
  return IntParam(line, *kRe, "waves_per_eu");
}

std::vector<Param> NumStages(const Line& line) {
  static const auto* const kRe = new RE2(R"(\bnum[_-]stages\b['"]?\s*[=:]\s*(\d+))");
  return IntParam(line, *kRe, "num_stages");
}

std::vector<Param> NumWarps(const Line& line) {
  static const auto* const kRe = new RE2(R"(\bnum[_-]warps\b['"]?\s*[=:]\s*(\d+))");
  return IntParam(line, *kRe, "num_warps");
}

std::vector<Param> NumBuffers(const Line& line) {
  static const auto* const kRe = new RE2(R"(\bnum_buffers\b['"]?\s*[=:]\s*(\d+))");
  return IntParam(line, *kRe, "num_buffers");
}

// --- Refactored layout. ---

std::vector<Param> LayoutParams(const Line& line) {
  static const auto* const kKeyword = new RE2(
      R"(\b(size_per_thread|threads_per_warp|warps_per_cta|ctas_per_cga|cta_split_num|cta_order)"
      R"(|sizePerThread|threadsPerWarp|warpsPerCTA|CTAsPerCGA|CTASplitNum|CTAOrder|order)"
      R"(|instr_shape|instrShape|vec|per_phase|perPhase|max_phase|maxPhase))"
      R"(\s*[=:]\s*(\[[^\]]*\]|\d+))");
  static const auto* const kContext =
      new RE2(R"(Layout|#ttg\.|#triton_gpu\.|blocked<|size_per_thread|sizePerThread|shared<)");
  static const auto* const kCall = new RE2(R"(\b(\w*Layout)\s*\(((?:[^()]|\([^()]*\))*)\))");
  if (!RE2::PartialMatch(line.code, *kContext)) {
    // Keyword lines of a multi-line layout constructor still count, except generic ones.
    std::vector<Param> out;
    for (Param& param : FindAllParams(*kKeyword, line.code)) {
      if (param.key == "order" || param.key == "vec" || param.key == "per_phase" ||
          param.key == "perPhase" || param.key == "max_phase" || param.key == "maxPhase") {
        continue;
      }
      out.push_back(std::move(param));
    }
    return out;
  }
  std::vector<Param> out = FindAllParams(*kKeyword, line.code);
  if (out.empty()) {
    for (Param& param : FindAllParams(*kCall, line.code)) {
      param.value = CollapseWhitespace(param.value);
      out.push_back(std::move(param));
    }
  }
  return out;
}

// --- Changed dtype. ---

std::vector<DtypeChange> FindDtypeChanges(const Hunk& hunk) {
  std::vector<DtypeChange> changes;
  std::vector<int> removed, added;
  for (int i = 0; i < static_cast<int>(hunk.lines.size()); ++i) {
    const Line& line = hunk.lines[i];
    if (line.kind == ' ' || line.moved || line.code.empty()) continue;
    (line.kind == '-' ? removed : added).push_back(i);
  }
  std::set<int> used;
  for (int r : removed) {
    const std::vector<DtypeToken> before = DtypeTokens(hunk.lines[r].code);
    if (before.empty()) continue;
    const std::string masked = MaskDtypes(hunk.lines[r].code);
    const std::string lhs = AssignedName(hunk.lines[r].code);
    for (int a : added) {
      if (used.count(a) > 0) continue;
      const std::vector<DtypeToken> after = DtypeTokens(hunk.lines[a].code);
      if (after.empty()) continue;
      const bool same_shape = MaskDtypes(hunk.lines[a].code) == masked;
      const bool same_target =
          !lhs.empty() && AssignedName(hunk.lines[a].code) == lhs && after.size() == before.size();
      if (!same_shape && !same_target) continue;
      used.insert(a);
      // The first position (or, with unequal counts, the widest type) that got wider.
      const DtypeToken* from = nullptr;
      const DtypeToken* to = nullptr;
      if (after.size() == before.size()) {
        for (size_t k = 0; k < after.size(); ++k) {
          if (after[k].bits > before[k].bits) {
            from = &before[k];
            to = &after[k];
            break;
          }
        }
      }
      if (from != nullptr) changes.push_back({a, from->name, to->name, to->bits / from->bits});
      break;
    }
  }
  return changes;
}

// --- Added synchronization, memory ops and masking; removed prefetch. ---

std::vector<std::string> SyncOps(const Line& line, const LangInfo&) {
  static const auto* const kRe = new RE2(
      R"(((?:\b|_)s_barrier\b|\b(?:tl|gl|ttgl)\.debug_barrier\b|\bgl\.barrier\b)"
      R"(|\b__syncthreads(?:_count|_and|_or)?\b|\b__syncwarp\b)"
      R"(|\b__threadfence(?:_block|_system)?\b)"
      R"(|\btorch\.cuda\.synchronize\b|\b(?:cuda|hip)(?:Device|Stream|Event)Synchronize\b)"
      R"(|\bbar\.sync\b|\bbarrier\.sync(?:\.aligned)?\b|\bgpu\.barrier\b|\bttg\.barrier\b)"
      R"(|\bcuda::barrier\b|\b(?:block|grid|tile|warp|cta|cluster)\.sync\s*\(|\bcg::sync\b))");
  std::vector<std::string> out;
  for (std::string& op : FindAll(*kRe, line.code)) {
    std::string kind(absl::StripSuffix(RemoveWhitespace(op), "("));
    if (absl::StartsWith(kind, "_s_barrier")) kind = "s_barrier";
    out.push_back(std::move(kind));
  }
  return out;
}

std::vector<std::string> MemoryOps(const Line& line, const LangInfo& lang) {
  static const auto* const kCall =
      new RE2(R"(\b((?:tl|gl|ttgl|triton\.language)\.(?:load|store|atomic_[a-z]+))"
              R"(|\w*desc\w*\.(?:load|store)|__ld(?:g|cg|ca|cs|lu|cv)|__st(?:wb|cg|cs|wt))\s*\()");
  static const auto* const kInstruction = new RE2(
      R"(\b((?:buffer|global|flat)_(?:load|store)_\w+|ld\.global\w*|st\.global\w*|tt\.load)"
      R"(|tt\.store|ttg\.local_load|ttg\.local_store|amdgpu\.buffer_load|amdgpu\.buffer_store)\b)");
  std::vector<std::string> out = FindAll(*kCall, line.code);
  if (lang.lang == Lang::kAsm || lang.lang == Lang::kMlir || lang.lang == Lang::kLlvm) {
    for (std::string& op : FindAll(*kInstruction, line.code)) out.push_back(std::move(op));
  }
  return out;
}

std::vector<std::string> MaskingOps(const Line& line, const LangInfo& lang) {
  static const auto* const kWhere = new RE2(R"(\b((?:tl|gl|ttgl|torch)\.where)\s*\()");
  static const auto* const kMask = new RE2(R"(\b(\w*mask)\s*=(?:[^=]|$))");
  static const auto* const kBoundary = new RE2(R"(\b(boundary_check|padding_option)\s*=)");
  static const auto* const kIfBound = new RE2(
      R"(^\s*(?:\}\s*)?(?:else\s+)?if\s*\()"
      R"(.*\b(?:threadIdx|blockIdx|blockDim|tid|idx|row|col|gid|lane|offset|i|j)\b.*(?:<|>=))");
  std::vector<std::string> out;
  for (std::string& op : FindAll(*kWhere, line.code)) out.push_back(std::move(op));
  if (lang.lang == Lang::kPython) {
    for (size_t k = FindAll(*kMask, line.code).size(); k > 0; --k) out.push_back("mask=");
  }
  for (std::string& op : FindAll(*kBoundary, line.code)) out.push_back(op + "=");
  if (lang.cuda_like && RE2::PartialMatch(line.code, *kIfBound)) out.push_back("boundary check");
  return out;
}

std::vector<std::string> PrefetchOps(const Line& line, const LangInfo&) {
  static const auto* const kRe = new RE2(
      R"((?i)(prefetch|double[_ -]?buffer|num_buffers|cp\.async|cp_async|memcpy_async|async_copy)"
      R"(|__pipeline_|pipeline_commit|pipeline_wait|commit_group|wait_group))");
  std::vector<std::string> out;
  for (std::string& op : FindAll(*kRe, line.code)) {
    std::string kind = absl::AsciiStrToLower(op);
    if (absl::StartsWith(kind, "double")) kind = "double buffer";
    if (kind == "cp_async") kind = "cp.async";
    out.push_back(std::move(kind));
  }
  return out;
}

void FindUnmatchedOps(
    const std::vector<File>& files, const File& file, const Hunk& hunk, const OpFinder& find,
    bool added_side, bool moves_into_loops,
    const std::function<void(int line, const std::string& kind, bool moved)>& report) {
  const char mine = added_side ? '+' : '-';
  const char theirs = added_side ? '-' : '+';
  struct Candidate {
    int line;
    std::string kind;
    std::string lhs;
    bool used = false;
  };
  std::vector<Candidate> own, other;
  for (int i = 0; i < static_cast<int>(hunk.lines.size()); ++i) {
    const Line& line = hunk.lines[i];
    if (line.code.empty()) continue;
    if (line.kind == mine && line.moved) {
      if (!moves_into_loops || line.twin_file < 0) continue;
      const Hunk& twin_hunk = files[line.twin_file].hunks[line.twin_hunk];
      if (!InsideLoop(hunk.lines, i, added_side) ||
          InsideLoop(twin_hunk.lines, line.twin_line, !added_side)) {
        continue;
      }
      for (const std::string& kind : find(line, file.lang)) report(i, kind, true);
      continue;
    }
    if (line.moved || (line.kind != mine && line.kind != theirs)) continue;
    for (std::string& kind : find(line, file.lang)) {
      (line.kind == mine ? own : other).push_back({i, std::move(kind), AssignedName(line.code)});
    }
  }
  // First pass: same kind and same assigned name; second pass: same kind.
  for (int pass = 0; pass < 2; ++pass) {
    for (Candidate& mine_op : own) {
      if (mine_op.used) continue;
      for (Candidate& their_op : other) {
        if (their_op.used || their_op.kind != mine_op.kind) continue;
        if (pass == 0 && (mine_op.lhs.empty() || mine_op.lhs != their_op.lhs)) continue;
        their_op.used = mine_op.used = true;
        break;
      }
    }
  }
  for (const Candidate& op : own) {
    if (!op.used) report(op.line, op.kind, false);
  }
}

}  // namespace root_cause_internal
}  // namespace kbisect
