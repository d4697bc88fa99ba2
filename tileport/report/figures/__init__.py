"""Figures of the report, one module per figure (``ratio``, ``times``, ``host``, ``coverage``,
``llm``), each with ``draw(...) -> matplotlib Figure``; :func:`save` writes it as PDF (for the
paper), SVG and PNG (for the page) with the provenance sentence in each file's metadata.

Output is reproducible: no creation dates in the files and a fixed SVG id salt, so the same
data gives the same bytes.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

plt.rcParams.update({"svg.hashsalt": "tileport", "font.size": 8, "axes.titlesize": 9,
                     "axes.labelsize": 8, "legend.fontsize": 7, "xtick.labelsize": 7,
                     "ytick.labelsize": 7, "figure.dpi": 100, "axes.spines.top": False,
                     "axes.spines.right": False})

# one colour per side, the same in every figure
SIDE_COLOURS = {"ref": "#4C72B0", "port": "#DD8452", "torch": "#55A868"}
SIDE_NAMES = {"ref": "cuTile Python (reference)", "port": "cuTile Rust (port)", "torch": "PyTorch"}


def save(fig, out: dict[str, str | Path], title: str, description: str) -> None:
    """Write ``fig`` to ``out["pdf"]``, ``out["svg"]`` and ``out["png"]`` (150 dpi), with
    ``title`` and ``description`` (the provenance sentence) as each format's metadata and no
    dates, then close it."""
    for fmt in ("pdf", "svg", "png"):
        Path(out[fmt]).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out["pdf"], bbox_inches="tight",
                metadata={"Title": title, "Subject": description, "Creator": "tileport",
                          "Producer": "matplotlib", "CreationDate": None, "ModDate": None})
    fig.savefig(out["svg"], bbox_inches="tight",
                metadata={"Title": title, "Description": description, "Creator": "tileport", "Date": None})
    fig.savefig(out["png"], bbox_inches="tight", dpi=150,
                metadata={"Title": title, "Description": description, "Software": "tileport"})
    plt.close(fig)


def empty(message: str, size=(6, 1.5)):
    """A figure that says why it has nothing to show (e.g. no GPU measurement yet)."""
    fig, ax = plt.subplots(figsize=size)
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True)
    return fig
