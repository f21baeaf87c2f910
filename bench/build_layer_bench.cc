// Copyright 2026 The kbisect Authors.
//
// What a build layer (worker/build_layer.h) costs next to the build it serves: making one, the
// first import through it, and `pip install -e .` in it against the same install straight into
// the user's virtualenv (what `git bisect run` with the seed's build step does). A user's
// virtualenv over Debian's Python (python3-venv, setuptools, wheel) and a small package; medians
// of --repeat rounds. Prints figures; asserts nothing.
#include <chrono>
#include <functional>
#include <map>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "common/exec/exec.h"
#include "worker/build_layer.h"

namespace {

using kbisect_bench::Median;
using kbisect_bench::RunShell;
using kbisect_bench::ShellQuote;

double Time(const std::function<bool()>& step) {
  const auto start = std::chrono::steady_clock::now();
  if (!step()) return -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  CLI::App app{"What a build layer costs next to a build"};
  app.add_option("--repeat", repeat, "Rounds (medians are printed)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const std::string dir = kbisect_bench::MakeTempDir("kbisect-layer-bench");
  const std::string venv = dir + "/venv";
  const std::string pkg = dir + "/kern";
  if (RunShell(absl::StrCat("/usr/bin/python3 -m venv --without-pip --system-site-packages ",
                            ShellQuote(venv), " && mkdir -p ", ShellQuote(pkg + "/kern"),
                            " && printf '[build-system]\\nrequires = [\"setuptools>=61\"]\\n"
                            "build-backend = \"setuptools.build_meta\"\\n[project]\\n"
                            "name = \"kern\"\\nversion = \"0.1\"\\n' > ",
                            ShellQuote(pkg + "/pyproject.toml"), " && echo 'DELAY = 1' > ",
                            ShellQuote(pkg + "/kern/__init__.py")))
          .exit_code != 0) {
    std::fprintf(stderr, "cannot make the virtualenv (python3-venv, setuptools, wheel?)\n");
    return 1;
  }
  std::unique_ptr<kbisect::CommandRunner> runner = kbisect::NewSubprocessRunner();
  const std::map<std::string, std::string> env = {{"VIRTUAL_ENV", venv},
                                                  {"PATH", venv + "/bin:/usr/bin:/bin"}};
  std::vector<double> probe, create, import_layer, import_venv, install_layer, install_venv;
  for (int i = 0; i < repeat; ++i) {
    kbisect::BuildLayers layers(runner.get(), env);
    probe.push_back(Time([&] { return layers.Base().has_value(); }));
    const std::string layer_dir = absl::StrCat(dir, "/layer", i);
    absl::StatusOr<kbisect::BuildLayer> layer;
    create.push_back(Time([&] {
      layer = layers.Create(layer_dir, kbisect::v1::BUILD_ISOLATION_PYTHON, {});
      return layer.ok();
    }));
    std::string vars;
    for (const auto& [name, value] : layer->variables) {
      absl::StrAppend(&vars, name, "=", ShellQuote(value), " ");
    }
    const std::string in_layer = absl::StrCat("cd ", ShellQuote(pkg), " && env ", vars);
    const std::string in_venv =
        absl::StrCat("cd ", ShellQuote(pkg), " && env VIRTUAL_ENV=", ShellQuote(venv), " PATH=",
                     ShellQuote(venv + "/bin:/usr/bin:/bin"), " PIP_NO_BUILD_ISOLATION=0 ",
                     "PIP_DISABLE_PIP_VERSION_CHECK=1 ");
    const char* import = "python -c 'import setuptools, json, sqlite3'";
    import_layer.push_back(Time([&] { return RunShell(in_layer + import).exit_code == 0; }));
    import_venv.push_back(Time([&] { return RunShell(in_venv + import).exit_code == 0; }));
    const char* install = "pip install -q -e . >/dev/null 2>&1";
    install_layer.push_back(Time([&] { return RunShell(in_layer + install).exit_code == 0; }));
    install_venv.push_back(Time([&] {
      return RunShell(in_venv + "python -m " + install).exit_code == 0 &&
             RunShell(in_venv + "python -m pip uninstall -q -y kern >/dev/null 2>&1").exit_code ==
                 0;
    }));
  }
  std::printf("build layer over a virtualenv (medians of %d rounds, seconds)\n", repeat);
  std::printf("  find the worker's Python (once a process):  %.3f\n", Median(probe));
  std::printf("  make a layer:                               %.3f\n", Median(create));
  std::printf("  python start + imports, in the layer:       %.3f   in the venv: %.3f\n",
              Median(import_layer), Median(import_venv));
  std::printf("  pip install -e . into the layer:            %.3f\n", Median(install_layer));
  std::printf("  pip install -e . (+ uninstall) into the venv: %.3f\n", Median(install_venv));
  RunShell("rm -rf " + ShellQuote(dir));
  return 0;
}
