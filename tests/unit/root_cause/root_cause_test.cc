// Copyright 2026 The kbisect Authors.
#include "coordinator/root_cause/root_cause.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Property;
using ::testing::SizeIs;
using ::testing::StartsWith;

// Builds a `git diff`-style patch whose hunk headers carry correct line counts.
class PatchBuilder {
 public:
  PatchBuilder& File(const std::string& path) {
    absl::StrAppend(&patch_, "diff --git a/", path, " b/", path, "\n",
                    "index 3f1c2aa..9be04d1 100644\n", "--- a/", path, "\n", "+++ b/", path, "\n");
    return *this;
  }

  // `lines` start with ' ', '+' or '-'.
  PatchBuilder& Hunk(int start, const std::string& context, const std::vector<std::string>& lines) {
    int old_count = 0;
    int new_count = 0;
    for (const std::string& line : lines) {
      if (line[0] != '+') ++old_count;
      if (line[0] != '-') ++new_count;
    }
    last_header_ = absl::StrCat("@@ -", start, ",", old_count, " +", start, ",", new_count, " @@");
    if (!context.empty()) absl::StrAppend(&last_header_, " ", context);
    absl::StrAppend(&patch_, last_header_, "\n", absl::StrJoin(lines, "\n"), "\n");
    return *this;
  }

  PatchBuilder& Raw(const std::string& text) {
    patch_ += text;
    return *this;
  }

  const std::string& last_header() const { return last_header_; }
  const std::string& str() const { return patch_; }

 private:
  std::string patch_;
  std::string last_header_;
};

std::vector<std::string> Patterns(const std::vector<v1::RootCauseHint>& hints) {
  std::vector<std::string> out;
  for (const v1::RootCauseHint& hint : hints) out.push_back(hint.pattern());
  return out;
}

// --- Changed loop bounds ------------------------------------------------------------------------

TEST(RootCauseTest, PythonRangeBoundDoubled) {
  PatchBuilder patch;
  patch.File("kernels/reduce.py")
      .Hunk(21, "def reduce_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):",
            {"     acc = tl.zeros((BLOCK,), dtype=tl.float32)",
             "-    for i in range(N):", "+    for i in range(N * 2):",
             "         acc += tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK))",
             "     tl.store(out_ptr, tl.sum(acc))"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), "Changed loop bounds");
  EXPECT_EQ(hints[0].likely_cause(), "More iterations, doubled work (range(N) -> range(N * 2))");
  EXPECT_EQ(hints[0].file(), "kernels/reduce.py");
  EXPECT_EQ(hints[0].hunk_header(), patch.last_header());
  EXPECT_EQ(hints[0].line(), "+for i in range(N * 2):");
}

TEST(RootCauseTest, CStyleLoopBoundChanged) {
  PatchBuilder patch;
  patch.File("csrc/gemm_kernel.cu")
      .Hunk(88, "__global__ void gemm(const half* A, const half* B, float* C, int K) {",
            {"   float acc = 0.f;", "-  for (int k = 0; k < K; k += TILE) {",
             "+  for (int k = 0; k < K; k += TILE / 2) {", "     acc += load_tile(A, B, k);",
             "   }"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), kPatternLoopBounds);
  EXPECT_THAT(hints[0].likely_cause(), AllOf(StartsWith("More iterations, more work"),
                                             HasSubstr("for (int k = 0; k < K; k += TILE) -> "
                                                       "for (int k = 0; k < K; k += TILE / 2)")));
  EXPECT_EQ(hints[0].line(), "+for (int k = 0; k < K; k += TILE / 2) {");
}

TEST(RootCauseTest, TlRangeKeywordChangeIsNotABoundChange) {
  PatchBuilder patch;
  patch.File("kernels/matmul.py")
      .Hunk(
          40, "def matmul_kernel(",
          {"-    for k in tl.range(0, K, BLOCK_K, num_stages=1):",
           "+    for k in tl.range(0, K, BLOCK_K, num_stages=2):", "         a = tl.load(a_ptrs)"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), kPatternNumStages);
  EXPECT_EQ(hints[0].likely_cause(), "Triton pipelining change (num_stages: 1 -> 2)");
}

// --- Added synchronization ----------------------------------------------------------------------

TEST(RootCauseTest, AddedTritonDebugBarrier) {
  PatchBuilder patch;
  patch.File("aiter/ops/triton/pa_decode.py")
      .Hunk(133, "def _paged_attn_decode_v1(",
            {"         qk = tl.dot(q, k)", "+        tl.debug_barrier()",
             "         p = tl.exp(qk - m)"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), "Added synchronization");
  EXPECT_EQ(hints[0].likely_cause(), "Extra sync stalls (new tl.debug_barrier)");
  EXPECT_EQ(hints[0].line(), "+tl.debug_barrier()");
}

TEST(RootCauseTest, AddedCudaAndAmdBarriers) {
  PatchBuilder patch;
  patch.File("csrc/softmax.cu")
      .Hunk(51, "__global__ void softmax_kernel(float* x, int n) {",
            {"   smem[threadIdx.x] = v;", "+  __syncthreads();", "   float m = reduce_max(smem);"})
      .File("csrc/amd/softmax.s")
      .Hunk(200, "", {"   v_add_f32 v1, v2, v3", "+  s_barrier", "   s_waitcnt lgkmcnt(0)"})
      .File("bench/bench_softmax.py")
      .Hunk(12, "def bench():",
            {"     out = softmax(x)", "+    torch.cuda.synchronize()", "     return out"})
      .File("csrc/launch.cc")
      .Hunk(30, "void Launch() {",
            {"   kernel<<<grid, 256>>>(args);", "+  cudaDeviceSynchronize();", " }"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(Patterns(hints), ElementsAre(kPatternSynchronization, kPatternSynchronization,
                                           kPatternSynchronization, kPatternSynchronization));
  EXPECT_EQ(hints[0].file(), "csrc/softmax.cu");
  EXPECT_THAT(hints[0].likely_cause(), HasSubstr("new __syncthreads"));
  EXPECT_EQ(hints[1].file(), "csrc/amd/softmax.s");
  EXPECT_THAT(hints[1].likely_cause(), HasSubstr("new s_barrier"));
  EXPECT_EQ(hints[2].file(), "bench/bench_softmax.py");
  EXPECT_THAT(hints[2].likely_cause(), HasSubstr("torch.cuda.synchronize"));
  EXPECT_EQ(hints[3].file(), "csrc/launch.cc");
  EXPECT_THAT(hints[3].likely_cause(), HasSubstr("cudaDeviceSynchronize"));
}

TEST(RootCauseTest, BuiltinAmdgcnBarrierCounts) {
  PatchBuilder patch;
  patch.File("csrc/hip/reduce.hip")
      .Hunk(10, "", {"   x += y;", "+  __builtin_amdgcn_s_barrier();", "   z = x;"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_THAT(hints[0].likely_cause(), HasSubstr("new s_barrier"));
}

TEST(RootCauseTest, BarrierMovedWithinStraightLineCodeIsNotAdded) {
  PatchBuilder patch;
  patch.File("csrc/softmax.cu")
      .Hunk(51, "__global__ void softmax_kernel(float* x, int n) {",
            {"-  __syncthreads();", "   smem[threadIdx.x] = v;", "+  __syncthreads();"});
  EXPECT_THAT(FindRootCauseHints(patch.str()), IsEmpty());
}

TEST(RootCauseTest, BarrierMovedIntoALoopIsReported) {
  PatchBuilder patch;
  patch.File("kernels/attn.py")
      .Hunk(60, "def attn_fwd(",
            {"-    tl.debug_barrier()",
             "     for start_n in range(0, N_CTX, BLOCK_N):", "         k = tl.load(k_ptrs)",
             "+        tl.debug_barrier()", "         qk += tl.dot(q, k)"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), kPatternSynchronization);
  EXPECT_THAT(hints[0].likely_cause(), HasSubstr("tl.debug_barrier moved into a loop"));
}

// --- Changed tile sizes -------------------------------------------------------------------------

TEST(RootCauseTest, BlockSizeConstantChanged) {
  PatchBuilder patch;
  patch.File("kernels/layernorm.py")
      .Hunk(200, "def layer_norm(x, w, b, eps):",
            {"     M, N = x.shape", "-    BLOCK_SIZE = 64", "+    BLOCK_SIZE = 32",
             "     _layer_norm_fwd[(M,)](x, y, w, b, N, eps, BLOCK_SIZE=BLOCK_SIZE)"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), "Changed tile sizes");
  EXPECT_EQ(hints[0].likely_cause(), "Worse occupancy or more iterations (BLOCK_SIZE: 64 -> 32)");
  EXPECT_EQ(hints[0].line(), "+BLOCK_SIZE = 32");
}

TEST(RootCauseTest, AutotuneConfigTileAndWarpsChanged) {
  PatchBuilder patch;
  patch.File("kernels/matmul.py")
      .Hunk(12, "@triton.autotune(",
            {"     configs=[",
             "-        triton.Config({'BLOCK_M': 128, 'BLOCK_N': 64, 'BLOCK_K': 32}, num_warps=4),",
             "+        triton.Config({'BLOCK_M': 64, 'BLOCK_N': 64, 'BLOCK_K': 32}, num_warps=8),",
             "     ],"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(Patterns(hints), ElementsAre(kPatternTileSizes, kPatternNumWarps));
  EXPECT_EQ(hints[0].likely_cause(), "Worse occupancy or more iterations (BLOCK_M: 128 -> 64)");
  EXPECT_THAT(hints[1].likely_cause(), HasSubstr("(num_warps: 4 -> 8)"));
  EXPECT_EQ(hints[0].line(), hints[1].line());
}

TEST(RootCauseTest, DefineTileAndLaunchBlockChanged) {
  PatchBuilder patch;
  patch.File("csrc/transpose.cuh")
      .Hunk(3, "", {"-#define TILE_DIM 32", "+#define TILE_DIM 16", " #define BLOCK_ROWS 8"})
      .File("csrc/transpose.cu")
      .Hunk(70, "void transpose(float* out, const float* in, int n) {",
            {"-  transpose_kernel<<<grid, 256>>>(out, in, n);",
             "+  transpose_kernel<<<grid, 128>>>(out, in, n);"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(2));
  EXPECT_EQ(hints[0].file(), "csrc/transpose.cuh");
  EXPECT_THAT(hints[0].likely_cause(), HasSubstr("TILE_DIM: 32 -> 16"));
  EXPECT_EQ(hints[1].file(), "csrc/transpose.cu");
  EXPECT_THAT(hints[1].likely_cause(), HasSubstr("threads per block (<<<...>>>): 256 -> 128"));
}

TEST(RootCauseTest, LowerCaseBlockSizeKeyword) {
  PatchBuilder patch;
  patch.File("vllm/attention/ops/paged.py")
      .Hunk(300, "def forward(",
            {"-    out = paged_attention(q, k_cache, v_cache, block_size=16)",
             "+    out = paged_attention(q, k_cache, v_cache, block_size=32)"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_THAT(hints[0].likely_cause(), HasSubstr("block_size: 16 -> 32"));
}

// --- Added memory ops ---------------------------------------------------------------------------

TEST(RootCauseTest, NewLoadInsideLoop) {
  PatchBuilder patch;
  patch.File("kernels/matmul.py")
      .Hunk(55, "def matmul_kernel(",
            {"     for k in range(0, tl.cdiv(K, BLOCK_K)):", "         a = tl.load(a_ptrs)",
             "         b = tl.load(b_ptrs)", "+        s = tl.load(scale_ptr + k)",
             "         acc += tl.dot(a, b) * s"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), "Added memory ops");
  EXPECT_EQ(hints[0].likely_cause(), "More memory traffic (new tl.load inside a loop)");
  EXPECT_EQ(hints[0].line(), "+s = tl.load(scale_ptr + k)");
}

TEST(RootCauseTest, NewGluonLoadInsideNestedBlockOfLoop) {
  PatchBuilder patch;
  patch.File("kernels/gluon_attn.py")
      .Hunk(90, "def attn_kernel(",
            {"     while lo < hi:", "         if HAS_BIAS:",
             "+            bias = gl.load(bias_ptr + lo)", "             acc += bias",
             "         lo += BLOCK"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].likely_cause(), "More memory traffic (new gl.load inside a loop)");
}

TEST(RootCauseTest, NewStoreOutsideLoopIsWeaker) {
  PatchBuilder patch;
  patch.File("kernels/softmax.py")
      .Hunk(30, "def softmax_kernel(",
            {"     out = num / den", "     tl.store(out_ptr + offs, out, mask=mask)",
             "+    tl.store(lse_ptr + row, tl.log(den))"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), kPatternMemoryOps);
  EXPECT_THAT(hints[0].likely_cause(),
              AllOf(StartsWith("Possibly more memory traffic"), HasSubstr("new tl.store")));
}

TEST(RootCauseTest, LoadMovedIntoLoopIsReported) {
  PatchBuilder patch;
  patch.File("kernels/attn.py")
      .Hunk(70, "def attn_fwd(",
            {"-    q = tl.load(q_ptrs)", "     for start_n in range(0, N_CTX, BLOCK_N):",
             "+        q = tl.load(q_ptrs)", "         qk = tl.dot(q, k)"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].likely_cause(), "More memory traffic (tl.load moved into a loop)");
}

TEST(RootCauseTest, ModifiedLoadGainingAMaskIsMaskingNotAMemoryOp) {
  PatchBuilder patch;
  patch.File("kernels/add.py")
      .Hunk(8, "def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):",
            {"     offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
             "-    x = tl.load(x_ptr + offs)", "+    x = tl.load(x_ptr + offs, mask=offs < n)",
             "     y = tl.load(y_ptr + offs)"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), "Added masking");
  EXPECT_EQ(hints[0].likely_cause(), "Extra ALU + potential branch divergence (new mask=)");
}

TEST(RootCauseTest, NewGlobalLoadInAmdgcnAssembly) {
  PatchBuilder patch;
  patch.File("csrc/amd/gemm.s")
      .Hunk(300, "",
            {" label_loop:", "   v_add_f32 v1, v2, v3",
             "+  global_load_dwordx4 v[4:7], v[0:1], off", "   s_cbranch_scc1 label_loop"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), kPatternMemoryOps);
  EXPECT_THAT(hints[0].likely_cause(), HasSubstr("new global_load_dwordx4"));
}

// --- Changed dtype ------------------------------------------------------------------------------

TEST(RootCauseTest, Fp16ToFp32) {
  PatchBuilder patch;
  patch.File("kernels/gemm.py")
      .Hunk(77, "def gemm_kernel(",
            {"-    a = a.to(tl.float16)", "+    a = a.to(tl.float32)", "     acc += tl.dot(a, b)"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), "Changed dtype");
  EXPECT_EQ(hints[0].likely_cause(),
            "2x memory bandwidth, 2x register pressure (float16 -> float32)");
}

TEST(RootCauseTest, TorchBf16ToFp32AndCudaHalfToFloat) {
  PatchBuilder patch;
  patch.File("bench/bench_gemm.py")
      .Hunk(5, "", {"-DTYPE = torch.bfloat16", "+DTYPE = torch.float32"})
      .File("csrc/gemm.cu")
      .Hunk(12, "",
            {"-__global__ void gemm(const __half* A, const __half* B, float* C) {",
             "+__global__ void gemm(const float* A, const float* B, float* C) {"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(Patterns(hints), ElementsAre(kPatternDtype, kPatternDtype));
  EXPECT_THAT(hints[0].likely_cause(), HasSubstr("bfloat16 -> float32"));
  EXPECT_THAT(hints[1].likely_cause(), HasSubstr("__half -> float"));
}

TEST(RootCauseTest, NarrowingDtypeIsNotAHint) {
  PatchBuilder patch;
  patch.File("kernels/gemm.py")
      .Hunk(77, "def gemm_kernel(", {"-    a = a.to(tl.float32)", "+    a = a.to(tl.float16)"});
  EXPECT_THAT(FindRootCauseHints(patch.str()), IsEmpty());
}

// --- Removed prefetch ---------------------------------------------------------------------------

TEST(RootCauseTest, DeletedCpAsyncDoubleBuffer) {
  PatchBuilder patch;
  patch.File("csrc/gemm_sm80.cu")
      .Hunk(140, "__global__ void gemm_sm80(",
            {"   for (int k = 0; k < k_tiles; ++k) {",
             "-    cp_async_load(smem[(k + 1) % 2], gA, k + 1);  // double buffer",
             "-    asm volatile(\"cp.async.commit_group;\\n\" ::);",
             "     mma_tile(smem[k % 2], acc);", "   }"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), "Removed prefetch");
  EXPECT_THAT(hints[0].likely_cause(), StartsWith("Load latency exposed (deleted cp.async"));
  EXPECT_EQ(hints[0].line(), "-cp_async_load(smem[(k + 1) % 2], gA, k + 1);  // double buffer");
}

TEST(RootCauseTest, DeletedTritonPrefetchAndFewerBuffers) {
  PatchBuilder patch;
  patch.File("kernels/attn.py")
      .Hunk(20, "def attn(",
            {"-    k_next = prefetch_tile(k_ptrs + BLOCK_N)", "     acc = compute(q)"})
      .File("kernels/config.py")
      .Hunk(4, "", {"-NUM_BUFFERS = 2", "-num_buffers = 2", "+num_buffers = 1"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(Patterns(hints), ElementsAre(kPatternPrefetch, kPatternPrefetch));
  EXPECT_THAT(hints[0].likely_cause(), HasSubstr("deleted prefetch"));
  EXPECT_THAT(hints[1].likely_cause(), HasSubstr("num_buffers: 2 -> 1"));
  EXPECT_EQ(hints[1].line(), "+num_buffers = 1");
}

// --- Changed waves_per_eu -----------------------------------------------------------------------

TEST(RootCauseTest, WavesPerEuReduced) {
  PatchBuilder patch;
  patch.File("aiter/ops/triton/gemm_a8w8.py")
      .Hunk(30, "def _get_config():",
            {"-    return {'BLOCK_SIZE_M': 64, 'waves_per_eu': 2, 'matrix_instr_nonkdim': 16}",
             "+    return {'BLOCK_SIZE_M': 64, 'waves_per_eu': 1, 'matrix_instr_nonkdim': 16}"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), "Changed waves_per_eu");
  EXPECT_EQ(hints[0].likely_cause(), "Reduced occupancy (waves_per_eu: 2 -> 1)");
}

TEST(RootCauseTest, WavesPerEuRaisedAndHipAttribute) {
  PatchBuilder patch;
  patch.File("csrc/kernel.hip")
      .Hunk(3, "",
            {"-__global__ __attribute__((amdgpu_waves_per_eu(1))) void k(float* x) {",
             "+__global__ __attribute__((amdgpu_waves_per_eu(4))) void k(float* x) {"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_THAT(hints[0].likely_cause(),
              AllOf(StartsWith("Changed occupancy target"), HasSubstr("waves_per_eu: 1 -> 4")));
}

// --- Added masking ------------------------------------------------------------------------------

TEST(RootCauseTest, AddedTlWhere) {
  PatchBuilder patch;
  patch.File("kernels/attn.py")
      .Hunk(101, "def attn_fwd(",
            {"         qk = tl.dot(q, k)",
             "+        qk = tl.where(offs_m[:, None] >= offs_n[None, :], qk, float(\"-inf\"))",
             "         m_ij = tl.max(qk, 1)"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), kPatternMasking);
  EXPECT_THAT(hints[0].likely_cause(), HasSubstr("new tl.where"));
}

TEST(RootCauseTest, AddedCudaBoundaryCheck) {
  PatchBuilder patch;
  patch.File("csrc/scale.cu")
      .Hunk(5, "__global__ void scale(float* x, float s, int n) {",
            {"   int idx = blockIdx.x * blockDim.x + threadIdx.x;", "+  if (idx < n) {",
             "   x[idx] *= s;", "+  }"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), kPatternMasking);
  EXPECT_THAT(hints[0].likely_cause(), HasSubstr("new boundary check"));
}

// --- Refactored layout --------------------------------------------------------------------------

TEST(RootCauseTest, GluonBlockedLayoutChanged) {
  PatchBuilder patch;
  patch.File("kernels/gluon_copy.py")
      .Hunk(15, "def copy_kernel(",
            {"-    layout: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0])",
             "+    layout: gl.constexpr = gl.BlockedLayout([4, 1], [4, 8], [1, 4], [0, 1])",
             "     offs = gl.arange(0, BLOCK, layout=layout)"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), "Refactored layout");
  EXPECT_THAT(hints[0].likely_cause(),
              AllOf(StartsWith("Possible bank conflicts or non-coalesced access"),
                    HasSubstr("BlockedLayout: [1, 4], [8, 4], [4, 1], [1, 0] -> "
                              "[4, 1], [4, 8], [1, 4], [0, 1]")));
}

TEST(RootCauseTest, MultiLineLayoutKeywordsAndTtgir) {
  PatchBuilder patch;
  patch.File("kernels/gluon_gemm.py")
      .Hunk(30, "def gemm(",
            {"     layout = gl.BlockedLayout(", "-        size_per_thread=[1, 8],",
             "+        size_per_thread=[1, 1],", "         threads_per_warp=[4, 16],", "     )"})
      .File("test/gemm.ttgir")
      .Hunk(1, "",
            {"-#blocked = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], "
             "warpsPerCTA = [4, 1], order = [1, 0]}>",
             "+#blocked = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], "
             "warpsPerCTA = [4, 1], order = [1, 0]}>"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(Patterns(hints), ElementsAre(kPatternLayout, kPatternLayout));
  EXPECT_THAT(hints[0].likely_cause(), HasSubstr("size_per_thread: [1, 8] -> [1, 1]"));
  EXPECT_EQ(hints[1].file(), "test/gemm.ttgir");
  EXPECT_THAT(hints[1].likely_cause(), HasSubstr("threadsPerWarp: [8, 4] -> [4, 8]"));
}

// --- num_stages / num_warps ---------------------------------------------------------------------

TEST(RootCauseTest, NumStagesAndNumWarpsInLaunch) {
  PatchBuilder patch;
  patch.File("kernels/launch.py")
      .Hunk(210, "def launch(a, b):",
            {"-    _kernel[grid](a, b, c, num_stages=1, num_warps=4)",
             "+    _kernel[grid](a, b, c, num_stages=2, num_warps=8)"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(Patterns(hints), ElementsAre(kPatternNumStages, kPatternNumWarps));
  EXPECT_EQ(hints[0].likely_cause(), "Triton pipelining change (num_stages: 1 -> 2)");
  EXPECT_THAT(hints[1].likely_cause(), HasSubstr("num_warps: 4 -> 8"));
}

// --- Multi-file attribution, aggregation, limits ------------------------------------------------

TEST(RootCauseTest, MultiFilePatchAttributesFilesAndHunks) {
  PatchBuilder patch;
  patch.File("README.md")
      .Hunk(1, "", {"-Use BLOCK_SIZE=64 with tl.debug_barrier()", "+Use BLOCK_SIZE=32"})
      .File("kernels/a.py")
      .Hunk(10, "def a_kernel(", {"-    BLOCK_SIZE = 128", "+    BLOCK_SIZE = 256"});
  const std::string first_a = patch.last_header();
  patch.Hunk(50, "def a_host(", {"     y = a_kernel(x)", "+    torch.cuda.synchronize()"});
  const std::string second_a = patch.last_header();
  patch.File("csrc/b.cu")
      .Hunk(7, "__global__ void b(half* x) {", {"-  half v = x[0];", "+  float v = x[0];"});
  const std::string b_header = patch.last_header();
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(Patterns(hints),
              ElementsAre(kPatternTileSizes, kPatternSynchronization, kPatternDtype));
  EXPECT_EQ(hints[0].file(), "kernels/a.py");
  EXPECT_EQ(hints[0].hunk_header(), first_a);
  EXPECT_EQ(hints[1].file(), "kernels/a.py");
  EXPECT_EQ(hints[1].hunk_header(), second_a);
  EXPECT_EQ(hints[2].file(), "csrc/b.cu");
  EXPECT_EQ(hints[2].hunk_header(), b_header);
  EXPECT_EQ(hints[2].line(), "+float v = x[0];");
}

TEST(RootCauseTest, OneHintPerPatternPerHunkWithDetails) {
  PatchBuilder patch;
  patch.File("kernels/k.py")
      .Hunk(1, "def cfg():",
            {"-BLOCK_M = 128", "-BLOCK_N = 128", "+BLOCK_M = 64", "+BLOCK_N = 32", "-TILE_K = 64",
             "+TILE_K = 16", "-BLOCK_SIZE = 8", "+BLOCK_SIZE = 4"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].likely_cause(),
            "Worse occupancy or more iterations (BLOCK_M: 128 -> 64, BLOCK_N: 128 -> 32, "
            "TILE_K: 64 -> 16, and 1 more)");
  EXPECT_EQ(hints[0].line(), "+BLOCK_M = 64");
}

TEST(RootCauseTest, MaxHintsIsRespected) {
  PatchBuilder patch;
  patch.File("csrc/many.cu");
  for (int i = 0; i < 30; ++i) {
    patch.Hunk(10 + i * 20, "__global__ void k(float* x) {",
               {"   x[threadIdx.x] += 1.f;", "+  __syncthreads();", "   x[0] = 0.f;"});
  }
  EXPECT_THAT(FindRootCauseHints(patch.str()), SizeIs(20));
  EXPECT_THAT(FindRootCauseHints(patch.str(), 5), SizeIs(5));
  EXPECT_THAT(FindRootCauseHints(patch.str(), 0), IsEmpty());
  EXPECT_THAT(FindRootCauseHints(patch.str(), 100), SizeIs(30));
}

// --- No false positives -------------------------------------------------------------------------

TEST(RootCauseTest, CommentAndDocstringEditsAreIgnored) {
  PatchBuilder patch;
  patch.File("kernels/attn.py")
      .Hunk(5, "def attn(",
            {"-    # BLOCK_SIZE = 64 works best; add tl.debug_barrier() if racy",
             "+    # BLOCK_SIZE = 32 works best; tl.load inside the loop, num_warps=8",
             "     x = 1  # for i in range(N): tl.load(p)"})
      .Hunk(40, "def helper(",
            {"     \"\"\"Loads one tile.", "-    Uses tl.load(ptr) with num_stages=2.",
             "+    Uses tl.load(ptr, mask=m) with num_stages=3 and tl.where.", "     \"\"\""})
      .Hunk(90, "def mid_docstring(",
            {"-    before: BLOCK_SIZE = 64 and fp16", "+    after: BLOCK_SIZE = 32 and fp32",
             "     \"\"\"", "     return 0"})
      .File("csrc/k.cu")
      .Hunk(3, "",
            {"-// __syncthreads(); BLOCK_SIZE 64", "+// __syncthreads(); BLOCK_SIZE 32",
             "-/* num_warps = 4 */", "+/* num_warps = 8 */", "- * for (int i = 0; i < n; ++i)",
             "+ * for (int i = 0; i < 2 * n; ++i)"});
  EXPECT_THAT(FindRootCauseHints(patch.str()), IsEmpty());
}

TEST(RootCauseTest, DocstringOpenedByBareDelimiterAfterDefIsIgnoredButCodeAfterItCounts) {
  PatchBuilder patch;
  patch.File("kernels/x.py")
      .Hunk(1, "",
            {" def f(x):", "     \"\"\"", "-    Uses BLOCK_SIZE = 64 and tl.debug_barrier().",
             "+    Uses BLOCK_SIZE = 32 and tl.debug_barrier().", "     \"\"\"",
             "-    BLOCK_SIZE = 64", "+    BLOCK_SIZE = 16"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].likely_cause(), "Worse occupancy or more iterations (BLOCK_SIZE: 64 -> 16)");
}

TEST(RootCauseTest, MultiLineStringArgumentDoesNotHideCodeAboveIt) {
  PatchBuilder patch;
  patch.File("kernels/x.py")
      .Hunk(1, "def f(x):",
            {"-    BLOCK_SIZE = 64", "+    BLOCK_SIZE = 16", "     log(", "         \"\"\"",
             "         text with tl.load(p)", "         \"\"\"", "     )"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(1));
  EXPECT_EQ(hints[0].pattern(), kPatternTileSizes);
}

TEST(RootCauseTest, DocumentationFilesAreIgnored) {
  PatchBuilder patch;
  patch.File("docs/tuning.md")
      .Hunk(1, "", {"-    BLOCK_SIZE = 64", "+    BLOCK_SIZE = 32", "+    tl.debug_barrier()"})
      .File("README")
      .Hunk(1, "", {"-num_warps=4", "+num_warps=8"})
      .File("docs/notes.rst")
      .Hunk(1, "", {"+   x = tl.load(p)"});
  EXPECT_THAT(FindRootCauseHints(patch.str()), IsEmpty());
}

TEST(RootCauseTest, RenamesAndMovedCodeAreNotChanges) {
  PatchBuilder patch;
  patch.Raw(
      "diff --git a/kernels/old_name.py b/kernels/new_name.py\n"
      "similarity index 100%\n"
      "rename from kernels/old_name.py\n"
      "rename to kernels/new_name.py\n");
  // Code moved from one file to another verbatim (a split of a module).
  patch.File("kernels/big.py")
      .Hunk(10, "",
            {"-def barrier_kernel(x_ptr, BLOCK_SIZE: tl.constexpr):",
             "-    x = tl.load(x_ptr + tl.arange(0, BLOCK_SIZE))", "-    tl.debug_barrier()",
             "-    tl.store(x_ptr, x, mask=x > 0)"})
      .File("kernels/small.py")
      .Hunk(1, "",
            {"+def barrier_kernel(x_ptr, BLOCK_SIZE: tl.constexpr):",
             "+        x = tl.load(x_ptr + tl.arange(0, BLOCK_SIZE))",
             "+        tl.debug_barrier()", "+        tl.store(x_ptr, x, mask=x > 0)"});
  EXPECT_THAT(FindRootCauseHints(patch.str()), IsEmpty());
}

TEST(RootCauseTest, UnrelatedCodeChangesAreNotHints) {
  PatchBuilder patch;
  patch.File("kernels/util.py")
      .Hunk(3, "def log_config(cfg):",
            {"-    print(\"config\", cfg)", "+    logger.info(\"config: %s\", cfg)",
             "-    for key in sorted(cfg):", "+    for key in sorted(cfg):", "         pass"})
      .File("setup.py")
      .Hunk(12, "", {"-    version=\"0.1.0\",", "+    version=\"0.2.0\","})
      .File("csrc/host.cc")
      .Hunk(40, "int main() {",
            {"-  int mask = 0xff;", "+  int mask = 0xf0;", "-  float scale = 1.0f;",
             "+  float scale = 2.0f;"});
  EXPECT_THAT(FindRootCauseHints(patch.str()), IsEmpty());
}

TEST(RootCauseTest, EmptyAndBinaryPatchesGiveNoHints) {
  EXPECT_THAT(FindRootCauseHints(""), IsEmpty());
  EXPECT_THAT(FindRootCauseHints("diff --git a/w.bin b/w.bin\n"
                                 "Binary files a/w.bin and b/w.bin differ\n"),
              IsEmpty());
}

// --- SummarizeHypothesis ------------------------------------------------------------------------

TEST(RootCauseTest, HypothesisWithoutHints) {
  EXPECT_EQ(SummarizeHypothesis({}), "No known pattern matched; read the culprit's diff.");
}

TEST(RootCauseTest, HypothesisLeadsWithTheStrongestHint) {
  PatchBuilder patch;
  patch.File("kernels/a.py")
      .Hunk(10, "def host(", {"     y = k(x)", "+    torch.cuda.synchronize()"})
      .Hunk(60, "def k(", {"-    BLOCK_SIZE = 64", "+    BLOCK_SIZE = 32"})
      .File("kernels/b.py")
      .Hunk(3, "def g(", {"     z = 0", "+    tl.store(z_ptr, z)"});
  const std::vector<v1::RootCauseHint> hints = FindRootCauseHints(patch.str());
  ASSERT_THAT(hints, SizeIs(3));
  EXPECT_EQ(SummarizeHypothesis(hints),
            "Likely cause: worse occupancy or more iterations (BLOCK_SIZE: 64 -> 32), from "
            "changed tile sizes in kernels/a.py. Other suspects: added synchronization in "
            "kernels/a.py, added memory ops in kernels/b.py.");
}

}  // namespace
}  // namespace kbisect
