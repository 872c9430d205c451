"""The TorchTitan config examples/torchtitan trains: llama3's debug model
(6 layers, width 256, vocabulary 2048), float32 throughout, for 10 steps of
4 sequences of 128 tokens, with what this machine's torch 2.13 and its devices
need (see run.py for why each setting is there).

    --module examples.torchtitan.titan_config --config llama3_debugmodel_local
"""
from torchtitan.models.common.attention import ScaledDotProductAttention
from torchtitan.models.llama3.config_registry import llama3_debugmodel


def llama3_debugmodel_local():
    config = llama3_debugmodel()
    # FlexAttention runs only compiled by Inductor and refuses devices other
    # than cuda/cpu/xpu/hpu/mps: plain causal attention instead, on both sides.
    for layer in config.model_spec.model.layers:
        layer.attention.inner_attention = ScaledDotProductAttention.Config()
    config.training.seq_len = 128
    config.training.local_batch_size = 4
    config.training.steps = 10
    config.training.mixed_precision_param = "float32"  # FSDP keeps float32 parameters
    config.training.disable_cuda_graphs = True
    config.parallelism.spmd_backend = "partial_dtensor"  # spmd_types fails inside fully_shard on torch 2.13
    config.activation_checkpoint = None
    config.metrics.disable_color_printing = True
    return config
