"""torch.tpu.amp: the names torch.cuda.amp has, for the tpu device.

torch.autocast("tpu", dtype=...) and torch.amp.GradScaler("tpu") are the
current spellings; these forward to them, as CUDA's do.
"""
import torch


def autocast(enabled=True, dtype=torch.float16, cache_enabled=True):
    return torch.autocast("tpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("tpu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
