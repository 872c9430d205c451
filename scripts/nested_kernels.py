"""Prints the m.impl lines of csrc/aten/registration.cpp's NestedTensorPrivateUse1 block: the
nested kernels PyTorch registers alike for NestedTensorCPU and NestedTensorCUDA, read from the
installed torch's native_functions.yaml (torchgen's packaged copy). Run it after a torch upgrade
and compare. Kernels whose C++ name is overloaded need a cast in the C++ file (the compiler
names them)."""
import os

import torchgen
import yaml


def main():
    path = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native", "native_functions.yaml")
    with open(path) as f:
        functions = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    for fn in sorted(functions, key=lambda fn: fn["func"]):
        kernels = {}
        for keys, kernel in fn.get("dispatch", {}).items():
            for key in keys.split(","):
                kernels[key.strip()] = kernel
        cpu, cuda = kernels.get("NestedTensorCPU"), kernels.get("NestedTensorCUDA")
        if cpu and cpu == cuda:
            print(f'  m.impl("{fn["func"].split("(")[0]}", at::native::{cpu});')


if __name__ == "__main__":
    main()
