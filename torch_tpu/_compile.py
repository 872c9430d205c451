"""torch.compile(backend="tpu"): whole forward and backward graphs as single XLA programs.

Dynamo captures the Python program, AOTAutograd splits it into a forward and a
backward ATen graph (functionalized: in-place updates of inputs are explicit
copies), and each graph is compiled here:

- The graph runs once through the same ATen kernels as eager mode, every op
  deferred into one recording; that recording becomes one program
  (`_C._CapturedGraph`), compiled through the same cache as eager mode.
- Later calls with inputs of the same layout run the program directly on the
  inputs' buffers: no per-op work. Random ops draw new states from their
  generator on each call; a new value of a non-tensor input captures anew
  (cheaply: the program text, so the compiled executable, is the same).
- Work on CPU tensors inside a graph (an optimizer's step counters) is done on
  the device from the CPU inputs, uploaded at each call; only the updates of
  CPU inputs (and CPU results) run, after the program, as a small eager CPU graph.
- A graph that needs a value on the host mid-way (`.item()`, a data-dependent
  shape, a CPU fallback op) runs eagerly, in the active eager mode, with one
  warning naming the reason.
- With `dynamic=True` each distinct input shape gets its own program (the
  compilation cache makes shapes seen before cheap); a message says so once.
- A graph with collectives (functional collectives, DTensor) breaks at each one:
  the collective runs eagerly through the process group, and the parts between
  are captured as above; a message says so once.

`torch.compile(model)` with no backend (Inductor, the default) compiles a graph
that touches tpu tensors through this backend too, as CUDA users' code expects
it to work unchanged: Inductor's own code generator for a "tpu" device (Pallas,
written for Google's TorchTPU) imports that package's internals, so it fails here.
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


def _mutates(node):
    schema = getattr(node.target, "_schema", None)
    return schema is not None and schema.is_mutable


class _Split:
    """A graph split for capture. Work on CPU tensors (an optimizer's step counters) is done on
    the device instead, from the CPU inputs uploaded there; only what must happen on the CPU (the
    updates of CPU inputs, CPU results) runs as a small eager CPU graph after the device program,
    which has read the inputs' old values by then.

    device_graph: the graph without its CPU updates and with None for its CPU results;
    uploads: the inputs to upload before calling it; cpu_graph (or None): returns the CPU results,
    as a tuple, in the order of cpu_results (output positions), after making the CPU updates.
    Raises ValueError when CPU work depends on device values (a host read mid-graph)."""

    def __init__(self, gm):
        nodes = list(gm.graph.nodes)
        placeholders = [n for n in nodes if n.op == "placeholder"]
        output = next(n for n in nodes if n.op == "output")
        devices = [t.device for n in nodes for t in _tensors(n.meta.get("val")) if t.device.type != "cpu"]
        self.device = devices[0] if devices else None
        cpu = {n for n in nodes if n.op in ("call_function", "get_attr", "placeholder") and _node_on_cpu(n)}
        for n in cpu:
            for a in n.all_input_nodes:
                if a not in cpu and _tensors(a.meta.get("val")):
                    raise ValueError(f"CPU work ({n.target}) reads a device value ({a.target})")
        results = output.args[0]
        flat = list(results) if isinstance(results, (list, tuple)) else [results]
        self.cpu_results = [i for i, r in enumerate(flat) if isinstance(r, torch.fx.Node) and r in cpu]
        updates = [n for n in nodes if n in cpu and n.op == "call_function" and _mutates(n)]
        self.cpu_graph = None
        if updates or self.cpu_results:
            # The CPU graph: the updates and CPU results, and what they need.
            needed, stack = set(), updates + [flat[i] for i in self.cpu_results]
            while stack:
                n = stack.pop()
                if n not in needed:
                    needed.add(n)
                    stack.extend(n.all_input_nodes)
            cpu_graph = torch.fx.Graph()
            env = {}
            for n in nodes:
                if n.op == "placeholder" or n in needed:
                    env[n] = cpu_graph.node_copy(n, env.__getitem__)
            cpu_graph.output(tuple(env[flat[i]] for i in self.cpu_results))
            self.cpu_graph = torch.fx.GraphModule(gm, cpu_graph)
        # The device graph: the rest, CPU inputs uploaded.
        device_graph = torch.fx.Graph()
        env = {}
        for n in nodes:
            if n.op == "output":
                kept = [None if i in self.cpu_results else env.get(r, r) if isinstance(r, torch.fx.Node) else r
                        for i, r in enumerate(flat)]
                device_graph.output(kept if isinstance(results, (list, tuple)) else kept[0])
            elif n not in updates:
                env[n] = device_graph.node_copy(n, env.__getitem__)
        used = {a for n in device_graph.nodes for a in n.all_input_nodes}
        self.uploads = [i for i, p in enumerate(placeholders) if p in cpu and env[p] in used]
        self.device_graph = torch.fx.GraphModule(gm, device_graph)


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
            self.split = _Split(gm)
        except ValueError as e:
            self._run_eagerly_from_now(str(e))
            return
        if self.split.device is None:
            self.eager_reason = ""  # only CPU tensors: nothing to capture

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
        split = self.split
        inputs = list(args)
        for i in split.uploads:
            inputs[i] = args[i].to(split.device)
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        key = _layout_key(tensors, inputs)
        found = self.programs.get(key)
        if found is None:
            outputs = self._capture(key, inputs, tensors)
        else:
            _stats["replays"] += 1
            program, layout = found
            produced = program.run(tensors)
            outputs = [produced[i] if kind == "device" else i for kind, i in layout]
        if split.cpu_graph is not None:
            # After the device program has read the CPU inputs' old values.
            for i, value in zip(split.cpu_results, split.cpu_graph(*args)):
                outputs[i] = value
        return outputs

    def _capture(self, key, inputs, tensors):
        global _capturing
        _C._capture_begin(tensors)
        _capturing = True
        try:
            outputs = list(self.split.device_graph(*inputs))
        except BaseException:
            _capturing = False
            _C._capture_abort()
            raise
        _capturing = False
        layout, device_outputs = [], []
        for out in outputs:
            if isinstance(out, torch.Tensor):
                layout.append(("device", len(device_outputs)))
                device_outputs.append(out)
            else:
                layout.append(("constant", out))
        if any(t.device.type == "cpu" for t in device_outputs):
            _C._capture_abort()
            self._run_eagerly_from_now("it returns a CPU tensor computed from device values")
            return outputs
        program, why_not = _C._capture_end(tensors, device_outputs)
        if program is None:
            self._run_eagerly_from_now(f"it needs a value on the host mid-graph (a flush for '{why_not}')")
            return outputs
        _stats["captures"] += 1
        self.programs[key] = (program, layout)
        return outputs


def _is_collective(node):
    return node.op == "call_function" and getattr(node.target, "namespace", None) == "_c10d_functional"


class _CompiledPart(torch.nn.Module):
    """A part of a graph split at its collectives, captured like a whole graph."""

    def __init__(self, gm):
        super().__init__()
        output = next(n for n in gm.graph.nodes if n.op == "output")
        self.single = not isinstance(output.args[0], (list, tuple))
        if self.single:  # _CompiledGraph returns a list of outputs
            output.args = ((output.args[0],),)
            gm.recompile()
        self.compiled = _CompiledGraph(gm)

    def forward(self, *args):
        outputs = self.compiled(*args)
        return outputs[0] if self.single else tuple(outputs)


def _split_at_collectives(gm):
    """The graph with a break at each collective (torch.distributed's functional collectives,
    which DTensor's ops lower to): the collectives run eagerly through the process group, like
    any collective, and the parts between them are captured and compiled."""
    from torch.fx.passes.split_module import split_module
    part, parts = 0, {}
    for node in gm.graph.nodes:
        if _is_collective(node):
            parts[node] = part + 1
            part += 2
        else:
            parts[node] = part
    split = split_module(gm, None, lambda node: parts[node], keep_original_order=True)
    for name, sub in list(split.named_children()):
        if not any(_is_collective(n) for n in sub.graph.nodes):
            delattr(split, name)
            setattr(split, name, _CompiledPart(sub))

    def run(args):
        return split(*args)
    run._boxed_call = True
    return run


def _compile_graph(gm, example_inputs):
    _stats["graphs"] += 1
    collectives = sum(1 for n in gm.graph.nodes if _is_collective(n))
    if collectives:
        _warn_once(("collectives",), "torch_tpu: a torch.compile graph with collectives breaks at each of them: "
                                     "they run eagerly through the process group, and the parts between them "
                                     "are compiled")
        return _split_at_collectives(gm)
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



def _touches_tpu(gm, example_inputs):
    if any(isinstance(x, torch.Tensor) and x.device.type == "tpu" for x in example_inputs):
        return True
    # Dynamo's graph keeps each node's fake value as "example_value".
    return any(t.device.type == "tpu" for n in gm.graph.nodes
               for t in _tensors(n.meta.get("example_value", n.meta.get("val"))))


def route_inductor_graphs_on_tpu():
    """Makes Inductor (torch.compile's default backend) hand graphs on tpu tensors to tpu_backend."""
    wrapper = torch._TorchCompileInductorWrapper
    if getattr(wrapper.__call__, "_routes_tpu", False):
        return
    inductor_call = wrapper.__call__

    def __call__(self, model_, inputs_, *args, **kwargs):
        if _touches_tpu(model_, inputs_):
            return tpu_backend(model_, inputs_)
        return inductor_call(self, model_, inputs_, *args, **kwargs)

    __call__._routes_tpu = True
    wrapper.__call__ = __call__
