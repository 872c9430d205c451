"""Builds the C++ core with CMake (see CMakeLists.txt) and installs the Python package.

Use `pip install --no-build-isolation -e .`: build isolation would download a
different torch than the one we compile against.
"""
import os
import shutil
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
            "-DCMAKE_BUILD_TYPE=" + os.environ.get("TORCH_TPU_BUILD_TYPE", "Release"),
        ])
        jobs = os.environ.get("MAX_JOBS", str(min(os.cpu_count() or 1, 2)))
        subprocess.check_call(["cmake", "--build", str(build_dir), "-j", jobs])
        # CMake puts the module into the source package (so `cmake --build build`
        # alone refreshes an editable install); copy it where setuptools wants it.
        built = ROOT / "torch_tpu" / Path(self.get_ext_fullpath(ext.name)).name
        target = out_dir / built.name
        if target.resolve() != built.resolve():
            out_dir.mkdir(parents=True, exist_ok=True)
            shutil.copy2(built, target)


setup(
    packages=find_packages(include=["torch_tpu", "torch_tpu.*"]),
    ext_modules=[CMakeExtension("torch_tpu._C")],
    cmdclass={"build_ext": CMakeBuild},
)
