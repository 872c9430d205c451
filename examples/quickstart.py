"""Trains a small MLP on the tpu device and prints its losses beside the same run on CPU."""
import copy
import warnings

import torch
import torch.nn as nn

import torch_tpu


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))


def train(model, device, steps=20):
    torch.manual_seed(1)
    data = torch.randn(steps, 16, 32)
    target = torch.randint(0, 10, (steps, 16))
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for i in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(data[i].to(device)), target[i].to(device))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    warnings.simplefilter("ignore")  # the CPU-fallback notices are listed in the metrics below
    model = make_model()
    cpu_losses = train(copy.deepcopy(model), "cpu")
    tpu_losses = train(copy.deepcopy(model), "tpu")
    print(f"device: tpu, backed by PJRT platform '{torch.tpu.platform()}' ({torch.tpu.get_device_name()})")
    print(f"eager mode: {torch_tpu.get_eager_mode()}")
    print(f"{'step':>4}  {'tpu loss':>12}  {'cpu loss':>12}  {'rel diff':>9}")
    for i, (t, c) in enumerate(zip(tpu_losses, cpu_losses)):
        print(f"{i:>4}  {t:>12.6f}  {c:>12.6f}  {abs(t - c) / abs(c):>9.1e}")
    m = torch_tpu.metrics()
    print(f"compiles={m['compiles']} cache_hits={m['cache_hits']} executions={m['executions']}")
    print(f"cpu fallbacks: {m['cpu_fallbacks'] or 'none'}")
    worst = max(abs(t - c) / abs(c) for t, c in zip(tpu_losses, cpu_losses))
    assert worst < 1e-5, f"tpu and cpu losses differ by {worst:.2e} relative"


if __name__ == "__main__":
    main()
