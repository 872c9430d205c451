"""PJRT plugin discovery: which shared library backs the tpu device.

Order: TORCH_TPU_PJRT_PLUGIN (an explicit path), then libtpu when this host has
TPU chips, then the XLA CPU plugin wheel (xla-cpu-pjrt).
"""
import glob
import importlib.util
import os


def _package_file(package, *names):
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        for name in names:
            path = os.path.join(location, name)
            if os.path.exists(path):
                return path
    return None


def _has_tpu_chips():
    return bool(glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*"))


def find_plugin():
    """Returns the plugin path to load, or "" when none is installed."""
    explicit = os.environ.get("TORCH_TPU_PJRT_PLUGIN")
    if explicit:
        return explicit
    if _has_tpu_chips():
        libtpu = _package_file("libtpu", "libtpu.so")
        if libtpu:
            return libtpu
    try:
        return _package_file("xla_plugins.xla_cpu_pjrt", "xla_cpu_pjrt.so") or ""
    except ModuleNotFoundError:
        return ""
