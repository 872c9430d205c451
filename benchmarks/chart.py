"""PNG bar charts beside the benchmark tables (matplotlib, from the `[bench]` extra).

A chart is drawn from the numbers a script has just printed, never typed in:
each panel groups one bar per series over the workloads.
"""
import os


def write_bar_chart(path, title, panels, note=""):
    """Write `panels` as side-by-side grouped bar charts to `path`.

    panels: a list of (ylabel, categories, {series label: [value per category]},
    reference line or None). Returns the path written, or None (with a message)
    when matplotlib is missing, so a benchmark still prints its table without it.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"(no chart: matplotlib is not installed; pip install 'torch_tpu[bench]' to get {path})")
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), squeeze=False)
    for ax, (ylabel, categories, series, reference) in zip(axes[0], panels):
        width = 0.8 / len(series)
        for i, (label, values) in enumerate(series.items()):
            positions = [c + (i - (len(series) - 1) / 2) * width for c in range(len(categories))]
            bars = ax.bar(positions, values, width, label=label)
            ax.bar_label(bars, fmt="%.2f", fontsize=7)
        if reference is not None:
            ax.axhline(reference, color="grey", linestyle="--", linewidth=1)
        tallest = max(max(values) for values in series.values())
        if tallest > 0:
            ax.set_ylim(0, tallest * 1.25)  # room for the legend above the bars
        ax.set_xticks(range(len(categories)), categories, rotation=20, ha="right")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=8, loc="upper center", ncol=len(series))
    fig.suptitle(title)
    if note:
        fig.text(0.01, 0.01, note, fontsize=7, color="grey")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    path = os.path.normpath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"chart: {path}")
    return path
