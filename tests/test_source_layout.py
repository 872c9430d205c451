"""The C++ sources keep the layering DESIGN.md describes (issue 25)."""
import re
from pathlib import Path

CSRC = Path(__file__).resolve().parents[1] / "csrc"

# What each layer may include from csrc/ (data flows down; nothing reaches up).
ALLOWED = {
    "runtime": {"runtime"},
    "ir": {"ir"},
    "device": {"device", "runtime"},
    "lowering": {"lowering", "ir"},
    "exec": {"exec", "ir", "device", "runtime"},
    "distributed": {"distributed", "exec", "lowering", "ir", "device", "runtime"},
    "aten": {"aten", "exec", "lowering", "ir", "device", "runtime"},
    "python": {"python", "aten", "distributed", "exec", "lowering", "ir", "device", "runtime"},
}
INCLUDE = re.compile(r'^#include "([a-z_]+)/([a-z_]+)\.h"', re.M)


def sources():
    files = sorted(p for p in CSRC.rglob("*") if p.suffix in (".h", ".cpp") and p.name != "pch.h")
    assert files, "no sources found"
    return files


def unit(path):
    """A file's .h and .cpp are one unit: 'exec/fused'."""
    return f"{path.parent.name}/{path.stem}"


def test_environment_is_read_only_in_env_h():
    readers = [str(p.relative_to(CSRC)) for p in sources()
               if p != CSRC / "runtime" / "env.h" and re.search(r"\b(getenv|secure_getenv|environ)\b", p.read_text())]
    assert not readers, f"read the environment through runtime/env.h: {readers}"


def test_layers_include_only_layers_below():
    for path in sources():
        layer = path.parent.name
        assert layer in ALLOWED, f"{path}: a directory the layering does not know"
        for included_layer, _ in INCLUDE.findall(path.read_text()):
            assert included_layer in ALLOWED[layer], f"{path.relative_to(CSRC)} includes from {included_layer}/"


def test_no_include_cycle_between_files():
    edges = {}
    for path in sources():
        deps = {f"{layer}/{name}" for layer, name in INCLUDE.findall(path.read_text())}
        edges.setdefault(unit(path), set()).update(deps - {unit(path)})
    state = {}

    def visit(node, stack):
        if state.get(node) == "done":
            return
        assert state.get(node) != "open", "include cycle: " + " -> ".join(stack[stack.index(node):] + [node])
        state[node] = "open"
        for dep in sorted(edges.get(node, ())):
            visit(dep, stack + [node])
        state[node] = "done"

    for node in sorted(edges):
        visit(node, [])


def test_every_file_opens_with_a_comment():
    bare = [str(p.relative_to(CSRC)) for p in sources() if not p.read_text().lstrip().startswith("//")]
    assert not bare, f"say what the file holds in its first lines: {bare}"


def test_op_forms_come_from_one_definition():
    """An op's in-place and out= kernels are Forms<&op> of its Dest-first definition
    (aten/op.h), never hand-written next to the functional kernel."""
    kernels = (CSRC / "aten" / "kernels.h").read_text()
    functional = set(re.findall(r"^at::Tensor (\w+)\(", kernels, re.M))
    forms = set(re.findall(r"^at::Tensor& (\w+?)(?:_out|_)\(", kernels, re.M))
    # polygamma_ takes (self, n) where polygamma takes (n, self): Forms cannot
    # derive it. Ops with several results (sort, topk) write their out= tensors themselves.
    assert forms & functional == {"polygamma"}, sorted(forms & functional)
    registration = (CSRC / "aten" / "registration.cpp").read_text()
    assert "Forms<&add>::in_place" in registration and "Forms<&add>::out" in registration


def test_aten_builds_graphs_only_through_lowering():
    # An ATen kernel checks, promotes and binds; the StableHLO ops it needs come from csrc/lowering.
    builders = [str(p.relative_to(CSRC)) for p in sources()
                if p.parent.name == "aten" and re.search(r"\bg(\(\))?\.add\(", p.read_text())]
    assert not builders, f"build StableHLO in csrc/lowering, not in ATen kernels: {builders}"
