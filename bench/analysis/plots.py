"""The paper's figures from tidy rows (ours and the paper's), with matplotlib's
object API (no pyplot state, no display needed: figures render with Agg)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

from bench.analysis import series as s
from bench.analysis.data import Row, system_order
from bench.analysis.paper import SETUP

PAPER_NOTE = f"dashed: the TiQuE paper's published results ({SETUP}); solid: ours"


def save(figure: Figure, path: str | Path) -> Path:
    """Writes the figure as PNG (creating the directory) and returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=110, bbox_inches="tight")
    return target


def _figure(panels: int, title: str, width: float = 5.2, height: float = 4.0) -> tuple[Figure, list[Axes]]:
    figure = Figure(figsize=(width * panels, height), layout="constrained")
    axes = list(figure.subplots(1, panels, squeeze=False)[0])
    figure.suptitle(title)
    return figure, axes


def _draw(ax: Axes, lines: Sequence[s.Line], empty: str = "no results") -> None:
    for line in lines:
        xs = [p[0] for p in line.points]
        ys = [p[1] for p in line.points]
        ax.plot(xs, ys, linestyle=line.linestyle, marker=line.marker, color=line.color, label=line.label,
                alpha=0.75 if line.source == "paper" else 1.0, markersize=5 if line.source == "paper" else 6,
                markerfacecolor="none" if line.source == "paper" else line.color)
        for (x, y), note in zip(line.points, line.notes):
            # The paper's notes below their points, ours above: a shared point keeps both legible.
            ax.annotate(note, (x, y), textcoords="offset points", xytext=(4, -10 if line.source == "paper" else 4),
                        fontsize=7, color=line.color)
    if not any(line.points for line in lines):
        ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes, color="grey")
    else:
        _legend(ax)
    ax.grid(True, alpha=0.3)


def _legend(ax: Axes) -> None:
    """Below the panel: with ours and the paper's lines together, inside it would hide points."""
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)


def _log2_x(ax: Axes, lines: Sequence[s.Line], reverse: bool = False) -> None:
    """A log-2 x axis ticked at the values present (client counts, K)."""
    values = sorted({p[0] for line in lines for p in line.points if p[0] and p[0] > 0})
    if not values:
        return
    ax.set_xscale("log", base=2)
    ax.set_xticks(values)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(_tick))
    if reverse:
        ax.invert_xaxis()


def _tick(value: float, _: object = None) -> str:
    """2, 0.5 -> "1/2": short labels for clients per warehouse."""
    if 0 < value < 1 and abs(1 / value - round(1 / value)) < 1e-9:
        return f"1/{round(1 / value)}"
    return f"{value:g}"


def _log_xy(ax: Axes) -> None:
    """Log-log axes labelled with plain numbers."""
    for axis, scale in ((ax.xaxis, ax.set_xscale), (ax.yaxis, ax.set_yscale)):
        scale("log")
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(_tick))
        axis.set_minor_formatter(NullFormatter())


def _log_y(ax: Axes, lines: Sequence[s.Line], reference: float | None = 1.0) -> None:
    if any(p[1] > 0 for line in lines for p in line.points):
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    if reference is not None:
        ax.axhline(reference, color="grey", linewidth=0.8)


def _positive(lines: list[s.Line]) -> list[s.Line]:
    """Drops points a log axis cannot show (a ratio of 0 when a system committed nothing)."""
    for line in lines:
        kept = [(i, p) for i, p in enumerate(line.points) if p[1] is not None and p[1] > 0]
        line.notes = [line.notes[i] for i, _ in kept] if line.notes else []
        line.points = [p for _, p in kept]
    return [line for line in lines if line.points]


def tpcc(rows: Sequence[Row]) -> Figure:
    """Paper figure 7: throughput and abort rate vs clients, and throughput ratios."""
    figure, (a, b, c) = _figure(3, f"TPC-C vs clients ({PAPER_NOTE})")
    ours = s.tpcc_lines(rows, "throughput", sources=("ours",))
    _draw(a, ours)
    _log2_x(a, ours)
    a.set(title="throughput (ours)", xlabel="clients", ylabel="transactions/s")
    aborts = s.tpcc_lines(rows, "abort_rate")
    _draw(b, aborts)
    _log2_x(b, aborts)
    b.set(title="abort rate", xlabel="clients", ylabel="aborted / attempted", ylim=(-0.02, 1.02))
    ratios = _positive(s.tpcc_ratio_lines(rows))
    _draw(c, ratios, "needs a tique and a native system")
    _log2_x(c, ratios)
    _log_y(c, ratios)
    c.set(title="throughput ratio at equal clients", xlabel="clients", ylabel="ratio (log)")
    return figure


def contention(rows: Sequence[Row]) -> Figure:
    """Paper figure 8: 99% of transactions on K warehouses."""
    figure, (a, b, c) = _figure(3, f"TPC-C under contention ({PAPER_NOTE})")
    ours = s.contention_lines(rows, "throughput", sources=("ours",))
    _draw(a, ours, "no contention runs")
    _log2_x(a, ours, reverse=True)
    a.set(title="throughput vs K (ours)", xlabel="K: warehouses used by 99% of transactions", ylabel="transactions/s")
    relative = _positive(s.contention_lines(rows, "throughput", per_client_warehouse=True, relative=True))
    _draw(b, relative, "no contention runs")
    _log2_x(b, relative)
    _log_y(b, relative)
    b.set(title="throughput relative to K = W", xlabel="clients per warehouse in use (C / K)", ylabel="ratio (log)")
    aborts = s.contention_lines(rows, "abort_rate", per_client_warehouse=True)
    _draw(c, aborts, "no contention runs")
    _log2_x(c, aborts)
    c.set(title="abort rate", xlabel="clients per warehouse in use (C / K)", ylabel="aborted / attempted",
          ylim=(-0.02, 1.02))
    return figure


def chbench(rows: Sequence[Row]) -> Figure:
    """Paper figure 9: per-query times (ours), per-query and total ratios (ours and paper)."""
    figure = Figure(figsize=(16, 8.5), layout="constrained")
    grid = figure.add_gridspec(2, 3)
    a = figure.add_subplot(grid[0, :])
    b = figure.add_subplot(grid[1, :2])
    c = figure.add_subplot(grid[1, 2])
    figure.suptitle(f"CH-benCHmark ({PAPER_NOTE})")
    times = s.chbench_times(rows, "ours")
    systems = sorted(times, key=system_order)
    width = 0.8 / max(1, len(systems))
    for i, system in enumerate(systems):
        queries = list(times[system])
        a.bar([q - 0.4 + width * (i + 0.5) for q in queries], [times[system][q] * 1000 for q in queries], width,
              label=system, color=s.color(system))
    if systems:
        a.set_yscale("log")
        a.legend(fontsize=8, ncols=len(systems))
    else:
        a.text(0.5, 0.5, "no results", ha="center", va="center", transform=a.transAxes, color="grey")
    a.set(title="median time per query (ours)", ylabel="ms (log)", xticks=range(1, 23),
          xticklabels=[f"Q{n}" for n in range(1, 23)])
    a.grid(True, axis="y", alpha=0.3)
    ratios = _positive(s.chbench_ratio_lines(rows))
    _draw(b, ratios, "needs a tique and a native system")
    _log_y(b, ratios)
    b.set(title="time ratio per query", ylabel="ratio (log)", xticks=range(1, 23),
          xticklabels=[f"Q{n}" for n in range(1, 23)])
    totals = s.chbench_total_ratios(rows)
    for i, (source, text, ratio) in enumerate(totals):
        paper = source == "paper"
        bar = c.barh(i, ratio, color="white" if paper else "#555555", edgecolor="#555555", hatch="//" if paper else None)
        c.bar_label(bar, [f"{ratio:.2f}x"], padding=3, fontsize=8)
    c.set_yticks(range(len(totals)), [s.label(src, text) for src, text, _ in totals], fontsize=7)
    c.invert_yaxis()
    c.axvline(1.0, color="grey", linewidth=0.8)
    c.set(title="22-query total, ratio", xlabel="ratio")
    if not totals:
        c.text(0.5, 0.5, "needs a tique and a native system", ha="center", va="center", transform=c.transAxes,
               color="grey")
    return figure


def htap(rows: Sequence[Row]) -> Figure:
    """Paper figures 10a, 10b and 11."""
    figure, (a, b, c) = _figure(3, f"HTAP: OLTP and OLAP clients at once ({PAPER_NOTE})")
    oltp = _positive(s.htap_sweep_lines(rows, "olap"))
    _draw(a, oltp, "no OLAP sweep (fixed OLTP clients)")
    a.set(title="OLTP throughput vs OLAP clients", xlabel="OLAP clients",
          ylabel="OLTP throughput ÷ same with 0 OLAP clients", ylim=(0, None))
    a.axhline(1.0, color="grey", linewidth=0.8)
    olap = _positive(s.htap_sweep_lines(rows, "oltp"))
    _draw(b, olap, "no OLTP sweep (fixed OLAP clients)")
    b.set(title="OLAP 22-query time vs OLTP clients", xlabel="OLTP clients",
          ylabel="OLAP total ÷ same with 0 OLTP clients", ylim=(0, None))
    b.axhline(1.0, color="grey", linewidth=0.8)
    both = _positive(s.htap_both_lines(rows))
    _draw(c, both, "no points with as many OLTP as OLAP clients")
    if both:
        _log_xy(c)
    c.set(title="both scaled together (points: clients of each kind)",
          xlabel="OLAP 22-query total (log; left is faster)", ylabel="OLTP throughput (log)")
    c.text(0.01, 0.01, "both relative to tique at the fewest clients", transform=c.transAxes, fontsize=7,
           color="grey")
    return figure


def tradeoff(tpcc_rows: Sequence[Row], chbench_rows: Sequence[Row]) -> Figure:
    """Paper figure 1: best OLTP throughput against the CH-benCHmark total, run apart."""
    figure, (a,) = _figure(1, "OLTP/OLAP trade-off, workloads run apart", width=7, height=5)
    lines = _positive(s.tradeoff_lines(tpcc_rows, chbench_rows))
    _draw(a, lines, "needs TPC-C and CH-benCHmark results with a native analytical system")
    if lines:
        _log_xy(a)
    a.set(title=f"hollow markers: the TiQuE paper's published results ({SETUP}); filled: ours", xlabel="CH-benCHmark total ÷ native analytical engine's (log; left is faster)",
          ylabel="best TPC-C throughput ÷ native analytical engine's (log)")
    a.title.set_fontsize(8)
    return figure


def longtx(rows: Sequence[Row]) -> Figure:
    """Paper figure 12: n-1 short clients and one long one, with and without priority."""
    figure, (a, b, c) = _figure(3, f"Long read-write transactions ({PAPER_NOTE})")
    ours = s.longtx_lines(rows, "txs", sources=("ours",))
    _draw(a, ours)
    _log2_x(a, ours)
    a.set(title="throughput (ours)", xlabel="clients (one of them long)", ylabel="committed transactions/s")
    relative = _positive(s.longtx_lines(rows, "txs", relative=True))
    _draw(b, relative, "needs a tique run without priority")
    _log2_x(b, relative)
    _log_y(b, relative)
    b.set(title="throughput ÷ tique without priority", xlabel="clients (one of them long)", ylabel="ratio (log)")
    committed, never = s.longtx_rt_lines(rows)
    committed = _positive(committed)
    _draw(c, committed + never)
    _log2_x(c, committed + never)
    _log_y(c, committed + never)
    c.set(title="long transaction's response time", xlabel="clients (one of them long)",
          ylabel="mean response time ÷ run length (log)")
    return figure

