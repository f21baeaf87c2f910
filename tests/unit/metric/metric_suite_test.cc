// Copyright 2026 The kbisect Authors.

#include "common/metric/metric_suite.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/metric/metric.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

MetricSuiteSpec Auto() { return MetricSuiteSpec{}; }

MetricSuiteSpec Regex(std::string pattern) {
  MetricSuiteSpec spec;
  spec.kind = MetricSuiteSpec::Kind::kRegex;
  spec.pattern = std::move(pattern);
  return spec;
}

MetricSuiteSpec JsonPath(std::string path) {
  MetricSuiteSpec spec;
  spec.kind = MetricSuiteSpec::Kind::kJsonPath;
  spec.pattern = std::move(path);
  return spec;
}

// Extracts with `spec`, failing the test on error.
std::vector<NamedMetric> MustExtract(const MetricSuiteSpec& spec, std::string_view output) {
  absl::StatusOr<std::vector<NamedMetric>> metrics = ExtractMetricSuite(spec, output);
  EXPECT_TRUE(metrics.ok()) << metrics.status() << "\noutput:\n" << output;
  return metrics.ok() ? *metrics : std::vector<NamedMetric>{};
}

std::vector<std::string> Names(const std::vector<NamedMetric>& metrics) {
  std::vector<std::string> names;
  for (const NamedMetric& m : metrics) {
    EXPECT_EQ(m.name, m.metric.name);
    names.push_back(m.name);
  }
  return names;
}

// The metric named `name`; fails the test if there is none.
Metric Find(const std::vector<NamedMetric>& metrics, std::string_view name) {
  for (const NamedMetric& m : metrics) {
    if (m.name == name) return m.metric;
  }
  ADD_FAILURE() << "no metric named " << name;
  return Metric{};
}

// ---------------------------------------------------------------------------------------------
// Fixtures.

// `kernels_bench --benchmark_format=json` with its stderr: the preamble and a warning before the
// report, whose "context" block holds arrays and numbers of its own.
constexpr char kGoogleBenchmark[] =
    "2026-03-01T12:00:00+00:00\n"
    "Running ./build/bench/kernels_bench\n"
    "Run on (16 X 3400 MHz CPU s)\n"
    "CPU Caches:\n"
    "  L1 Data 32 KiB (x8)\n"
    "  L2 Unified 1024 KiB (x8)\n"
    "Load Average: 0.52, 0.58, 0.59\n"
    "***WARNING*** CPU scaling is enabled, the benchmark real time measurements may be noisy and "
    "will incur extra overhead.\n"
    R"({
  "context": {
    "date": "2026-03-01T12:00:00+00:00",
    "host_name": "gpu-box-3",
    "executable": "./build/bench/kernels_bench",
    "num_cpus": 16,
    "mhz_per_cpu": 3400,
    "cpu_scaling_enabled": true,
    "caches": [
      {
        "type": "Data",
        "level": 1,
        "size": 32768,
        "num_sharing": 2
      },
      {
        "type": "Unified",
        "level": 2,
        "size": 1048576,
        "num_sharing": 2
      }
    ],
    "load_avg": [0.52,0.58,0.59],
    "library_build_type": "release"
  },
  "benchmarks": [
    {
      "name": "BM_Softmax/1024",
      "family_index": 0,
      "per_family_instance_index": 0,
      "run_name": "BM_Softmax/1024",
      "run_type": "iteration",
      "repetitions": 1,
      "repetition_index": 0,
      "threads": 1,
      "iterations": 566347,
      "real_time": 1.2350000000000000e+03,
      "cpu_time": 1.2301000000000000e+03,
      "time_unit": "ns",
      "bytes_per_second": 3.3165234567890000e+09
    },
    {
      "name": "BM_Softmax/4096",
      "family_index": 0,
      "per_family_instance_index": 1,
      "run_name": "BM_Softmax/4096",
      "run_type": "iteration",
      "repetitions": 1,
      "repetition_index": 0,
      "threads": 1,
      "iterations": 143021,
      "real_time": 4.9010000000000000e+03,
      "cpu_time": 4.8900000000000000e+03,
      "time_unit": "ns",
      "bytes_per_second": 3.3427543210000000e+09
    },
    {
      "name": "BM_OutOfMemory/65536",
      "family_index": 1,
      "per_family_instance_index": 0,
      "run_name": "BM_OutOfMemory/65536",
      "run_type": "iteration",
      "repetitions": 1,
      "repetition_index": 0,
      "threads": 1,
      "iterations": 0,
      "real_time": 0.0000000000000000e+00,
      "cpu_time": 0.0000000000000000e+00,
      "time_unit": "ns",
      "error_occurred": true,
      "error_message": "cudaMalloc failed: out of memory"
    },
    {
      "name": "BM_LayerNorm/4096/real_time",
      "family_index": 2,
      "per_family_instance_index": 0,
      "run_name": "BM_LayerNorm/4096/real_time",
      "run_type": "iteration",
      "repetitions": 1,
      "repetition_index": 0,
      "threads": 1,
      "iterations": 280000,
      "real_time": 2.5000000000000000e+00,
      "cpu_time": 2.4800000000000000e+00,
      "time_unit": "us",
      "items_per_second": 1.6384000000000000e+09
    }
  ]
}
)";

// `--benchmark_repetitions=3 --benchmark_report_aggregates_only=true`: only aggregates, one of
// whose benchmarks failed.
constexpr char kGoogleBenchmarkAggregates[] = R"({
  "context": {
    "date": "2026-03-01T12:05:00+00:00",
    "host_name": "gpu-box-3",
    "executable": "./build/bench/kernels_bench",
    "num_cpus": 16,
    "mhz_per_cpu": 3400,
    "cpu_scaling_enabled": false,
    "caches": [],
    "load_avg": [0.3,0.4,0.5],
    "library_build_type": "release"
  },
  "benchmarks": [
    {
      "name": "BM_Softmax/1024_mean",
      "family_index": 0,
      "per_family_instance_index": 0,
      "run_name": "BM_Softmax/1024",
      "run_type": "aggregate",
      "repetitions": 3,
      "threads": 1,
      "aggregate_name": "mean",
      "aggregate_unit": "time",
      "iterations": 3,
      "real_time": 1.2500000000000000e+03,
      "cpu_time": 1.2400000000000000e+03,
      "time_unit": "ns"
    },
    {
      "name": "BM_Softmax/1024_median",
      "family_index": 0,
      "per_family_instance_index": 0,
      "run_name": "BM_Softmax/1024",
      "run_type": "aggregate",
      "repetitions": 3,
      "threads": 1,
      "aggregate_name": "median",
      "aggregate_unit": "time",
      "iterations": 3,
      "real_time": 1.2400000000000000e+03,
      "cpu_time": 1.2300000000000000e+03,
      "time_unit": "ns"
    },
    {
      "name": "BM_Softmax/1024_stddev",
      "family_index": 0,
      "per_family_instance_index": 0,
      "run_name": "BM_Softmax/1024",
      "run_type": "aggregate",
      "repetitions": 3,
      "threads": 1,
      "aggregate_name": "stddev",
      "aggregate_unit": "time",
      "iterations": 3,
      "real_time": 1.5000000000000000e+01,
      "cpu_time": 1.4000000000000000e+01,
      "time_unit": "ns"
    },
    {
      "name": "BM_Softmax/1024_cv",
      "family_index": 0,
      "per_family_instance_index": 0,
      "run_name": "BM_Softmax/1024",
      "run_type": "aggregate",
      "repetitions": 3,
      "threads": 1,
      "aggregate_name": "cv",
      "aggregate_unit": "percentage",
      "iterations": 3,
      "real_time": 1.2000000000000000e-02,
      "cpu_time": 1.1000000000000000e-02,
      "time_unit": "ns"
    },
    {
      "name": "BM_Gemm/bf16",
      "family_index": 1,
      "per_family_instance_index": 0,
      "run_name": "BM_Gemm/bf16",
      "run_type": "iteration",
      "repetitions": 3,
      "repetition_index": 0,
      "threads": 1,
      "iterations": 0,
      "real_time": 0.0000000000000000e+00,
      "cpu_time": 0.0000000000000000e+00,
      "time_unit": "ms",
      "error_occurred": true,
      "error_message": "no tensor cores on this device"
    },
    {
      "name": "BM_Gemm/fp32_mean",
      "family_index": 2,
      "per_family_instance_index": 0,
      "run_name": "BM_Gemm/fp32",
      "run_type": "aggregate",
      "repetitions": 3,
      "threads": 1,
      "aggregate_name": "mean",
      "aggregate_unit": "time",
      "iterations": 3,
      "real_time": 3.1000000000000000e+00,
      "cpu_time": 3.0000000000000000e+00,
      "time_unit": "ms"
    },
    {
      "name": "BM_Gemm/fp32_median",
      "family_index": 2,
      "per_family_instance_index": 0,
      "run_name": "BM_Gemm/fp32",
      "run_type": "aggregate",
      "repetitions": 3,
      "threads": 1,
      "aggregate_name": "median",
      "aggregate_unit": "time",
      "iterations": 3,
      "real_time": 3.0500000000000000e+00,
      "cpu_time": 3.0000000000000000e+00,
      "time_unit": "ms"
    }
  ]
}
)";

// `pytest --benchmark-json=out.json --benchmark-columns=min,median,max,rounds` followed by
// `cat out.json`: pytest's own report, then the JSON report.
constexpr char kPytestBenchmark[] =
    "============================= test session starts ==============================\n"
    "platform linux -- Python 3.11.2, pytest-8.1.1, pluggy-1.4.0\n"
    "benchmark: 4.0.0 (defaults: timer=time.perf_counter disable_gc=False min_rounds=5 "
    "min_time=0.000005 max_time=1.0 calibrate_precision=10 warmup=False "
    "warmup_iterations=100000)\n"
    "collected 2 items\n"
    "\n"
    "tests/test_kernels.py ..                                                 [100%]\n"
    "\n"
    "----------------------------- benchmark: 2 tests ------------------------------\n"
    "Name (time in us)              Min              Median                 Max  Rounds\n"
    "-------------------------------------------------------------------------------\n"
    "test_softmax_fwd[1024]     98.1230 (1.0)    100.5000 (1.0)    140.2210 (1.0)    1000\n"
    "test_matmul[bf16]         240.0000 (2.45)   249.0000 (2.48)   310.0000 (2.21)    400\n"
    "-------------------------------------------------------------------------------\n"
    "============================== 2 passed in 3.21s ===============================\n"
    R"({
    "machine_info": {
        "node": "gpu-box-3",
        "processor": "x86_64",
        "machine": "x86_64",
        "python_compiler": "GCC 12.2.0",
        "python_implementation": "CPython",
        "python_version": "3.11.2",
        "release": "6.1.0-18-amd64",
        "system": "Linux",
        "cpu": {
            "arch": "X86_64",
            "bits": 64,
            "count": 16,
            "brand_raw": "AMD EPYC 7763 64-Core Processor"
        }
    },
    "commit_info": {
        "id": "0123456789abcdef0123456789abcdef01234567",
        "time": "2026-03-01T11:58:00+00:00",
        "author_time": "2026-03-01T11:58:00+00:00",
        "dirty": false,
        "project": "kernels",
        "branch": "main"
    },
    "benchmarks": [
        {
            "group": null,
            "name": "test_softmax_fwd[1024]",
            "fullname": "tests/test_kernels.py::test_softmax_fwd[1024]",
            "params": {
                "n": 1024
            },
            "param": "1024",
            "extra_info": {},
            "options": {
                "disable_gc": false,
                "timer": "perf_counter",
                "min_rounds": 5,
                "max_time": 1.0,
                "min_time": 5e-06,
                "warmup": false
            },
            "stats": {
                "min": 9.8123e-05,
                "max": 0.000140221,
                "mean": 0.000101234,
                "stddev": 3.456e-06,
                "rounds": 1000,
                "median": 0.0001005,
                "iqr": 1.234e-06,
                "q1": 0.0001,
                "q3": 0.000101234,
                "iqr_outliers": 15,
                "stddev_outliers": 12,
                "outliers": "12;15",
                "ld15iqr": 9.8123e-05,
                "hd15iqr": 0.000103,
                "ops": 9878.1,
                "total": 0.101234,
                "iterations": 1
            }
        },
        {
            "group": null,
            "name": "test_matmul[bf16]",
            "fullname": "tests/test_kernels.py::test_matmul[bf16]",
            "params": {
                "dtype": "bf16"
            },
            "param": "bf16",
            "extra_info": {},
            "options": {
                "disable_gc": false,
                "timer": "perf_counter",
                "min_rounds": 5,
                "max_time": 1.0,
                "min_time": 5e-06,
                "warmup": false
            },
            "stats": {
                "min": 0.00024,
                "max": 0.00031,
                "mean": 0.0002501,
                "stddev": 8e-06,
                "rounds": 400,
                "median": 0.000249,
                "iqr": 4e-06,
                "q1": 0.000247,
                "q3": 0.000251,
                "iqr_outliers": 6,
                "stddev_outliers": 5,
                "outliers": "5;6",
                "ld15iqr": 0.00024,
                "hd15iqr": 0.000257,
                "ops": 3998.4,
                "total": 0.10004,
                "iterations": 1
            }
        }
    ],
    "datetime": "2026-03-01T12:00:03.123456+00:00",
    "version": "4.0.0"
}
)";

// A Helion / tritonbench-style run: autotuning logs, configuration and prose around the table of
// results, which uses each of the row forms.
constexpr char kKernelTable[] =
    "[0s] Starting autotuning process, this may take a while...\n"
    "[2s] Initial population: failed=3 ok=37 min=0.0123 mid=0.0456 max=0.0789 "
    "best=Config(block_sizes=[64, 128], num_warps=4)\n"
    R"([61s] Autotuning complete in 61.2s after searching 1520 configs.
One can hardcode the best config and skip autotuning with:
    @helion.kernel(config=helion.Config(block_sizes=[64, 128], num_warps=4, num_stages=3))
batch_size: 32
seq_len = 2048
seed=42
num_warps=4
CUDA_VISIBLE_DEVICES=0
torch.__version__: 2.3
step 3 of 10
epoch 3
python 3.11
Load Average: 0.52, 0.58, 0.59
Benchmark results (median of 100 runs):
softmax_fwd: 0.0123 ms
softmax_bwd: 0.0245 ms
layernorm 5.1us
matmul_bf16  = 612.4 TFLOPS
rms_norm: 1,234.5 GB/s
attention_latency: 0.81
speedup_vs_torch: 1.42x
All benchmarks done.
)";

// ---------------------------------------------------------------------------------------------
// Auto: Google Benchmark JSON.

TEST(SuiteAutoTest, GoogleBenchmarkJson) {
  const std::vector<NamedMetric> metrics = MustExtract(Auto(), kGoogleBenchmark);
  // The errored benchmark is left out; counters such as bytes_per_second are not metrics.
  EXPECT_THAT(Names(metrics),
              ElementsAre("BM_Softmax/1024", "BM_Softmax/4096", "BM_LayerNorm/4096/real_time"));
  const Metric softmax = Find(metrics, "BM_Softmax/1024");
  EXPECT_DOUBLE_EQ(softmax.value, 1.235e-3);  // 1235 ns in ms.
  EXPECT_EQ(softmax.unit, "ms");
  EXPECT_EQ(softmax.direction, Direction::kLowerIsBetter);
  EXPECT_EQ(softmax.matched_text, "BM_Softmax/1024 real_time = 1235.0 ns");
  EXPECT_DOUBLE_EQ(Find(metrics, "BM_Softmax/4096").value, 4.901e-3);
  const Metric layernorm = Find(metrics, "BM_LayerNorm/4096/real_time");
  EXPECT_DOUBLE_EQ(layernorm.value, 2.5e-3);  // 2.5 us in ms.
  EXPECT_EQ(layernorm.unit, "ms");
}

TEST(SuiteAutoTest, GoogleBenchmarkAggregatesOnlyUseTheMedian) {
  const std::vector<NamedMetric> metrics = MustExtract(Auto(), kGoogleBenchmarkAggregates);
  // Named by run_name (no "_median" suffix); BM_Gemm/bf16 failed.
  EXPECT_THAT(Names(metrics), ElementsAre("BM_Softmax/1024", "BM_Gemm/fp32"));
  EXPECT_DOUBLE_EQ(Find(metrics, "BM_Softmax/1024").value, 1.24e-3);
  EXPECT_DOUBLE_EQ(Find(metrics, "BM_Gemm/fp32").value, 3.05);
  EXPECT_EQ(Find(metrics, "BM_Gemm/fp32").matched_text, "BM_Gemm/fp32_median real_time = 3.05 ms");
}

TEST(SuiteAutoTest, GoogleBenchmarkRepetitionsWithAggregatesUseTheMedian) {
  // --benchmark_repetitions=3 without report_aggregates_only: each repetition, then the
  // aggregates. The median is the benchmark's value, not the last repetition.
  const std::string output = R"({"context": {"num_cpus": 2}, "benchmarks": [
    {"name": "BM_A", "run_name": "BM_A", "run_type": "iteration", "repetitions": 3,
     "repetition_index": 0, "real_time": 10.0, "cpu_time": 10.0, "time_unit": "us"},
    {"name": "BM_A", "run_name": "BM_A", "run_type": "iteration", "repetitions": 3,
     "repetition_index": 1, "real_time": 30.0, "cpu_time": 30.0, "time_unit": "us"},
    {"name": "BM_A", "run_name": "BM_A", "run_type": "iteration", "repetitions": 3,
     "repetition_index": 2, "real_time": 12.0, "cpu_time": 12.0, "time_unit": "us"},
    {"name": "BM_A_mean", "run_name": "BM_A", "run_type": "aggregate", "aggregate_name": "mean",
     "real_time": 17.33, "cpu_time": 17.33, "time_unit": "us"},
    {"name": "BM_A_median", "run_name": "BM_A", "run_type": "aggregate",
     "aggregate_name": "median", "real_time": 12.0, "cpu_time": 12.0, "time_unit": "us"},
    {"name": "BM_B", "run_name": "BM_B", "run_type": "iteration", "real_time": 5.0,
     "cpu_time": 5.0, "time_unit": "ms"}
  ]})";
  const std::vector<NamedMetric> metrics = MustExtract(Auto(), output);
  EXPECT_THAT(Names(metrics), ElementsAre("BM_A", "BM_B"));
  EXPECT_DOUBLE_EQ(Find(metrics, "BM_A").value, 0.012);
  EXPECT_DOUBLE_EQ(Find(metrics, "BM_B").value, 5);
}

TEST(SuiteAutoTest, OldGoogleBenchmarkWithoutRunTypeOrTimeUnit) {
  // Google Benchmark before 1.5 wrote neither run_name nor run_type; time_unit defaults to ns.
  const std::vector<NamedMetric> metrics =
      MustExtract(Auto(), R"({"benchmarks": [{"name": "BM_X", "iterations": 10,
                                              "real_time": 2000, "cpu_time": 1900},
                                             {"name": "BM_Y", "iterations": 10,
                                              "real_time": 3000, "cpu_time": 2900,
                                              "time_unit": "ns"}]})");
  EXPECT_THAT(Names(metrics), ElementsAre("BM_X", "BM_Y"));
  EXPECT_DOUBLE_EQ(Find(metrics, "BM_X").value, 0.002);
}

// ---------------------------------------------------------------------------------------------
// Auto: pytest-benchmark JSON.

TEST(SuiteAutoTest, PytestBenchmarkJson) {
  const std::vector<NamedMetric> metrics = MustExtract(Auto(), kPytestBenchmark);
  EXPECT_THAT(Names(metrics), ElementsAre("test_softmax_fwd[1024]", "test_matmul[bf16]"));
  const Metric softmax = Find(metrics, "test_softmax_fwd[1024]");
  EXPECT_DOUBLE_EQ(softmax.value, 0.1005);  // The median, 100.5 us, in ms.
  EXPECT_EQ(softmax.unit, "ms");
  EXPECT_EQ(softmax.direction, Direction::kLowerIsBetter);
  EXPECT_EQ(softmax.matched_text,
            "tests/test_kernels.py::test_softmax_fwd[1024] median = 0.0001005 s");
  EXPECT_DOUBLE_EQ(Find(metrics, "test_matmul[bf16]").value, 0.249);
}

TEST(SuiteAutoTest, PytestBenchmarkSameNameInTwoModulesUsesFullNames) {
  const std::string output = R"({"benchmarks": [
    {"name": "test_fwd", "fullname": "tests/test_softmax.py::test_fwd", "stats": {"median": 0.001}},
    {"name": "test_fwd", "fullname": "tests/test_matmul.py::test_fwd", "stats": {"median": 0.002}},
    {"name": "test_bwd", "fullname": "tests/test_matmul.py::test_bwd", "stats": {"median": 0.003}}
  ], "version": "4.0.0"})";
  const std::vector<NamedMetric> metrics = MustExtract(Auto(), output);
  EXPECT_THAT(Names(metrics), ElementsAre("tests/test_softmax.py::test_fwd",
                                          "tests/test_matmul.py::test_fwd", "test_bwd"));
  EXPECT_DOUBLE_EQ(Find(metrics, "tests/test_matmul.py::test_fwd").value, 2);
}

// ---------------------------------------------------------------------------------------------
// Auto: a plain table.

TEST(SuiteAutoTest, TableAmongLogNoise) {
  const std::vector<NamedMetric> metrics = MustExtract(Auto(), kKernelTable);
  // Configuration, prose, clock-like and list lines are not rows.
  EXPECT_THAT(Names(metrics), ElementsAre("softmax_fwd", "softmax_bwd", "layernorm", "matmul_bf16",
                                          "rms_norm", "attention_latency", "speedup_vs_torch"));
  const Metric fwd = Find(metrics, "softmax_fwd");
  EXPECT_DOUBLE_EQ(fwd.value, 0.0123);
  EXPECT_EQ(fwd.unit, "ms");
  EXPECT_EQ(fwd.direction, Direction::kLowerIsBetter);
  EXPECT_EQ(fwd.matched_text, "softmax_fwd: 0.0123 ms");
  const Metric layernorm = Find(metrics, "layernorm");  // "layernorm 5.1us"
  EXPECT_DOUBLE_EQ(layernorm.value, 0.0051);
  EXPECT_EQ(layernorm.unit, "ms");
  const Metric matmul = Find(metrics, "matmul_bf16");  // "matmul_bf16  = 612.4 TFLOPS"
  EXPECT_DOUBLE_EQ(matmul.value, 612.4);
  EXPECT_EQ(matmul.unit, "TFLOPS");
  EXPECT_EQ(matmul.direction, Direction::kHigherIsBetter);
  const Metric rms = Find(metrics, "rms_norm");  // Thousands separators.
  EXPECT_DOUBLE_EQ(rms.value, 1234.5);
  EXPECT_EQ(rms.unit, "GB/s");
  const Metric attention = Find(metrics, "attention_latency");  // No unit: the name decides.
  EXPECT_DOUBLE_EQ(attention.value, 0.81);
  EXPECT_EQ(attention.unit, "");
  EXPECT_EQ(attention.direction, Direction::kLowerIsBetter);
  const Metric speedup = Find(metrics, "speedup_vs_torch");
  EXPECT_DOUBLE_EQ(speedup.value, 1.42);
  EXPECT_EQ(speedup.unit, "x");
  EXPECT_EQ(speedup.direction, Direction::kHigherIsBetter);
}

TEST(SuiteAutoTest, TableRowForms) {
  const std::vector<NamedMetric> metrics = MustExtract(Auto(),
                                                       "  model.layers.0/attn[bf16]: 1.5 ms\r\n"
                                                       "decode-step=250 tokens/s\r\n"
                                                       "kernel_time_us = 789\r\n"
                                                       "copy_h2d\t12.5 GiB/s\r\n"
                                                       "fused_moe 1.5e-3 s\n"
                                                       "occupancy: 87.5 %\n");
  EXPECT_THAT(Names(metrics), ElementsAre("model.layers.0/attn[bf16]", "decode-step",
                                          "kernel_time_us", "copy_h2d", "fused_moe", "occupancy"));
  EXPECT_EQ(Find(metrics, "decode-step").unit, "tokens/s");
  EXPECT_EQ(Find(metrics, "decode-step").direction, Direction::kHigherIsBetter);
  EXPECT_DOUBLE_EQ(Find(metrics, "kernel_time_us").value, 0.789);  // The name's unit suffix.
  EXPECT_EQ(Find(metrics, "kernel_time_us").unit, "ms");
  EXPECT_NEAR(Find(metrics, "copy_h2d").value, 12.5 * 1.073741824, 1e-9);
  EXPECT_DOUBLE_EQ(Find(metrics, "fused_moe").value, 1.5);
  EXPECT_EQ(Find(metrics, "occupancy").unit, "%");
  EXPECT_EQ(Find(metrics, "occupancy").direction, Direction::kUnknown);
}

TEST(SuiteAutoTest, RepeatedNamesKeepTheirFirstPlaceAndTheirLastValue) {
  const std::vector<NamedMetric> metrics = MustExtract(Auto(),
                                                       "softmax: 5.0 ms\n"
                                                       "matmul: 3.0 ms\n"
                                                       "softmax: 1.0 ms\n"
                                                       "matmul: 2.0 ms\n"
                                                       "gelu: 0.5 ms\n");
  EXPECT_THAT(Names(metrics), ElementsAre("softmax", "matmul", "gelu"));
  EXPECT_DOUBLE_EQ(Find(metrics, "softmax").value, 1);
  EXPECT_DOUBLE_EQ(Find(metrics, "matmul").value, 2);
}

TEST(SuiteAutoTest, NonFiniteLastValueLeavesTheMetricOut) {
  const std::vector<NamedMetric> metrics = MustExtract(Auto(),
                                                       "softmax: 1.0 ms\n"
                                                       "matmul: 3.0 ms\n"
                                                       "softmax: nan ms\n"
                                                       "gelu: inf ms\n");
  EXPECT_THAT(Names(metrics), ElementsAre("matmul"));
  absl::StatusOr<std::vector<NamedMetric>> none =
      ExtractMetricSuite(Auto(), "softmax: nan ms\nmatmul: NaN ms\n");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(),
              HasSubstr("the last values of softmax, matmul are not finite numbers"));
}

TEST(SuiteAutoTest, OneMetricIsNotATable) {
  // However often it is printed, a single metric is ExtractMetric's case.
  absl::StatusOr<std::vector<NamedMetric>> one =
      ExtractMetricSuite(Auto(), "Latency: 5.0 ms\nLatency: 1.2 ms\nLatency: 1.1 ms\n");
  EXPECT_EQ(one.status().code(), absl::StatusCode::kNotFound);
}

TEST(SuiteAutoTest, BuildAndBenchmarkLogsAreNotATable) {
  // Real build and console-benchmark output: every line is either prose, a configuration value or
  // has more on it than one number and a unit.
  const std::string output =
      "-- The CXX compiler identification is GNU 12.2.0\n"
      "-- Found CUDAToolkit: /usr/local/cuda/include (found version \"12.4.131\")\n"
      "[ 45%] Building CXX object common/CMakeFiles/kernels.dir/softmax.cc.o\n"
      "[100%] Linking CXX executable kernels_bench\n"
      "Successfully installed torch-2.3.0 triton-2.3.0\n"
      "Took 12.3 seconds to compile\n"
      "real\t0m12.345s\n"
      "user\t0m10.001s\n"
      "sys\t0m1.200s\n"
      "Run on (16 X 3400 MHz CPU s)\n"
      "  L1 Data 32 KiB (x8)\n"
      "Load Average: 0.52, 0.58, 0.59\n"
      "------------------------------------------------------------\n"
      "Benchmark                  Time             CPU   Iterations\n"
      "------------------------------------------------------------\n"
      "BM_Softmax/1024         1235 ns         1230 ns       566347\n"
      "BM_Softmax/4096         4901 ns         4890 ns       143021\n"
      "12:00:05 INFO step 3 of 10\n"
      "batch_size: 32\n"
      "seed=42\n"
      "num_warps=4\n"
      "BLOCK_SIZE = 128\n"
      "CUDA_VISIBLE_DEVICES=0\n"
      "torch.__version__: 2.3\n"
      "python 3.11\n"
      "epoch 3\n"
      "layers: 12 heads\n"
      "retry 2 of 5\n";
  absl::StatusOr<std::vector<NamedMetric>> metrics = ExtractMetricSuite(Auto(), output);
  EXPECT_EQ(metrics.status().code(), absl::StatusCode::kNotFound)
      << (metrics.ok() ? ::testing::PrintToString(Names(*metrics)) : "");
}

TEST(SuiteAutoTest, JsonWinsOverATableAndGoogleBenchmarkOverPytest) {
  // A table before the JSON report: the report is the suite.
  const std::string output = std::string("softmax: 1 ms\nmatmul: 2 ms\n") + kGoogleBenchmark;
  EXPECT_THAT(Names(MustExtract(Auto(), output)),
              ElementsAre("BM_Softmax/1024", "BM_Softmax/4096", "BM_LayerNorm/4096/real_time"));
  // A JSON object that is neither report: the table is used.
  EXPECT_THAT(Names(MustExtract(Auto(), "softmax: 1 ms\nmatmul: 2 ms\n{\"benchmarks\": []}\n")),
              ElementsAre("softmax", "matmul"));
}

TEST(SuiteAutoTest, NothingFoundQuotesTheTail) {
  absl::StatusOr<std::vector<NamedMetric>> m =
      ExtractMetricSuite(Auto(), "compiling...\ndone\nSegmentation fault (core dumped)\n");
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(m.status().message(),
              AllOf(HasSubstr("found no metrics"), HasSubstr("Google Benchmark JSON"),
                    HasSubstr("(?P<name>...)"), HasSubstr("| Segmentation fault (core dumped)")));
  absl::StatusOr<std::vector<NamedMetric>> empty = ExtractMetricSuite(Auto(), "");
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(empty.status().message(), HasSubstr("printed nothing"));
  // Every Google Benchmark entry failed.
  absl::StatusOr<std::vector<NamedMetric>> failed = ExtractMetricSuite(
      Auto(), R"({"benchmarks": [{"name": "BM_A", "run_type": "iteration", "real_time": 0,
                                  "time_unit": "ns", "error_occurred": true}]})");
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kNotFound);
}

// ---------------------------------------------------------------------------------------------
// Regex mode.

TEST(SuiteRegexTest, EveryMatchIsAMetric) {
  const std::vector<NamedMetric> metrics = MustExtract(Regex(R"((?P<name>\w+): ([0-9.]+) ms)"),
                                                       "warming up\n"
                                                       "softmax: 0.5 ms\n"
                                                       "I0301 12:00:05 noise: 7 tokens\n"
                                                       "matmul: 1.5 ms, gelu: 0.25 ms\n");
  EXPECT_THAT(Names(metrics), ElementsAre("softmax", "matmul", "gelu"));
  const Metric gelu = Find(metrics, "gelu");
  EXPECT_DOUBLE_EQ(gelu.value, 0.25);
  EXPECT_EQ(gelu.unit, "ms");
  EXPECT_EQ(gelu.direction, Direction::kLowerIsBetter);
  EXPECT_EQ(gelu.matched_text, "gelu: 0.25 ms");
}

TEST(SuiteRegexTest, UnitAfterTheValueIsRead) {
  // The pattern does not name the unit: it is read after the value, as ExtractMetric does.
  const std::vector<NamedMetric> metrics = MustExtract(
      Regex(R"(^(?P<name>\S+)\s+([0-9.]+))"), "softmax 1500 us\nmatmul 400 TFLOPS\nnoise\n");
  EXPECT_THAT(Names(metrics), ElementsAre("softmax", "matmul"));
  EXPECT_DOUBLE_EQ(Find(metrics, "softmax").value, 1.5);
  EXPECT_EQ(Find(metrics, "softmax").unit, "ms");
  EXPECT_EQ(Find(metrics, "matmul").unit, "TFLOPS");
  EXPECT_EQ(Find(metrics, "matmul").direction, Direction::kHigherIsBetter);
}

TEST(SuiteRegexTest, ValueGroupMayComeFirstAndTheLabelDescribesIt) {
  const std::vector<NamedMetric> first = MustExtract(Regex(R"(([0-9.]+) us\s+(?P<name>\S+))"),
                                                     "  12.5 us  softmax_fwd\n  7 us  gelu\n");
  EXPECT_THAT(Names(first), ElementsAre("softmax_fwd", "gelu"));
  EXPECT_DOUBLE_EQ(Find(first, "softmax_fwd").value, 0.0125);
  // No unit after the value: the label before it says what the number is.
  const std::vector<NamedMetric> labelled =
      MustExtract(Regex(R"(^(?P<name>\w+) latency: ([0-9.]+)$)"),
                  "softmax latency: 1.5\nmatmul latency: 2.5\n");
  EXPECT_EQ(Find(labelled, "softmax").direction, Direction::kLowerIsBetter);
  EXPECT_EQ(Find(labelled, "softmax").unit, "");
}

TEST(SuiteRegexTest, LastMatchOfANameWinsAtItsFirstPlace) {
  const std::vector<NamedMetric> metrics =
      MustExtract(Regex(R"((?P<name>\w+)=([0-9.]+)ms)"),
                  "softmax=9ms matmul=8ms\nsoftmax=1ms\ngelu=3ms\nmatmul=2ms\n");
  EXPECT_THAT(Names(metrics), ElementsAre("softmax", "matmul", "gelu"));
  EXPECT_DOUBLE_EQ(Find(metrics, "softmax").value, 1);
  EXPECT_DOUBLE_EQ(Find(metrics, "matmul").value, 2);
}

TEST(SuiteRegexTest, BlankNamesAndNonNumbers) {
  const std::vector<NamedMetric> metrics =
      MustExtract(Regex(R"((?P<name>\w*): (\S+) ms)"),
                  ": 4 ms\nsoftmax: 1 ms\nmatmul: N/A ms\nsoftmax: nan ms\ngelu: 2 ms\n");
  // The blank name is no metric; matmul never had a number and softmax's last value is NaN.
  EXPECT_THAT(Names(metrics), ElementsAre("gelu"));
}

TEST(SuiteRegexTest, NothingMatchedQuotesTheTail) {
  absl::StatusOr<std::vector<NamedMetric>> m =
      ExtractMetricSuite(Regex(R"((?P<name>\w+): ([0-9.]+) ms)"), "line 1\nline 2\nKilled\n");
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(m.status().message(),
              AllOf(HasSubstr("metric suite regex '(?P<name>\\w+): ([0-9.]+) ms' matched no"),
                    HasSubstr("| line 1\n  | line 2\n  | Killed")));
}

TEST(SuiteRegexTest, GroupsAreChecked) {
  struct Case {
    const char* pattern;
    const char* message;
  };
  for (const Case& c : {
           Case{R"((\w+): ([0-9.]+))", "must have a capturing group named 'name'"},
           Case{R"((?P<kernel>\w+): ([0-9.]+))", "must have a capturing group named 'name'"},
           Case{R"((?P<name>\w+): [0-9.]+)",
                "besides (?P<name>...) (around the number), but it has 0"},
           Case{R"((?P<name>\w+): ([0-9.]+) (ms|us))", "but it has 2"},
           Case{R"((?P<name>\w+): ([0-9.]+)", "invalid metric suite regex"},
       }) {
    absl::StatusOr<std::vector<NamedMetric>> m = ExtractMetricSuite(Regex(c.pattern), "a: 1\n");
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << c.pattern;
    EXPECT_THAT(m.status().message(), AllOf(HasSubstr(c.pattern), HasSubstr(c.message)));
    EXPECT_EQ(ValidateMetricSuiteSpec(Regex(c.pattern)).code(), absl::StatusCode::kInvalidArgument);
  }
  // Non-capturing groups are fine, and the value group may be named too.
  EXPECT_TRUE(
      ValidateMetricSuiteSpec(Regex(R"((?P<name>\w+): (?P<value>[0-9.]+) (?:ms|us))")).ok());
}

// ---------------------------------------------------------------------------------------------
// JSON-path mode.

TEST(SuiteJsonPathTest, WildcardOverAnObjectKeepsTheOutputsOrder) {
  const std::string output =
      "loading {not json}\n"
      "{\"results\": {\"old\": {\"latency_ms\": 99}}}\n"
      "{\"device\": \"H100\", \"results\": {\n"
      "  \"softmax\": {\"latency_ms\": 0.5, \"config\": [64, 128]},\n"
      "  \"matmul\": {\"latency_ms\": 1.5},\n"
      "  \"broken\": {\"error\": \"illegal memory access\"},\n"
      "  \"gelu\": {\"latency_ms\": \"0.25\"}\n"
      "}}\n"
      "done\n";
  const std::vector<NamedMetric> metrics = MustExtract(JsonPath("results.*.latency_ms"), output);
  // Not alphabetical: as the output lists them. "broken" lacks the key; "old" is in an earlier
  // object.
  EXPECT_THAT(Names(metrics), ElementsAre("softmax", "matmul", "gelu"));
  const Metric softmax = Find(metrics, "softmax");
  EXPECT_DOUBLE_EQ(softmax.value, 0.5);
  EXPECT_EQ(softmax.unit, "ms");  // From the key's suffix.
  EXPECT_EQ(softmax.direction, Direction::kLowerIsBetter);
  EXPECT_EQ(softmax.matched_text, "results.softmax.latency_ms = 0.5");
  EXPECT_DOUBLE_EQ(Find(metrics, "gelu").value, 0.25);  // A string holding a number.
}

TEST(SuiteJsonPathTest, WildcardOverAnArrayOfNamedObjects) {
  const std::string output = R"({"kernels": [
    {"name": "softmax", "time": 12, "unit": "us"},
    {"name": "gemm", "time": 30, "unit": "us"},
    {"time": 7, "unit": "us"},
    {"name": "softmax", "time": 10, "unit": "us"}
  ]})";
  const std::vector<NamedMetric> metrics = MustExtract(JsonPath("$.kernels.*.time"), output);
  // An element without a name is named by its index; a repeated name keeps its last value.
  EXPECT_THAT(Names(metrics), ElementsAre("softmax", "gemm", "2"));
  const Metric softmax = Find(metrics, "softmax");
  EXPECT_DOUBLE_EQ(softmax.value, 0.01);  // The "unit" member next to the value.
  EXPECT_EQ(softmax.unit, "ms");
  EXPECT_EQ(softmax.direction, Direction::kLowerIsBetter);
  EXPECT_EQ(softmax.matched_text, "kernels.3.time = 10");
  EXPECT_DOUBLE_EQ(Find(metrics, "2").value, 0.007);
}

TEST(SuiteJsonPathTest, WildcardLastTakesTheKeyBeforeItAndTheSiblingUnit) {
  const std::vector<NamedMetric> by_key = MustExtract(
      JsonPath("bandwidth_gb_s.*"), R"({"bandwidth_gb_s": {"copy": 900, "scale": 850.5}})");
  EXPECT_THAT(Names(by_key), ElementsAre("copy", "scale"));
  EXPECT_EQ(Find(by_key, "copy").unit, "GB/s");
  EXPECT_EQ(Find(by_key, "copy").direction, Direction::kHigherIsBetter);
  // The "unit" member is no metric, but the unit of the others.
  const std::vector<NamedMetric> sibling = MustExtract(
      JsonPath("results.*"), R"({"results": {"softmax": 12, "matmul": 30, "unit": "us"}})");
  EXPECT_THAT(Names(sibling), ElementsAre("softmax", "matmul"));
  EXPECT_DOUBLE_EQ(Find(sibling, "matmul").value, 0.03);
  // The names themselves, when nothing else describes the values.
  const std::vector<NamedMetric> named = MustExtract(
      JsonPath("results.*"), R"({"results": {"softmax_us": 12, "matmul_tflops": 300}})");
  EXPECT_DOUBLE_EQ(Find(named, "softmax_us").value, 0.012);
  EXPECT_EQ(Find(named, "matmul_tflops").unit, "TFLOPS");
  // An array of numbers: named by index.
  EXPECT_THAT(Names(MustExtract(JsonPath("runs.*"), R"({"runs": [1.5, 2.5]})")),
              ElementsAre("0", "1"));
}

TEST(SuiteJsonPathTest, Errors) {
  const std::string output = R"({"results": {"softmax": 1}, "count": 3, "list": [1]})";
  struct Case {
    const char* path;
    absl::StatusCode code;
    const char* message;
  };
  for (const Case& c : {
           Case{"missing.*", absl::StatusCode::kNotFound,
                "no key 'missing' in the object at '$' (keys: results, count, list)"},
           Case{"list.5.*", absl::StatusCode::kNotFound, "index 5 is out of range"},
           Case{"list.x.*", absl::StatusCode::kInvalidArgument, "'x' is not an array index"},
           Case{"count.*", absl::StatusCode::kInvalidArgument,
                "'$.count' is a JSON number; the wildcard runs over an object or an array"},
           Case{"count.x.*", absl::StatusCode::kInvalidArgument,
                "'$.count' is a JSON number, which has no member 'x'"},
           Case{"results.*.latency", absl::StatusCode::kNotFound,
                "found no number under '$.results' (1 member)"},
       }) {
    absl::StatusOr<std::vector<NamedMetric>> m = ExtractMetricSuite(JsonPath(c.path), output);
    EXPECT_EQ(m.status().code(), c.code) << c.path;
    EXPECT_THAT(m.status().message(), AllOf(HasSubstr(c.message), HasSubstr("| {\"results\"")))
        << c.path;
  }
  absl::StatusOr<std::vector<NamedMetric>> no_json =
      ExtractMetricSuite(JsonPath("results.*"), "no json here\n");
  EXPECT_EQ(no_json.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(no_json.status().message(),
              AllOf(HasSubstr("no JSON object"), HasSubstr("| no json here")));
}

TEST(SuiteJsonPathTest, PathNeedsExactlyOneWholeWildcard) {
  for (const char* path : {"results.latency_ms", "results.*.runs.*", "*.*"}) {
    absl::StatusOr<std::vector<NamedMetric>> m = ExtractMetricSuite(JsonPath(path), "{}");
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << path;
    EXPECT_THAT(m.status().message(),
                AllOf(HasSubstr(path), HasSubstr("must have exactly one '*' component")));
  }
  const absl::Status partial = ValidateMetricSuiteSpec(JsonPath("results.soft*"));
  EXPECT_EQ(partial.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(partial.message(), HasSubstr("must be a whole component"));
  EXPECT_EQ(ValidateMetricSuiteSpec(JsonPath("results..*")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateMetricSuiteSpec(JsonPath("*")).ok());
}

// ---------------------------------------------------------------------------------------------
// The spec's text form.

TEST(MetricSuiteSpecTest, ParseAndPrint) {
  for (const char* text : {"", "auto", "  auto \n"}) {
    absl::StatusOr<MetricSuiteSpec> spec = ParseMetricSuiteSpec(text);
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->kind, MetricSuiteSpec::Kind::kAuto);
    EXPECT_EQ(MetricSuiteSpecToString(*spec), "auto");
  }
  absl::StatusOr<MetricSuiteSpec> r = ParseMetricSuiteSpec(R"(regex:(?P<name>\w+): ([0-9.]+) ms)");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kind, MetricSuiteSpec::Kind::kRegex);
  EXPECT_EQ(r->pattern, R"((?P<name>\w+): ([0-9.]+) ms)");
  absl::StatusOr<MetricSuiteSpec> j = ParseMetricSuiteSpec("json:results.*.latency_ms");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->kind, MetricSuiteSpec::Kind::kJsonPath);
  EXPECT_EQ(j->pattern, "results.*.latency_ms");
  EXPECT_EQ(MetricSuiteSpecToString(MetricSuiteSpec{}), "auto");
}

TEST(MetricSuiteSpecTest, TextFormRoundTrips) {
  for (const char* text : {"auto", R"(regex:(?P<name>\w+): ([0-9.]+) ms)",
                           "regex:(?P<name>\\S+) ([0-9]+) ",  // The trailing space is the user's.
                           "regex: (?P<name>\\w+)=(\\d+)", "json:results.*.latency_ms",
                           "json:$.kernels.*.time", "json:*"}) {
    absl::StatusOr<MetricSuiteSpec> spec = ParseMetricSuiteSpec(text);
    ASSERT_TRUE(spec.ok()) << text << ": " << spec.status();
    EXPECT_EQ(MetricSuiteSpecToString(*spec), text);
    absl::StatusOr<MetricSuiteSpec> again = ParseMetricSuiteSpec(MetricSuiteSpecToString(*spec));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->kind, spec->kind);
    EXPECT_EQ(again->pattern, spec->pattern);
  }
}

TEST(MetricSuiteSpecTest, BadForms) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : {
           Case{"grep:x", "unknown metric suite spec 'grep:x'"},
           Case{"Auto", "unknown metric suite spec"},
           Case{"regex", "unknown metric suite spec"},
           Case{"regex:", "capturing group named 'name'"},
           Case{R"(regex:Latency: ([\d.]+))", "capturing group named 'name'"},
           Case{"regex:(?P<name>\\w+", "invalid metric suite regex"},
           Case{"json:", "is empty"},
           Case{"json:results.latency_ms", "exactly one '*'"},
           Case{"json:a.*.b.*", "exactly one '*'"},
           Case{"json:a*", "whole component"},
       }) {
    absl::StatusOr<MetricSuiteSpec> spec = ParseMetricSuiteSpec(c.text);
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(spec.status().message(), HasSubstr(c.message)) << c.text;
    EXPECT_THAT(spec.status().message(), Not(HasSubstr("the output ended with")));
  }
}

TEST(ReadSuiteTest, KeepsTheMembersAndFindsTheLead) {
  const std::string output = "softmax_fwd: 1.20 ms\nlayernorm_fwd: 0.80 ms\nmatmul_bf16: 2.50 ms\n";
  const MetricSuiteSpec spec;
  absl::StatusOr<SuiteReading> all = ReadSuite(spec, output, "", {});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->metrics.size(), 3u);
  EXPECT_EQ(all->lead, 0u) << "the first printed leads by default";

  absl::StatusOr<SuiteReading> some =
      ReadSuite(spec, output, "matmul_bf16", {"matmul_bf16", "softmax_fwd", "gone"});
  ASSERT_TRUE(some.ok()) << some.status();
  ASSERT_EQ(some->metrics.size(), 2u);
  EXPECT_EQ(some->metrics[0].name, "softmax_fwd") << "output order";
  EXPECT_EQ(some->metrics[some->lead].name, "matmul_bf16");
  EXPECT_DOUBLE_EQ(some->metrics[some->lead].metric.value, 2.5);
}

TEST(ReadSuiteTest, AMissingLeadOrNoMemberSaysWhatWasPrinted) {
  const std::string output = "softmax_fwd: 1.20 ms\nlayernorm_fwd: 0.80 ms\n";
  absl::StatusOr<SuiteReading> no_lead = ReadSuite(MetricSuiteSpec(), output, "matmul", {});
  ASSERT_EQ(no_lead.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(no_lead.status().message()),
              AllOf(HasSubstr("no metric 'matmul'"), HasSubstr("softmax_fwd, layernorm_fwd")));
  absl::StatusOr<SuiteReading> none = ReadSuite(MetricSuiteSpec(), output, "", {"a", "b"});
  ASSERT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("none of its metrics (a, b)"));
  // The suite's own errors come through.
  EXPECT_EQ(ReadSuite(MetricSuiteSpec(), "nothing here\n", "", {}).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kbisect
