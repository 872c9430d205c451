"""Transformers' `generate()` on tpu without a compile per new token.

Every decode step of Transformers' default loop makes tensors one token longer
(the KV cache, the token ids, the attention mask), so every step is a program of
new shapes, compiled anew. On tpu, `GenerationMixin._sample` (greedy and sampled
decoding) decodes instead into buffers whose length grows in buckets (powers of
two, at least `MIN_BUCKET`): each layer's keys and values, the token ids and the
attention mask. Attention runs over the whole bucket; the slots past the tokens
decoded so far are masked by the causal mask (their positions are later than
every query's), so they add exact zeros to the softmax and nothing to the
result. A step's program then depends on the bucket only, and a bucket holds as
many steps as it has slots: generating N tokens compiles a few programs per
bucket, about log2(N) buckets in all. The new token's slot is written at a
runtime offset (a view that starts at a runtime index, see csrc/aten/op.cpp).

Used when the cache is the default dynamic one (the one `generate()` makes
itself) and the outputs are the sequences, scores or logits; other cases (a
cache the caller passed in, attentions or hidden states returned,
encoder-decoders, prefill chunking, `synced_gpus`, assisted decoding) run
Transformers' own loop. Sliding-window layers keep every position, not only
the window's (the window's mask hides the others): memory grows with the
sequence, as for the full-attention layers beside them.
`TORCH_TPU_BUCKETED_GENERATE=0` turns it off.

Installed when Transformers' generation module is imported (an import hook:
`import torch` loads torch_tpu before any model code), or at once when it
already is.
"""
import importlib.abc
import importlib.util
import os
import sys

import torch

from .bucketing import bucket_length

MIN_BUCKET = 64
_TARGET = "transformers.generation.utils"
_ENV = "TORCH_TPU_BUCKETED_GENERATE"


def bucket(length):
    """The capacity of a buffer that must hold `length` positions."""
    return bucket_length(length, MIN_BUCKET)


def _capacity(held, length):
    """The size of a buffer of `held` positions once it must hold `length`: kept while it fits."""
    return held if held >= length else bucket(length)


def _grown(buf, length, dim):
    """`buf` with room for `length` positions along `dim` (the same tensor when it has them)."""
    if buf.shape[dim] >= length:
        return buf
    shape = list(buf.shape)
    shape[dim] = _capacity(buf.shape[dim], length)
    out = buf.new_zeros(shape)
    out.narrow(dim, 0, buf.shape[dim]).copy_(buf)
    return out


def _layer_classes():
    from transformers.cache_utils import DynamicLayer

    class BucketedLayer(DynamicLayer):
        """A DynamicLayer whose keys and values live in a bucket-sized buffer.

        `keys` / `values` read as the `length` positions decoded so far, as on
        DynamicLayer; `update` returns the whole buffer, and `get_mask_sizes`
        its size, so that attention and its mask cover the bucket. Its shapes
        are static within a bucket, which Transformers calls compileable: the
        mask is then always built (no host sync to check whether a decode
        step could skip it).
        """

        is_compileable = True

        def __init__(self, **kwargs):
            self._buffers = None
            self.length = 0
            super().__init__(**kwargs)

        def _view(self, i):
            return None if self._buffers is None else self._buffers[i][..., : self.length, :]

        def _assign(self, i, value):
            if value is None:
                self._buffers, self.length = None, 0
                return
            buffers = list(self._buffers or (value, value))
            buffers[i] = value
            self._buffers, self.length = tuple(buffers), value.shape[-2]

        keys = property(lambda self: self._view(0), lambda self, v: self._assign(0, v))
        values = property(lambda self: self._view(1), lambda self, v: self._assign(1, v))

        def lazy_initialization(self, key_states, value_states):
            self.device = key_states.device
            self.is_initialized = True

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            q = key_states.shape[-2]
            start = self.length
            if self._buffers is None:
                self._buffers = tuple(s.new_zeros((*s.shape[:-2], bucket(q), s.shape[-1]))
                                      for s in (key_states, value_states))
            else:
                self._buffers = tuple(_grown(b, start + q, -2) for b in self._buffers)
            for buf, new in zip(self._buffers, (key_states, value_states)):
                buf[..., start:start + q, :] = new
            self.length = start + q
            return self._buffers

        def get_mask_sizes(self, query_length, *args):
            # The size update() will give the buffers (the mask is made before it runs).
            held = 0 if self._buffers is None else self._buffers[0].shape[-2]
            return _capacity(held, self.length + query_length), 0

        def get_seq_length(self):
            return self.length

        def reset(self):
            self._buffers, self.length = None, 0
            self.is_initialized = False

        def crop(self, tokens_to_remove):
            if tokens_to_remove > 0:
                raise ValueError("crop takes the negative number of tokens to remove")
            self.length = max(0, self.length + tokens_to_remove)  # the stale slots are masked

        def batch_repeat_interleave(self, repeats):
            if self._buffers is not None:
                self._buffers = tuple(b.repeat_interleave(repeats, dim=0) for b in self._buffers)

        def batch_select_indices(self, indices):
            if self._buffers is not None:
                self._buffers = tuple(b[indices, ...] for b in self._buffers)

        def reorder_cache(self, beam_idx):
            if self._buffers is not None:
                self._buffers = tuple(b.index_select(0, beam_idx.to(b.device)) for b in self._buffers)

    class BucketedSlidingLayer(BucketedLayer):
        """For a sliding-window layer: all positions are kept, and the sliding
        window's mask (which Transformers builds from the config for the
        layers that say they slide) hides those before the window."""

        is_sliding = True

    return BucketedLayer, BucketedSlidingLayer


def _bucket_cache(cache):
    """Makes the fresh DynamicCache `cache` bucketed in place; False when it is not one."""
    from transformers.cache_utils import DynamicCache, DynamicLayer, DynamicSlidingWindowLayer

    if type(cache) is not DynamicCache or getattr(cache, "_is_user_defined", False) or cache.offloading:
        return False
    layers = cache.layers
    if any(type(layer) not in (DynamicLayer, DynamicSlidingWindowLayer) or layer.is_initialized
           for layer in layers):
        return False
    if not layers and cache.layer_class_to_replicate is not DynamicLayer:
        return False
    full, sliding = _layer_classes()
    cache.layers = [sliding() if type(layer) is DynamicSlidingWindowLayer else full() for layer in layers]
    if cache.layer_class_to_replicate is not None:
        cache.layer_class_to_replicate = full
    return True


def _supported(model, input_ids, generation_config, synced_gpus, model_kwargs):
    if input_ids.device.type != "tpu" or os.environ.get(_ENV, "1") == "0":
        return False
    if model.config.is_encoder_decoder or synced_gpus or generation_config.is_assistant:
        return False
    if generation_config.output_attentions or generation_config.output_hidden_states:
        return False
    if generation_config.prefill_chunk_size is not None or not model_kwargs.get("use_cache", True):
        return False
    if "inputs_embeds" in model_kwargs or any(
            k in model_kwargs for k in ("token_type_ids", "mm_token_type_ids", "moe_mm_token_type_ids")):
        return False
    attention_mask = model_kwargs.get("attention_mask")
    if attention_mask is not None and attention_mask.ndim != 2:
        return False
    position_ids = model_kwargs.get("position_ids")
    if position_ids is not None and position_ids.shape[-1] != input_ids.shape[-1]:
        return False
    return _bucket_cache(model_kwargs.get("cache"))


def _sample_bucketed(model, input_ids, logits_processor, stopping_criteria, generation_config, streamer,
                     model_kwargs):
    from transformers.generation.utils import GenerateDecoderOnlyOutput, StopCheck

    scores = () if generation_config.return_dict_in_generate and generation_config.output_scores else None
    raw_logits = () if generation_config.return_dict_in_generate and generation_config.output_logits else None
    pad_token_id = generation_config._pad_token_tensor
    has_eos_stopping_criteria = any(hasattr(c, "eos_token_id") for c in stopping_criteria)
    batch_size, length = input_ids.shape
    unfinished = torch.ones(batch_size, dtype=torch.long, device=input_ids.device)
    if pad_token_id is not None:
        pad_token_id = pad_token_id.to(input_ids.device)

    outputs = model._prefill(input_ids, generation_config, model_kwargs)
    model_kwargs["cache"] = outputs.cache if "cache" in outputs else model_kwargs["cache"]
    ids = _grown(input_ids, length + 1, 1)
    mask = model_kwargs.get("attention_mask")
    if mask is None:
        mask = torch.ones_like(input_ids)
    position = model_kwargs.get("position_ids")
    stop_check = StopCheck(streamer)
    finished = False
    with model._optimize_model_for_decode():
        while not finished:
            if outputs is None:
                # The token decoded last (at position length - 1) attends to the `length` positions up to it.
                mask = _grown(mask, length, 1)
                mask[:, length - 1] = 1
                model_kwargs["attention_mask"] = mask
                if position is not None:
                    position = position[..., -1:] + 1
                    model_kwargs["position_ids"] = position
                model_inputs = model.prepare_inputs_for_generation(
                    ids[:, length - 1:length], next_sequence_length=1, **model_kwargs)
                outputs = model(**model_inputs, return_dict=True)
                if "cache" in outputs:
                    model_kwargs["cache"] = outputs.cache
            next_token_logits = outputs.logits[:, -1].to(copy=True, dtype=torch.float32, device=ids.device)
            outputs = None
            next_token_scores = logits_processor(ids[:, :length], next_token_logits)
            if scores is not None:
                scores += (next_token_scores,)
            if raw_logits is not None:
                raw_logits += (next_token_logits,)
            if generation_config.do_sample:
                probs = torch.nn.functional.softmax(next_token_scores, dim=-1)
                next_tokens = torch.multinomial(probs, num_samples=1).squeeze(1)
            else:
                next_tokens = torch.argmax(next_token_scores, dim=-1)
            if has_eos_stopping_criteria:
                next_tokens = next_tokens * unfinished + pad_token_id * (1 - unfinished)
            ids = _grown(ids, length + 1, 1)
            ids[:, length] = next_tokens
            length += 1
            unfinished = unfinished & ~stopping_criteria(ids[:, :length], scores)
            finished = stop_check(unfinished, next_tokens, length)
    stop_check.finish()
    if streamer is not None:
        streamer.end()
    sequences = ids[:, :length].clone()
    if generation_config.return_dict_in_generate:
        return GenerateDecoderOnlyOutput(sequences=sequences, scores=scores, logits=raw_logits,
                                         cache=model_kwargs.get("cache"))
    return sequences


def _install(module):
    mixin = module.GenerationMixin
    if getattr(mixin._sample, "_torch_tpu", False):
        return
    original = mixin._sample

    def _sample(self, input_ids, logits_processor, stopping_criteria, generation_config, synced_gpus=False,
                streamer=None, **model_kwargs):
        if _supported(self, input_ids, generation_config, synced_gpus, model_kwargs):
            return _sample_bucketed(self, input_ids, logits_processor, stopping_criteria, generation_config,
                                    streamer, model_kwargs)
        return original(self, input_ids, logits_processor, stopping_criteria, generation_config,
                        synced_gpus=synced_gpus, streamer=streamer, **model_kwargs)

    _sample._torch_tpu = True
    _sample.__doc__ = original.__doc__
    mixin._sample = _sample


class _InstallAfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs `_install` on Transformers' generation module right after it is executed."""

    def find_spec(self, name, path, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = module.__spec__.loader = self._loader  # sources, tracebacks: as without the hook
        self._loader.exec_module(module)
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        _install(module)


def install():
    if _TARGET in sys.modules:
        _install(sys.modules[_TARGET])
    elif not any(isinstance(f, _InstallAfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _InstallAfterImport())
