"""Builds the C++ core with CMake (see CMakeLists.txt) and installs the Python package.

Use `pip install --no-build-isolation -e .`: build isolation would download a
different torch than the one we compile against.
"""
import os
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        out_dir = Path(self.get_ext_fullpath(ext.name)).resolve().parent
        build_dir = ROOT / "build"
        build_dir.mkdir(exist_ok=True)
        subprocess.check_call([
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DCMAKE_LIBRARY_OUTPUT_DIRECTORY={out_dir}",
            "-DCMAKE_BUILD_TYPE=" + os.environ.get("TORCH_TPU_BUILD_TYPE", "Release"),
        ])
        jobs = os.environ.get("MAX_JOBS", str(min(os.cpu_count() or 1, 2)))
        subprocess.check_call(["cmake", "--build", str(build_dir), "-j", jobs])


setup(
    packages=find_packages(include=["torch_tpu", "torch_tpu.*"]),
    ext_modules=[CMakeExtension("torch_tpu._C")],
    cmdclass={"build_ext": CMakeBuild},
)
