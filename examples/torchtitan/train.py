"""TorchTitan's trainer (torchtitan.train), run by examples/torchtitan/run.py under torchrun.

TorchTitan picks its device when first imported: the tpu device when torch_tpu is
installed (torch imports it), or, with TORCH_DEVICE_BACKEND_AUTOLOAD=0, no
accelerator, where it falls back to "cuda". Two mismatches with torch 2.13 and
with a CPU reference run are worked around here, the same way on both devices:
  - torch.distributed.set_timeout, which TorchTitan calls after the first step to
    shorten the groups' timeouts, does not exist in torch 2.13: that call is skipped.
  - For the CPU reference, the device is "cpu", with the few device queries
    (memory, name) that torch.cpu lacks; and FSDP2 reduce-scatters gradients
    with SUM rather than PREMUL_SUM, which gloo lacks (TorchTitan sets a divide
    factor of 1, so both are the same sum).
Nothing about the tpu device is patched: TorchTitan uses torch.tpu as it is.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import torch  # noqa: E402  (imports torch_tpu unless autoload is off)


class _CpuDevice:
    """torch.cpu plus what TorchTitan asks every device module for."""

    def __getattr__(self, name):
        return getattr(torch.cpu, name)

    @staticmethod
    def current_device():
        return 0

    @staticmethod
    def set_device(device):
        pass

    @staticmethod
    def get_device_name(device=None):
        return "cpu"

    @staticmethod
    def get_device_properties(device=None):
        class Properties:
            name = "cpu"
            total_memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return Properties()

    @staticmethod
    def memory_stats(device=None):
        return {}

    @staticmethod
    def reset_peak_memory_stats(device=None):
        pass

    @staticmethod
    def empty_cache():
        pass


def main():
    import torchtitan.tools.utils as titan_utils
    if titan_utils.device_type != "tpu":
        assert os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD") == "0", titan_utils.device_type
        titan_utils.device_type, titan_utils.device_module = "cpu", _CpuDevice()
        from torch.distributed.fsdp._fully_shard import _fsdp_collectives
        divide_factors = _fsdp_collectives._get_gradient_divide_factors

        def summed(reduce_scatter_group, all_reduce_group, reduce_dtype, device_type="", factor=None, *ignored):
            return divide_factors(reduce_scatter_group, all_reduce_group, reduce_dtype, device_type, factor, True)
        _fsdp_collectives._get_gradient_divide_factors = summed
    import torchtitan.distributed.utils as titan_dist
    titan_dist.set_pg_timeouts = lambda *args, **kwargs: None
    from torchtitan.train import main as titan_main
    titan_main()


if __name__ == "__main__":
    main()
