"""The ATen registration table stays in one place and sorted (DESIGN.md)."""
import re
from pathlib import Path

TABLE = Path(__file__).resolve().parents[1] / "csrc" / "aten" / "registration.cpp"


def test_registration_table_is_sorted_and_unique():
    text = TABLE.read_text()
    body = text.split("TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {", 1)[1]
    names = []
    for line in body.splitlines():
        line = line.strip()
        m = re.match(r'm\.impl\("([^"]+)"', line)
        if m:
            names.append(m.group(1))
            continue
        m = re.match(r"TPU_REGISTER_COMPARE\((\w+)\)", line)
        if m:
            names.append(m.group(1) + ".Scalar")
    assert names, "no registrations found"
    assert names == sorted(names), [a for a, b in zip(names, sorted(names)) if a != b][:5]
    assert len(names) == len(set(names))
