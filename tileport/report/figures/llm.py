"""Figure: where the LLM roles ran: kernel-writer attempts and tokens per kernel (the writer's
and the IR diagnoser's calls), plus each operator's other roles (analyser, host builder, perf
diagnoser) as an ``(other roles)`` row."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import MaxNLocator

from . import empty


def draw(use: pd.DataFrame):
    """``use``: rows of ``results/report/data/llm.csv`` (``op``, ``kernel``, ``attempts``,
    ``llm_calls``, ``tokens_in``, ``tokens_out``)."""
    if use.empty:
        return empty("no kernel in summary.csv")
    n = len(use)
    labels = [f"{o} / {k}" for o, k in zip(use["op"], use["kernel"])]
    fig, (a1, a2) = plt.subplots(1, 2, sharey=True, figsize=(6.4, max(2.0, 0.17 * n + 1.2)),
                                 gridspec_kw={"width_ratios": [1, 2]})
    ys = list(range(n))
    a1.barh(ys, use["attempts"], color="#8172B2")
    a1.set_xlabel("kernel-writer attempts")
    a1.xaxis.set_major_locator(MaxNLocator(integer=True))
    a1.set_yticks(ys)
    a1.set_yticklabels(labels, fontsize=6 if n <= 40 else 4.5)
    a1.invert_yaxis()
    a2.barh(ys, use["tokens_in"], color="#4C72B0", label="input tokens")
    a2.barh(ys, use["tokens_out"], left=use["tokens_in"], color="#DD8452", label="output tokens")
    a2.set_xlabel("LLM tokens")
    calls = int(use["llm_calls"].sum())
    if calls == 0:
        a2.text(0.5, 0.5, "no LLM call:\nthe deterministic translator wrote\nevery kernel, tileport "
                "diagnosed", transform=a2.transAxes, ha="center", va="center", fontsize=7)
        a2.set_xticks([])
    else:
        a2.legend(frameon=False, loc="lower right")
    fig.suptitle(f"LLM roles: {calls} call(s), {int(use['tokens_in'].sum() + use['tokens_out'].sum())} tokens")
    fig.tight_layout()
    return fig
