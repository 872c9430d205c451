"""The benchmarks' PNG charts (benchmarks/chart.py) are drawn from the numbers given."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import chart  # noqa: E402


def test_bar_chart_is_a_png_of_the_panels(tmp_path):
    image = pytest.importorskip("matplotlib.image")
    path = tmp_path / "sub" / "modes.png"
    written = chart.write_bar_chart(str(path), "modes", [
        ("steps/s relative to strict", ["gpt_small", "chain"], {"strict": [1, 1], "fused": [1.7, 1.5]}, 1.0),
        ("peak MiB", ["gpt_small", "chain"], {"strict": [37.2, 152.3], "fused": [37.1, 144.3]}, None),
    ], note="platform cpu")
    assert written == str(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = image.imread(path)
    height, width = pixels.shape[:2]
    assert width > 2 * height  # two panels side by side
    assert len({tuple(p) for p in pixels.reshape(-1, pixels.shape[2])[::97]}) > 3  # bars, not a blank page


def test_no_matplotlib_means_no_chart_and_no_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    assert chart.write_bar_chart(str(tmp_path / "x.png"), "t", [("y", ["a"], {"s": [1.0]}, None)]) is None
    assert not (tmp_path / "x.png").exists()
    assert "matplotlib is not installed" in capsys.readouterr().out
