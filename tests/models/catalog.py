"""The Hugging Face Transformers architectures the model coverage harness builds.

Each entry is a small configuration of one architecture (random weights from a fixed seed,
nothing downloaded) and the inputs its forward pass takes. `kind` decides what is checked:
"decoder" models (causal LMs) also train and generate; the others run their forward pass.
"""
from dataclasses import dataclass, field

import torch

BATCH, SEQ, VOCAB = 2, 12, 96

# Shared by the decoder LMs that use Llama-style names.
_LLAMA_LIKE = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)


@dataclass(frozen=True)
class ModelCase:
    name: str          # architecture (transformers model_type)
    family: str        # decoder LM, encoder, encoder-decoder, vision, audio, multimodal
    auto_class: str    # transformers Auto* class that builds the model
    config: dict = field(default_factory=dict)
    inputs: str = "text"  # which input builder (see make_inputs)
    kind: str = "forward"  # "decoder": also training steps and generation
    compiled: bool = False  # also checked under torch.compile(backend="tpu")


MODELS = [
    # ---- decoder LMs
    ModelCase("llama", "decoder LM", "AutoModelForCausalLM", _LLAMA_LIKE, kind="decoder", compiled=True),
    ModelCase("qwen2", "decoder LM", "AutoModelForCausalLM", _LLAMA_LIKE, kind="decoder"),
    ModelCase("qwen3", "decoder LM", "AutoModelForCausalLM", dict(_LLAMA_LIKE, head_dim=8), kind="decoder"),
    ModelCase("mistral", "decoder LM", "AutoModelForCausalLM", dict(_LLAMA_LIKE, sliding_window=8),
              kind="decoder"),
    ModelCase("mixtral", "decoder LM (MoE)", "AutoModelForCausalLM",
              dict(_LLAMA_LIKE, num_local_experts=4, num_experts_per_tok=2), kind="decoder"),
    ModelCase("qwen2_moe", "decoder LM (MoE)", "AutoModelForCausalLM",
              dict(_LLAMA_LIKE, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                   shared_expert_intermediate_size=32), kind="decoder"),
    ModelCase("gemma", "decoder LM", "AutoModelForCausalLM", dict(_LLAMA_LIKE, head_dim=8), kind="decoder"),
    ModelCase("gemma2", "decoder LM", "AutoModelForCausalLM", dict(_LLAMA_LIKE, head_dim=8, sliding_window=8),
              kind="decoder"),
    ModelCase("phi3", "decoder LM", "AutoModelForCausalLM", dict(_LLAMA_LIKE, pad_token_id=0), kind="decoder"),
    ModelCase("phi", "decoder LM", "AutoModelForCausalLM", _LLAMA_LIKE, kind="decoder"),
    ModelCase("gpt2", "decoder LM", "AutoModelForCausalLM",
              dict(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64), kind="decoder", compiled=True),
    ModelCase("opt", "decoder LM", "AutoModelForCausalLM",
              dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, ffn_dim=64, num_attention_heads=4,
                   max_position_embeddings=64, word_embed_proj_dim=32), kind="decoder"),
    ModelCase("gpt_neox", "decoder LM", "AutoModelForCausalLM",
              dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=64, max_position_embeddings=64), kind="decoder"),
    ModelCase("falcon", "decoder LM", "AutoModelForCausalLM",
              dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                   max_position_embeddings=64), kind="decoder"),
    ModelCase("bloom", "decoder LM", "AutoModelForCausalLM",
              dict(vocab_size=VOCAB, hidden_size=32, n_layer=2, n_head=4), kind="decoder"),
    ModelCase("starcoder2", "decoder LM", "AutoModelForCausalLM",
              dict(_LLAMA_LIKE, bos_token_id=1, eos_token_id=2), kind="decoder"),
    # ---- encoders
    ModelCase("bert", "encoder", "AutoModelForMaskedLM",
              dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=64, max_position_embeddings=64), compiled=True),
    ModelCase("roberta", "encoder", "AutoModelForMaskedLM",
              dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=64, max_position_embeddings=64)),
    ModelCase("distilbert", "encoder", "AutoModelForMaskedLM",
              dict(vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=64)),
    ModelCase("albert", "encoder", "AutoModelForMaskedLM",
              dict(vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=64, max_position_embeddings=64)),
    ModelCase("electra", "encoder", "AutoModelForMaskedLM",
              dict(vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=64, max_position_embeddings=64)),
    ModelCase("deberta-v2", "encoder", "AutoModelForMaskedLM",
              dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=64, max_position_embeddings=64)),
    # ---- encoder-decoders
    ModelCase("t5", "encoder-decoder", "AutoModelForSeq2SeqLM",
              dict(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4), inputs="seq2seq"),
    ModelCase("bart", "encoder-decoder", "AutoModelForSeq2SeqLM",
              dict(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                   decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64),
              inputs="seq2seq"),
    # ---- vision
    ModelCase("vit", "vision", "AutoModelForImageClassification",
              dict(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=64, num_labels=5), inputs="image", compiled=True),
    ModelCase("deit", "vision", "AutoModelForImageClassification",
              dict(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=64, num_labels=5, architectures=["DeiTForImageClassification"]),
              inputs="image"),
    ModelCase("resnet", "vision", "AutoModelForImageClassification",
              dict(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], num_labels=5), inputs="image"),
    ModelCase("convnext", "vision", "AutoModelForImageClassification",
              dict(num_stages=2, hidden_sizes=[16, 32], depths=[1, 1], num_labels=5), inputs="image"),
    ModelCase("swin", "vision", "AutoModelForImageClassification",
              dict(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=4,
                   num_labels=5), inputs="image"),
    ModelCase("clip", "multimodal", "AutoModel",
              dict(text_config=dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, max_position_embeddings=64),
                   vision_config=dict(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=4),
                   projection_dim=16), inputs="text_image"),
    # ---- audio
    ModelCase("whisper", "audio", "AutoModelForSpeechSeq2Seq",
              dict(vocab_size=VOCAB, num_mel_bins=16, d_model=32, encoder_layers=2, decoder_layers=2,
                   encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                   max_source_positions=16, max_target_positions=32, decoder_start_token_id=1, pad_token_id=0,
                   bos_token_id=1, eos_token_id=2, suppress_tokens=None, begin_suppress_tokens=None),
              inputs="audio_features"),
    ModelCase("wav2vec2", "audio", "AutoModelForCTC",
              dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                   conv_dim=[16, 16, 16], conv_stride=[5, 2, 2], conv_kernel=[10, 3, 3], num_conv_pos_embeddings=16,
                   num_conv_pos_embedding_groups=4), inputs="audio_waveform"),
]


def by_name(name):
    return next(m for m in MODELS if m.name == name)


def make_inputs(case, seed=0):
    """The forward inputs of `case`, on the CPU, as a dict of keyword arguments."""
    g = torch.Generator().manual_seed(seed)

    def ids(length=SEQ):
        # 3.. keeps clear of the special tokens (pad 0, bos 1, eos 2).
        return torch.randint(3, VOCAB, (BATCH, length), generator=g)

    if case.inputs == "text":
        return {"input_ids": ids(), "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long)}
    if case.inputs == "seq2seq":
        return {"input_ids": ids(), "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long),
                "decoder_input_ids": ids(SEQ // 2)}
    if case.inputs == "image":
        return {"pixel_values": torch.randn(BATCH, 3, 32, 32, generator=g)}
    if case.inputs == "text_image":
        return {"input_ids": ids(), "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long),
                "pixel_values": torch.randn(BATCH, 3, 32, 32, generator=g)}
    if case.inputs == "audio_features":
        frames = 2 * case.config["max_source_positions"]
        return {"input_features": torch.randn(BATCH, case.config["num_mel_bins"], frames, generator=g),
                "decoder_input_ids": ids(SEQ // 2)}
    if case.inputs == "audio_waveform":
        return {"input_values": torch.randn(BATCH, 800, generator=g)}
    raise ValueError(case.inputs)
