# lit configuration for tcc: dialect, frontend, pass and tool tests.
import os

import lit.formats
import lit.util
from lit.llvm import llvm_config

config.name = "tcc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tcc_obj_root, "tests", "lit")

llvm_config.use_default_substitutions()
# "cuda": tcc was built with the CUDA backend (NVRTC), so `tcc compile
# --target cuda` works; no GPU is implied.
if lit.util.pythonize_bool(getattr(config, "tcc_enable_cuda", "OFF")):
    config.available_features.add("cuda")
# The runtime-only build (TCC_RUNTIME_ONLY=ON) has tcc-run but no compiler:
# only tcc-run's tests run there, and those that compile an artifact first
# say `REQUIRES: tcc-compiler`.
runtime_only = getattr(config, "tcc_runtime_only", False)
tools = ["tcc-run"]
if runtime_only:
    tools_src = os.path.join(config.test_source_root, "tools")
    config.excludes += ["dialects", "frontends", "passes"] + [
        f for f in os.listdir(tools_src)
        if not f.startswith("tcc-run") and f != "Inputs"]
else:
    tools += ["tcc-opt", "tcc-import", "tcc", "tcc-onnx-tests"]
    config.available_features.add("tcc-compiler")
tool_dirs = [os.path.join(config.tcc_obj_root, "tools", t) for t in tools]
tool_dirs.append(config.llvm_tools_dir)
llvm_config.add_tool_substitutions(tools, tool_dirs)

# "gpu": tcc-run sees a usable GPU (the tests of the no-GPU errors are
# UNSUPPORTED there; tests/gpu/run.sh covers the GPU).
try:
    import subprocess
    info = subprocess.run(
        [os.path.join(config.tcc_obj_root, "tools", "tcc-run", "tcc-run"),
         "info"], capture_output=True, text=True, timeout=60).stdout
    if "\nGPU: " in info and "\nGPU: none" not in info:
        config.available_features.add("gpu")
except (OSError, subprocess.SubprocessError):
    pass
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("%examples", os.path.join(config.tcc_src_root, "examples")))
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# lit hands its tests a filtered environment; setup.sh's sanitizer run
# chooses the convolution path (TCC_CPU_CONV=im2col) for every process.
if "TCC_CPU_CONV" in os.environ:
    config.environment["TCC_CPU_CONV"] = os.environ["TCC_CPU_CONV"]
