"""Every plan the planning bench makes (bench/planning.py: TPC-C and CH-benCHmark texts), as
text, per dialect and formulation: the compiled SQL and its parameter names, what the
backend records beside the text (MonetDB's naming, insert-of-query parts), each read's
storage-read variants and each one-row insert's batch of 3. Run it in two worktrees and
compare the files: a change to planning that must not change any plan leaves them equal.

    PYTHONPATH=/work/wt/A python3 scripts/plan_dump.py /tmp/a.txt
    PYTHONPATH=/work/wt/B python3 scripts/plan_dump.py /tmp/b.txt
    cmp /tmp/a.txt /tmp/b.txt
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Any

from sqlglot import exp

from bench import planning
from tique.catalog import CatalogSnapshot
from tique.planner import batch_rows, batched, make_plan
from tique.rewrite import passes
from tique.rewrite.snapshot import Formulation


def show(value: Any, dialect: str) -> str:
    """`value` as text that depends on nothing but its content (no object addresses)."""
    if isinstance(value, exp.Expression):
        return "EXPR<" + value.sql(dialect) + ">"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = ", ".join(f"{f.name}={show(getattr(value, f.name), dialect)}" for f in dataclasses.fields(value))
        return f"{type(value).__name__}({fields})"
    if isinstance(value, str) and type(value) is not str:  # a backend's statement text with attributes
        extra = {name: getattr(value, name, None) for name in ("naming", "insert_of_query", "direct")}
        return repr(str(value)) + "+" + show(extra, dialect)
    if isinstance(value, (list, tuple)):
        return type(value).__name__ + "[" + ", ".join(show(v, dialect) for v in value) + "]"
    if isinstance(value, (frozenset, set)):
        return type(value).__name__ + "{" + ", ".join(sorted(show(v, dialect) for v in value)) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{show(k, dialect)}: {show(v, dialect)}" for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))) + "}"
    text = repr(value)
    return f"<{type(value).__name__}>" if " at 0x" in text else text


def dump(out: Any) -> None:
    texts = planning.tpcc_texts() + planning.chbench_texts()
    for dialect in planning.DIALECTS:
        for formulation in (Formulation.AUTO, Formulation.SCAN, Formulation.RANK, Formulation.STORAGE):
            planning.cold()
            backend = planning._backend(dialect)
            catalog = CatalogSnapshot.of(planning._tables(backend))
            for sql in texts:
                try:
                    plan = make_plan(sql, backend, catalog, formulation, frozenset())
                    text = show(plan, dialect)
                    if getattr(plan, "source", None) is not None:
                        for clean in (frozenset(plan.tables), frozenset(plan.tables[:1])):
                            context = passes.PassContext(catalog, dialect, formulation, backend.key_hash, sql,
                                                         lateral=backend.lateral_point_reads, clean=clean)
                            variant = backend.compile(passes.run(passes.STORAGE_READ, plan.source.copy(), context), owned=True)
                            text += "\nSTORAGE " + show(variant, dialect)
                    if batch_rows(plan):
                        text += "\nBATCH3 " + show(batched(plan, 3), dialect)
                except Exception as error:  # a refusal is an outcome too
                    text = f"ERROR {type(error).__name__}: {error}"
                out.write(f"=== {dialect} {formulation.value} {sql!r}\n{text}\n")
            backend.close()


if __name__ == "__main__":
    with open(sys.argv[1], "w") as file:
        dump(file)
