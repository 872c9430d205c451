"""torch.compile(backend="tpu"): whole forward and backward graphs as single XLA programs.

Dynamo captures the Python program, AOTAutograd splits it into a forward and a
backward ATen graph (functionalized: in-place updates of inputs are explicit
copies), and each graph is compiled here:

- The graph runs once through the same ATen kernels as eager mode, every op
  deferred into one recording; that recording becomes one program
  (`_C._CapturedGraph`), compiled through the same cache as eager mode.
- Later calls with inputs of the same layout run the program directly on the
  inputs' buffers: no per-op work. Python scalars and 0-d CPU tensors are
  runtime inputs, random ops draw new states from their generator each call.
- Work on CPU tensors inside a graph (an optimizer's step counters) runs as a
  small eager CPU graph before the program, which reads its results as scalars.
- A graph that needs a value on the host mid-way (`.item()`, a data-dependent
  shape, a CPU fallback op) runs eagerly, in the active eager mode, with one
  warning naming the reason.
- With `dynamic=True` each distinct input shape gets its own program (the
  compilation cache makes shapes seen before cheap); a message says so once.
"""
import warnings

import torch
import torch.fx

from . import _C

_warned = set()
_stats = {"graphs": 0, "captures": 0, "replays": 0, "eager_runs": 0}
_capturing = False


def _warn_once(key, message):
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, stacklevel=3)


def compile_metrics():
    """Counters of the compile backend: graphs (handed to it by Dynamo/AOTAutograd), captures
    (programs captured, one per graph and input layout), replays, eager_runs (calls of graphs
    that could not be captured)."""
    return dict(_stats)


def reset_compile_metrics():
    for k in _stats:
        _stats[k] = 0


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def _node_on_cpu(node):
    """Whether an FX node computes CPU tensors only (from its traced metadata)."""
    produced = _tensors(node.meta.get("val"))
    if produced:
        return all(t.device.type == "cpu" for t in produced)
    consumed = [a for a in node.all_input_nodes if _tensors(a.meta.get("val"))]
    return bool(consumed) and all(_node_on_cpu(a) for a in consumed)


def _split_cpu_work(gm):
    """Splits off the graph's CPU computations. Returns (cpu_graph or None, device_graph), where
    cpu_graph(*args) returns the CPU values the rest needs and device_graph(*args, *those) is the
    rest; or raises ValueError when CPU work depends on device values (a host read)."""
    nodes = list(gm.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    cpu = {n for n in nodes if n.op == "call_function" and _node_on_cpu(n)}
    if not cpu:
        return None, gm
    for n in cpu:
        for a in n.all_input_nodes:
            if a.op == "call_function" and a not in cpu:
                raise ValueError(f"CPU work ({n.target}) reads a device value ({a.target})")
    handed_over = [n for n in nodes if n in cpu and any(u not in cpu for u in n.users)]

    cpu_graph = torch.fx.Graph()
    env = {p: cpu_graph.placeholder(p.name) for p in placeholders}
    for n in nodes:
        if n.op == "get_attr" or n in cpu:
            env[n] = cpu_graph.node_copy(n, env.__getitem__)
    cpu_graph.output(tuple(env[n] for n in handed_over))

    device_graph = torch.fx.Graph()
    env = {p: device_graph.placeholder(p.name) for p in placeholders}
    for n in handed_over:
        env[n] = device_graph.placeholder("cpu_" + n.name)
    for n in nodes:
        if n.op != "placeholder" and n not in cpu:
            env[n] = device_graph.node_copy(n, env.__getitem__)
    return torch.fx.GraphModule(gm, cpu_graph), torch.fx.GraphModule(gm, device_graph)


def _layout_key(tensors, inputs):
    """What a captured program depends on in its inputs: the tensors' layouts, storage sizes and
    sharing, and the values of the other inputs."""
    return _C._layout_signature(tensors), tuple((type(x), x) for x in inputs if not isinstance(x, torch.Tensor))


class _CompiledGraph:
    """One AOTAutograd graph (forward, backward or inference), called with a list of inputs."""

    def __init__(self, gm):
        # In the instance's __dict__: wrappers made with functools.wraps keep it.
        self._boxed_call = True
        self.gm = gm
        self.programs = {}  # layout key -> (captured program, output layout)
        self.eager_reason = None
        try:
            self.cpu_graph, self.device_graph = _split_cpu_work(gm)
        except ValueError as e:
            self.cpu_graph, self.device_graph = None, gm
            self._run_eagerly_from_now(str(e))

    def _run_eagerly_from_now(self, reason):
        self.eager_reason = reason
        _warn_once(("eager", reason), f"torch_tpu: a torch.compile graph runs eagerly op by op, because {reason}")

    def __call__(self, *args):
        # AOTAutograd calls with one list (the boxed convention) or, where a
        # wrapper hides _boxed_call, with the inputs themselves; graph inputs
        # are tensors and numbers, never lists.
        args = list(args[0]) if len(args) == 1 and isinstance(args[0], list) else list(args)
        if self.eager_reason is not None or _capturing:
            _stats["eager_runs"] += 1
            return self.gm(*args)
        inputs = args + list(self.cpu_graph(*args)) if self.cpu_graph is not None else args
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        key = _layout_key(tensors, inputs)
        found = self.programs.get(key)
        if found is None:
            return self._capture(key, inputs, tensors)
        program, layout = found
        _stats["replays"] += 1
        produced = program.run(tensors)
        return [produced[i] if kind == "device" else (inputs[i] if kind == "input" else i) for kind, i in layout]

    def _capture(self, key, inputs, tensors):
        global _capturing
        _C._capture_begin(tensors)
        _capturing = True
        try:
            outputs = list(self.device_graph(*inputs))
        except BaseException:
            _capturing = False
            _C._capture_abort()
            raise
        _capturing = False
        layout, device_outputs, reason = [], [], None
        for out in outputs:
            if isinstance(out, torch.Tensor) and out.device.type != "cpu":
                layout.append(("device", len(device_outputs)))
                device_outputs.append(out)
            elif isinstance(out, torch.Tensor):
                same = [i for i, x in enumerate(inputs) if x is out]
                if not same:
                    reason = "the graph returns a CPU tensor it computed on the device"
                layout.append(("input", same[0] if same else -1))
            else:
                layout.append(("constant", out))
        if reason is not None:
            _C._capture_abort()
            self._run_eagerly_from_now(reason)
            return outputs
        program, why_not = _C._capture_end(tensors, device_outputs)
        if program is None:
            self._run_eagerly_from_now(f"it needs a value on the host mid-graph (a flush for '{why_not}')")
            return outputs
        _stats["captures"] += 1
        self.programs[key] = (program, layout)
        return outputs


def _compile_graph(gm, example_inputs):
    _stats["graphs"] += 1
    return _CompiledGraph(gm)


# AOTAutograd's ATen ops are lowered natively (layer norm, softmax, attention,
# their backwards), so no decomposition table: decomposing would only make
# larger graphs of the same work.
_aot_backend = None


def tpu_backend(gm, example_inputs, mode=None, options=None):
    """The `torch.compile` backend "tpu"."""
    global _aot_backend
    if mode not in (None, "default"):
        _warn_once(("mode", mode), f"torch_tpu: torch.compile(mode={mode!r}) has no effect with backend='tpu'; "
                                   "graphs compile as with the default mode")
    if options:
        _warn_once(("options",), "torch_tpu: torch.compile(options=...) is ignored by backend='tpu'")
    if any(isinstance(x, torch.SymInt) for x in example_inputs):
        _warn_once(("dynamic",), "torch_tpu: with dynamic shapes, backend='tpu' compiles one XLA program per "
                                 "distinct input shape (each is cached)")
    if _aot_backend is None:
        from torch._dynamo.backends.common import aot_autograd

        _aot_backend = aot_autograd(fw_compiler=_compile_graph, bw_compiler=_compile_graph,
                                    keep_inference_input_mutations=True)
    return _aot_backend(gm, example_inputs)

