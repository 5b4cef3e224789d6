# lit configuration for pcc: FileCheck tests over pcc, pcc-opt and pcc-translate.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "pcc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.pcc_obj_root, "test")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt",
                   "unit", "models", "bad", "conformance", "relu.onnxtxt"]
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.pcc_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(["pcc", "pcc-opt", "pcc-translate"], [config.pcc_tools_dir])
config.substitutions.append(("%python", config.python_onnx))
# mpirun for e2e tests: a wrapper that isolates each run's OpenMPI session
# directory and sets the flags every test needs (see the script).
config.substitutions.append(
    ("%mpirun", os.path.join(config.pcc_src_root, "test", "e2e", "mpirun.sh")))
config.substitutions.append(("%pcc_src", config.pcc_src_root))
# Tests of the CUDA target's code and build (no GPU needed) run where pcc
# was built with it.
if getattr(config, "pcc_have_cuda", 0):
    config.available_features.add("cuda")
