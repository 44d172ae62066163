# lit configuration for tcc: dialect, frontend, pass and tool tests.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "tcc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tcc_obj_root, "tests", "lit")

llvm_config.use_default_substitutions()
tool_dirs = [
    os.path.join(config.tcc_obj_root, "tools", "tcc-opt"),
    os.path.join(config.tcc_obj_root, "tools", "tcc-import"),
    os.path.join(config.tcc_obj_root, "tools", "tcc"),
    os.path.join(config.tcc_obj_root, "tools", "tcc-onnx-tests"),
    config.llvm_tools_dir,
]
llvm_config.add_tool_substitutions(
    ["tcc-opt", "tcc-import", "tcc", "tcc-onnx-tests"], tool_dirs)
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("%examples", os.path.join(config.tcc_src_root, "examples")))
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
