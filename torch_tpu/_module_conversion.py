"""Module conversion to tpu keeps shared parameters shared, as conversion to CUDA does.

`Module._apply` (behind `.to()`, `.tpu()`, `.half()`, ...) converts a parameter in place only
when PyTorch's `_has_compatible_shallow_copy_type` accepts the pair, and that list of "dense"
backends leaves out PrivateUse1. Moving a CPU module to tpu would therefore give each module
its own new Parameter, silently untying tied weights (an LM head and its input embedding),
which then train apart. The outermost `_apply` here records which modules shared a Parameter
and, where the conversion produced tpu Parameters, makes them share the new one again.
"""
import threading

import torch

_depth = threading.local()
_original_apply = torch.nn.Module._apply


def _apply_keeping_shared_parameters(self, fn, *args, **kwargs):
    outermost = getattr(_depth, "value", 0) == 0
    if not outermost:
        return _original_apply(self, fn, *args, **kwargs)
    places = {}
    for module in self.modules():
        for name, param in module._parameters.items():
            if param is not None:
                places.setdefault(id(param), []).append((module, name))
    shared = [p for p in places.values() if len(p) > 1]
    _depth.value = 1
    try:
        result = _original_apply(self, fn, *args, **kwargs)
    finally:
        _depth.value = 0
    for group in shared:
        (first_module, first_name), *rest = group
        kept = first_module._parameters[first_name]
        if kept is None or kept.device.type != "tpu":
            continue
        for module, name in rest:
            module._parameters[name] = kept
    return result


def install():
    torch.nn.Module._apply = _apply_keeping_shared_parameters
