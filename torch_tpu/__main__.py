"""`python -m torch_tpu`: the environment, for a bug report.

Prints what decides how tpu tensors run: the versions, the PJRT plugin and its devices, the
eager mode, the compilation cache and the environment variables that change behaviour. A
part that cannot be read (no plugin, say) prints its error and the report goes on.
"""
import importlib.metadata
import os
import platform
import sys

_ENV_PREFIXES = ("TORCH_TPU_", "XLA_", "TPU_", "PJRT_")
_ENV_NAMES = ("TF_CPP_MIN_LOG_LEVEL", "LOCAL_WORLD_SIZE", "TORCH_DEVICE_BACKEND_AUTOLOAD")
_PLUGIN_DISTRIBUTIONS = ("xla-cpu-pjrt", "libtpu", "jax-cuda13-pjrt", "jax-cuda12-pjrt")


def _version(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _directory_size(path):
    files, size = 0, 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                size += os.path.getsize(os.path.join(root, name))
                files += 1
            except OSError:  # removed while we walk (another process evicting)
                pass
    return files, size


def _read(rows, name, get):
    try:
        rows.append((name, get()))
    except Exception as e:  # noqa: BLE001 (the report shows any failure and goes on)
        rows.append((name, f"error: {type(e).__name__}: {e}"))


def report():
    """The report's (name, value) rows."""
    rows = []
    _read(rows, "python", lambda: f"{sys.version.split()[0]} ({platform.platform()})")
    import torch
    import torch_tpu
    from torch_tpu import _C
    rows.append(("torch", torch.__version__))
    rows.append(("torch_tpu", f"{_version('torch_tpu') or 'unknown'} ({os.path.dirname(torch_tpu.__file__)})"))
    plugins = [f"{d} {_version(d)}" for d in _PLUGIN_DISTRIBUTIONS if _version(d)]
    rows.append(("plugin packages", ", ".join(plugins) or "none installed"))
    _read(rows, "plugin", _C.plugin_path)
    _read(rows, "platform", lambda: f"{_C.platform_name()} {_C.platform_version()}")
    _read(rows, "devices", lambda: ", ".join(f"tpu:{i} {_C.device_kind(i)}" for i in range(_C.device_count())))
    rows.append(("eager mode", torch_tpu.get_eager_mode()))

    def cache():
        directory = _C._cache_dir()
        if not directory:
            return "off (TORCH_TPU_CACHE_DIR is empty)"
        files, size = _directory_size(directory)
        return f"{directory}: {files} programs, {size / 2**20:.1f} MiB of {_C._cache_max_bytes() / 2**20:.0f} MiB"
    _read(rows, "compilation cache", cache)
    env = sorted(k for k in os.environ if k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES)
    rows.append(("environment", ", ".join(f"{k}={os.environ[k]}" for k in env) or "none of ours set"))
    return rows


def main():
    rows = report()
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
