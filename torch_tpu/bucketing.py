"""Bounded compiles for inputs of varying length.

Every distinct input shape is a distinct program on tpu, compiled once and
cached: a DataLoader whose batches have any sequence length from 1 to 512
compiles up to 512 versions of the training step. Padding each batch's sequence
length up to a bucket (a power of two) bounds that to about log2 of the range,
at the cost of computing on at most twice the tokens.

    loader = DataLoader(dataset, batch_size=8, collate_fn=BucketPadding(collate))

`BucketPadding` pads so that the padding changes nothing for causal language
models: labels are padded with -100 (ignored by the loss, which averages over
the tokens it does not ignore), the attention mask with 0, position ids by
counting on (a packed row's padding becomes the tail of its last sequence,
which no earlier token attends to), token ids with `pad_token_id`.
`torch_tpu.metrics()["shape_families"]` shows how many programs each
computation compiled, which is where an unbucketed dimension shows.
"""
from collections.abc import Mapping

import torch

__all__ = ["bucket_length", "BucketPadding"]


def bucket_length(length, min_bucket=16):
    """The smallest power of two that is at least `length` and `min_bucket`."""
    cap = min_bucket
    while cap < length:
        cap *= 2
    return cap


class BucketPadding:
    """A collate_fn (wrapping `collate_fn`) whose batches have bucketed sequence lengths.

    The sequence dimension is dim 1 of the batch's 2-D or larger tensors whose
    dim 1 has the length of the first such tensor (`input_ids` in a dict
    batch); each is padded at its end, up to `bucket_length(length, min_bucket)`.
    `pad_values` maps dict keys to pad values (or "count" to continue counting,
    as position ids do); keys not in it pad with `pad_token_id`.
    """

    DEFAULT_PAD_VALUES = {"labels": -100, "attention_mask": 0, "position_ids": "count"}

    def __init__(self, collate_fn=None, *, pad_token_id=0, pad_values=None, min_bucket=16):
        from torch.utils.data import default_collate

        self.collate_fn = collate_fn or default_collate
        self.pad_token_id = pad_token_id
        self.pad_values = {**self.DEFAULT_PAD_VALUES, **(pad_values or {})}
        self.min_bucket = min_bucket

    def __call__(self, samples):
        return self.pad(self.collate_fn(samples))

    def pad(self, batch):
        """`batch` (a tensor, or a dict, list or tuple of them) with its sequence length bucketed."""
        length = _sequence_length(batch)
        if length is None:
            return batch
        target = bucket_length(length, self.min_bucket)
        return _map(batch, lambda key, t: self._pad(key, t, length, target))

    def _pad(self, key, t, length, target):
        if not isinstance(t, torch.Tensor) or t.dim() < 2 or t.shape[1] != length or target == length:
            return t
        value = self.pad_values.get(key, self.pad_token_id)
        extra = target - length
        if value == "count":
            steps = torch.arange(1, extra + 1, dtype=t.dtype, device=t.device)
            tail = t[:, -1:] + steps.view(1, extra, *([1] * (t.dim() - 2)))
        else:
            tail = t.new_full((t.shape[0], extra, *t.shape[2:]), value)
        return torch.cat([t, tail], dim=1)


def _sequence_length(batch):
    if isinstance(batch, torch.Tensor):
        return batch.shape[1] if batch.dim() >= 2 else None
    items = batch.values() if isinstance(batch, Mapping) else batch if isinstance(batch, (list, tuple)) else ()
    if isinstance(batch, Mapping) and isinstance(batch.get("input_ids"), torch.Tensor):
        return _sequence_length(batch["input_ids"])
    for item in items:
        length = _sequence_length(item)
        if length is not None:
            return length
    return None


def _map(batch, fn, key=None):
    if isinstance(batch, Mapping):
        return type(batch)({k: _map(v, fn, k) for k, v in batch.items()})  # dict, BatchEncoding
    if isinstance(batch, (list, tuple)) and not hasattr(batch, "_fields"):
        return type(batch)(_map(v, fn, key) for v in batch)
    return fn(key, batch)
