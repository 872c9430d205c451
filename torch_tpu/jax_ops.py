"""JAX and Pallas functions as ops on tpu tensors: `torch_tpu.jax_op`.

JAX lowers the function to StableHLO once per input signature (dtypes, shapes, static
arguments). Its functions become private functions of torch_tpu's own program, called where
the op is recorded: in fused mode a jax_op is recorded like any ATen op (no flush before or
after it, and the ops around it fuse with it), in strict and debug mode it runs as one
program, and under `torch.compile(backend="tpu")` it is a node of the captured graph (the
op `torch_tpu::jax_call`, which has a fake implementation). Its backward is `jax.vjp` of the
same function, or a backward written in JAX, called the same way; programs holding them share
the compilation cache (memory and disk) with every other program.

JAX is imported at the first call of a jax_op, never by `import torch_tpu`.
"""
import contextlib
import functools
import hashlib
import inspect
import itertools
import re
import threading

import torch

from . import _C

__all__ = ["jax_op"]

# PJRT platform of the tpu device -> the platform JAX lowers for.
_JAX_PLATFORMS = {"cpu": "cpu", "host": "cpu", "cuda": "cuda", "gpu": "cuda", "rocm": "rocm", "tpu": "tpu"}
_WIDE_DTYPES = (torch.float64, torch.int64, torch.uint64, torch.complex128)

_functions = {}  # key -> _Function: what a torch_tpu::jax_call names
_lock = threading.RLock()
_next_id = itertools.count()


def jax_op(fn=None, *, static_argnames=(), backward=None):
    """Makes the JAX function `fn` an op on tpu tensors.

    `fn` takes JAX arrays (tensors are passed as arrays of the same dtype and shape, also
    inside tuples, lists and dicts) and the arguments named in `static_argnames` as Python values (hashable; a new value
    lowers anew), and returns an array or a tuple or list of arrays, which come back as
    tpu tensors. The backward is `jax.vjp(fn)`, or `backward(*args, cotangents)`: the
    same arguments as `fn` and the cotangent of its result (a tuple for several results),
    returning one gradient per argument that is not static (shaped like the argument: an
    array, or a structure of arrays like it; None for none). Usable as `@jax_op` or
    `jax_op(fn, ...)`. Tensors of 64-bit dtypes are lowered with JAX's x64 mode on.
    """
    if fn is None:
        return functools.partial(jax_op, static_argnames=static_argnames, backward=backward)
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)
    # The same function made an op again (inside a forward, say) is the same op: it keeps
    # its lowerings instead of lowering anew.
    identity = (fn, tuple(static_argnames), backward)
    with _lock:
        op = _made.get(identity)
        if op is None:
            op = _made[identity] = JaxOp(fn, static_argnames=static_argnames, backward=backward)
    return op


_made = {}  # (fn, static_argnames, backward) -> JaxOp


class JaxOp:
    """A JAX function as an op on tpu tensors, made by `jax_op` (static_argnames a tuple)."""

    def __init__(self, fn, *, static_argnames, backward):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._backward = backward
        self._signature = inspect.signature(fn)
        self._static = frozenset(static_argnames)
        unknown = self._static - set(self._signature.parameters)
        if unknown:
            raise ValueError(f"jax_op {_label(fn)}: static_argnames {sorted(unknown)} are not arguments of it")
        P = inspect.Parameter
        if any(p.kind == P.VAR_KEYWORD for p in self._signature.parameters.values()):
            raise ValueError(f"jax_op {_label(fn)}: functions taking **kwargs are not supported")
        # (name, kind, default) per parameter: binding by hand keeps __call__ traceable by Dynamo.
        self._params = [(p.name, p.kind, p.default) for p in self._signature.parameters.values()]
        self._names = frozenset(self._signature.parameters)
        self._variants = {}  # (layout, static values) -> key
        with _lock:
            self._id = next(_next_id)
            _jax_ops[self._id] = self

    def __call__(self, *args, **kwargs):
        layout, statics, tensors = self._bind(args, kwargs)
        key = _variant_key(self._id, layout, statics)
        outputs = torch.ops.torch_tpu.jax_call(key, tensors)
        return outputs[0] if _is_single_result(key) else tuple(outputs)

    def _bind(self, args, kwargs):
        """(layout, static values, tensors): where the arguments go, as inspect's bind would
        put them; a layout entry is (name, "static", None) or (name, "arg", the structure of
        the tensors it holds: a tensor, or tuples, lists and dicts of them)."""
        P = inspect.Parameter
        layout, statics, tensors = [], [], []
        given = 0
        for name, kind, default in self._params:
            if kind == P.VAR_POSITIONAL:
                value = tuple(args[given:])
                given = len(args)
            elif kind != P.KEYWORD_ONLY and given < len(args):
                if name in kwargs:
                    raise TypeError(f"jax_op {_label(self._fn)}: multiple values for argument '{name}'")
                value = args[given]
                given += 1
            elif name in kwargs and kind != P.POSITIONAL_ONLY:
                value = kwargs[name]
            elif default is not P.empty:
                value = default
            else:
                raise TypeError(f"jax_op {_label(self._fn)}: missing argument '{name}'")
            if name in self._static:
                layout.append((name, "static", None))
                statics.append(value)
            else:
                layout.append((name, "arg", _flatten(self, value, name, tensors)))
        unexpected = [k for k in kwargs if k not in self._names]
        if given < len(args) or unexpected:
            raise TypeError(f"jax_op {_label(self._fn)}: unexpected arguments "
                            f"{unexpected or f'({len(args) - given} positional)'}")
        return tuple(layout), tuple(statics), tensors

    def __repr__(self):
        return f"jax_op({_label(self._fn)})"


_jax_ops = {}  # id -> JaxOp


@torch._dynamo.assume_constant_result
def _variant_key(op_id, layout, statics):
    """The jax_call key of one variant of a jax_op: its static values and tensor layout."""
    op = _jax_ops[op_id]
    try:
        variant = (layout, statics)
        key = op._variants.get(variant)
    except TypeError:
        names = [name for name, kind, _ in layout if kind == "static"]
        bad = next(name for name, value in zip(names, statics) if not _hashable(value))
        raise TypeError(f"jax_op {_label(op._fn)}: static arguments must be hashable ('{bad}' is not)") from None
    if key is None:
        with _lock:
            key = op._variants.get(variant)
            if key is None:
                key = f"{_label(op._fn)}.{len(_functions)}"
                _functions[key] = _Function(op, layout, statics, key)
                op._variants[variant] = key
    return key


def _hashable(value):
    try:
        hash(value)
        return True
    except TypeError:
        return False


@torch._dynamo.assume_constant_result
def _is_single_result(key):
    return _functions[key].single_result


def _flatten(op, value, where, tensors):
    """The structure of `value` (a tensor: "T"; tuples, lists and dicts of them), its tensors
    appended to `tensors` in order."""
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return "T"
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,
                tuple(_flatten(op, v, f"{where}[{i}]", tensors) for i, v in enumerate(value)))
    if isinstance(value, dict):
        return ("dict", tuple((k, _flatten(op, v, f"{where}[{k!r}]", tensors)) for k, v in value.items()))
    raise TypeError(f"jax_op {_label(op._fn)}: argument '{where}' is a {type(value).__name__}; pass a tensor "
                    f"(or tuples, lists and dicts of them), or name the argument in static_argnames")


def _unflatten(spec, arrays):
    """`spec`'s structure with its leaves taken from the iterator `arrays`."""
    if spec == "T":
        return next(arrays)
    kind, items = spec
    if kind == "dict":
        return {k: _unflatten(s, arrays) for k, s in items}
    values = [_unflatten(s, arrays) for s in items]
    return tuple(values) if kind == "tuple" else values


def _leaf_names(spec, where):
    if spec == "T":
        return [where]
    kind, items = spec
    if kind == "dict":
        return [n for k, s in items for n in _leaf_names(s, f"{where}[{k!r}]")]
    return [n for i, s in enumerate(items) for n in _leaf_names(s, f"{where}[{i}]")]


def _gradient_leaves(spec, grad):
    """A user backward's gradient of an argument of structure `spec`, as one leaf (or None) per tensor."""
    if grad is None:
        return [None] * len(_leaf_names(spec, ""))
    if spec == "T":
        return [grad]
    kind, items = spec
    if kind == "dict":
        return [leaf for k, s in items for leaf in _gradient_leaves(s, grad[k])]
    return [leaf for s, g in zip(items, grad) for leaf in _gradient_leaves(s, g)]


def _label(fn):
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__


class _Lowering:
    """One signature's lowering: the name of its entry function in our program, the MLIR
    text defining it (and the functions it calls), and its results as meta tensors."""

    def __init__(self, name, definition, results):
        self.name = name
        self.definition = definition
        self.results = results


class _Function:
    """A flat JAX function (arrays in, a list of arrays out) behind a jax_call key: one
    variant of a jax_op (its static arguments fixed), or the backward of one."""

    def __init__(self, op, layout, statics, key, forward=None):
        self.op = op
        self.layout = layout
        self.statics = statics
        self.key = key
        self.forward = forward  # the _Function this one is the backward of
        self.single_result = False
        self._lowerings = {}
        self._backward_key = None

    def call_arguments(self, arrays):
        """(args, kwargs) of the user's function: `arrays` put where the tensors were."""
        arrays, statics = iter(arrays), iter(self.statics)
        arguments = {}
        for name, kind, spec in self.layout:
            arguments[name] = next(statics) if kind == "static" else _unflatten(spec, arrays)
        bound = inspect.BoundArguments(self.op._signature, arguments)
        return bound.args, bound.kwargs

    def num_tensors(self):
        return len(_tensor_names(self))

    def flat(self, *arrays):
        """The JAX function of a jax_call of this key."""
        if self.forward is not None:
            return self._flat_backward(*arrays)
        args, kwargs = self.call_arguments(arrays)
        leaves, self.single_result = _flat_result(self.op, self.op._fn(*args, **kwargs))
        return leaves

    def _flat_backward(self, *arrays):
        import jax
        import jax.numpy as jnp
        import numpy as np

        fwd = self.forward
        n = fwd.num_tensors()
        primals, cotangents = list(arrays[:n]), iter(arrays[n:])
        inexact = [i for i, a in enumerate(primals) if jnp.issubdtype(a.dtype, jnp.inexact)]

        def cotangents_of(outputs):  # integer results take float0 zeros, as jax.vjp wants
            return [next(cotangents) if jnp.issubdtype(o.dtype, jnp.inexact) else np.zeros(o.shape, jax.dtypes.float0)
                    for o in outputs]

        if fwd.op._backward is not None:
            cts = cotangents_of(jax.eval_shape(fwd.flat, *primals))
            args, kwargs = fwd.call_arguments(primals)
            ct = cts[0] if fwd.single_result else tuple(cts)
            grads = fwd.op._backward(*args, ct, **kwargs)
            specs = [spec for _, kind, spec in fwd.layout if kind == "arg"]
            if not isinstance(grads, (tuple, list)) or len(grads) != len(specs):
                raise TypeError(f"jax_op {_label(fwd.op._fn)}: backward must return a tuple of {len(specs)} "
                                f"gradients (one per argument that is not static, shaped like it, or None), got "
                                f"{type(grads).__name__}" + (f" of {len(grads)}" if isinstance(grads, (tuple, list))
                                                             else ""))
            leaves = [leaf for spec, grad in zip(specs, grads) for leaf in _gradient_leaves(spec, grad)]
            return [jnp.zeros_like(primals[i]) if leaves[i] is None else jnp.asarray(leaves[i], primals[i].dtype)
                    for i in inexact]

        def of_inexact(*values):
            full = list(primals)
            for i, v in zip(inexact, values):
                full[i] = v
            return fwd.flat(*full)

        outputs, pullback = jax.vjp(of_inexact, *[primals[i] for i in inexact])
        return list(pullback(cotangents_of(outputs)))

    def backward_key(self):
        with _lock:
            if self._backward_key is None:
                key = f"{self.key}.backward"
                _functions[key] = _Function(self.op, self.layout, self.statics, key, forward=self)
                self._backward_key = key
        return self._backward_key

    def lowering(self, args):
        signature = tuple((a.dtype, tuple(int(s) for s in a.shape)) for a in args)
        found = self._lowerings.get(signature)
        if found is None:
            with _lock:
                found = self._lowerings.get(signature)
                if found is None:
                    found = self._lowerings[signature] = _lower(self, signature)
        return found


def _flat_result(op, result):
    import jax

    single = not isinstance(result, (tuple, list))
    leaves = [result] if single else list(result)
    for i, leaf in enumerate(leaves):
        if not isinstance(leaf, jax.Array):
            where = "" if single else f" element {i} of"
            raise TypeError(f"jax_op {_label(op._fn)}:{where} its result is a {type(leaf).__name__}; a jax_op "
                            f"returns an array or a tuple or list of arrays")
    if not leaves:
        raise TypeError(f"jax_op {_label(op._fn)}: it returns no arrays")
    return leaves, single


def _describe(signature, names):
    return ", ".join(f"{n}: {str(dt).removeprefix('torch.')}{list(shape)}" for n, (dt, shape) in zip(names, signature))


def _tensor_names(fn):
    return [n for name, kind, spec in fn.layout if kind == "arg" for n in _leaf_names(spec, name)]


def _lower(fn, signature):
    """Lowers `fn` for tensors of `signature` to a _Lowering (raises before anything runs)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        raise ImportError("torch_tpu.jax_op needs JAX: pip install 'torch_tpu[jax]'") from None
    from jax.extend.mlir import ir

    label = _label(fn.op._fn) + (" (backward)" if fn.forward is not None else "")
    names = _tensor_names(fn.forward or fn)
    if fn.forward is not None:
        names = names + [f"cotangent {i}" for i in range(len(signature) - len(names))]
    structs = []
    for name, (dtype, shape) in zip(names, signature):
        try:
            structs.append(jax.ShapeDtypeStruct(shape, jnp.dtype(str(dtype).removeprefix("torch."))))
        except TypeError:
            raise TypeError(f"jax_op {label}: argument '{name}' has dtype {dtype}, which JAX does not have") from None
    platform_name = _C.platform_name().lower()
    platform = _JAX_PLATFORMS.get(platform_name, platform_name)
    try:
        wide = any(dt in _WIDE_DTYPES for dt, _ in signature)
        with jax.enable_x64(True) if wide else contextlib.nullcontext():
            traced = jax.jit(fn.flat, keep_unused=True).trace(*structs)
            lowered = traced.lower(lowering_platforms=(platform,))
    except (TypeError, ValueError, IndexError) as e:
        if isinstance(e, TypeError) and "jax_op" in str(e):  # ours, about the function's arguments or results
            raise
        raise RuntimeError(f"jax_op {label}: JAX could not lower it for {_describe(signature, names)}: {e}") from e
    for const in traced.jaxpr.consts:
        if getattr(const, "ndim", 0) > 0:
            raise ValueError(f"jax_op {label}: it closes over an array constant of shape {tuple(const.shape)} "
                             f"and dtype {const.dtype}; pass it as a tensor argument instead (a constant "
                             f"would be compiled into every program that calls it)")
    results = []
    for i, info in enumerate(jax.tree.leaves(lowered.out_info)):
        dtype = getattr(torch, str(info.dtype), None)
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"jax_op {label}: result {i} has dtype {info.dtype}, which PyTorch does not have")
        results.append(torch.empty(info.shape, dtype=dtype, device="meta"))

    module = lowered.compiler_ir("stablehlo")
    with module.context:
        original = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
        prefix = "jax_" + re.sub(r"\W", "_", _label(fn.op._fn)) + "_" + hashlib.sha256(original.encode()).hexdigest()[:16]
        functions = list(module.body.operations)
        for func in functions:
            old = ir.StringAttr(func.attributes["sym_name"]).value
            new = f"{prefix}_{old}"
            ir.SymbolTable.replace_all_symbol_uses(old, new, module.operation)
            func.attributes["sym_name"] = ir.StringAttr.get(new)
            func.attributes["sym_visibility"] = ir.StringAttr.get("private")
            for attr in ("arg_attrs", "res_attrs"):  # JAX's result names and shardings
                if attr in func.attributes:
                    del func.attributes[attr]
        definition = "\n".join(f.get_asm(print_generic_op_form=True, enable_debug_info=False) for f in functions)
    # The XLA CPU plugin runs no custom calls (JAX's CPU linear algebra and FFT call jaxlib's own kernels).
    targets = re.findall(r'call_target_name = "([^"]*)"', definition) if platform == "cpu" else []
    if targets:
        raise RuntimeError(f"jax_op {label}: it lowers to the custom call '{targets[0]}', which the XLA CPU "
                           f"plugin cannot run (on this platform, Pallas kernels need interpret=True, "
                           f"and JAX's CPU linear algebra and FFT kernels are not available)")
    return _Lowering(f"{prefix}_main", definition, results)


def _device_of(args):
    for a in args:
        if a.device.type == "tpu":
            return a.device
    return torch.device("tpu", torch.tpu.current_device())


@torch.library.custom_op("torch_tpu::jax_call", mutates_args=())
def _jax_call(key: str, args: list[torch.Tensor]) -> list[torch.Tensor]:
    devices = sorted({str(a.device) for a in args})
    raise RuntimeError(f"jax_op {key.rsplit('.', 1)[0]}: expected tpu tensors, got tensors on {', '.join(devices)}")


@_jax_call.register_kernel("tpu")
def _jax_call_tpu(key, args):
    lowering = _functions[key].lowering(args)
    return _C._call_function(lowering.name, lowering.definition, args, lowering.results)


@_jax_call.register_fake
def _jax_call_fake(key, args):
    lowering = _functions[key].lowering(args)
    device = _device_of(args)
    return [torch.empty(r.shape, dtype=r.dtype, device=device) for r in lowering.results]


def _setup_context(ctx, inputs, output):
    key, args = inputs
    ctx.key = key
    ctx.save_for_backward(*args)
    ctx.results = [(r.shape, r.dtype, r.device) for r in output]


def _backward(ctx, grads):
    args = ctx.saved_tensors
    fn = _functions[ctx.key]
    cotangents = []
    for grad, (shape, dtype, device) in zip(grads, ctx.results):
        if dtype.is_floating_point or dtype.is_complex:
            cotangents.append(torch.zeros(shape, dtype=dtype, device=device) if grad is None else grad)
    inexact = [i for i, a in enumerate(args) if a.dtype.is_floating_point or a.dtype.is_complex]
    if not inexact:
        return None, [None] * len(args)
    computed = iter(torch.ops.torch_tpu.jax_call(fn.backward_key(), [*args, *cotangents]))
    return None, [next(computed) if i in inexact else None for i in range(len(args))]


_jax_call.register_autograd(_backward, setup_context=_setup_context)
