"""Shrinks a failing case to a small reproduction and prints it as a runnable SQL script.

Greedy: each step tries one smaller case (fewer statements, rows, tables or columns, or one
subtree of a statement replaced by something simpler) and keeps it when it still fails the
same way. What "fails" means is the caller's: for the fuzzer, tique and the native engine
still differ in the same mode; for the tests, any check over the case.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterator

from sqlglot import exp

from fuzz.engines import Environment, render
from fuzz.runner import Case, Difference, run_case
from fuzz.schema import Schema, create_table, literal

Check = Callable[[Case], bool]


def still_differs(env: Environment, difference: Difference) -> Check:
    """The fuzzer's check: tique still differs from the engine in the same mode and way."""
    def check(case: Case) -> bool:
        try:
            report, _ = run_case(env, case, transactions=difference.mode == "transaction")
        except Exception:
            return False  # a case that no longer loads is no reproduction
        return any(d.signature == difference.signature for d in report.differences)
    return check


def _referenced_names(case: Case) -> set[str]:
    names: set[str] = set()
    for statement in case.statements:
        for tree in (statement.tree, statement.partitioned):
            if tree is not None:
                names |= {t.name for t in tree.find_all(exp.Table)}
                names |= {c.name for c in tree.find_all(exp.Column)}
                names |= {i.name for i in tree.find_all(exp.Identifier)}
    return names


def _smaller_statement_lists(case: Case) -> Iterator[Case]:
    for i in reversed(range(len(case.statements))):
        kept = case.statements[:i] + case.statements[i + 1:]
        yield replace(case, statements=kept, commit_after=frozenset(j if j < i else j - 1 for j in case.commit_after if j != i))


def _fewer_rows(case: Case) -> Iterator[Case]:
    for name, rows in case.rows.items():
        if not rows:
            continue
        yield replace(case, rows={**case.rows, name: []})
        if len(rows) > 3:
            half = len(rows) // 2
            yield replace(case, rows={**case.rows, name: rows[:half]})
            yield replace(case, rows={**case.rows, name: rows[half:]})
        for i in range(len(rows)):
            yield replace(case, rows={**case.rows, name: rows[:i] + rows[i + 1:]})


def _fewer_tables_and_columns(case: Case) -> Iterator[Case]:
    used = _referenced_names(case)
    for table in case.schema.tables:
        if table.name not in used and len(case.schema.tables) > 1:
            yield replace(case, schema=Schema(tuple(t for t in case.schema.tables if t is not table)),
                          rows={k: v for k, v in case.rows.items() if k != table.name})
    for table in case.schema.tables:
        for position, column in enumerate(table.columns):
            if len(table.columns) == 1:
                break
            narrower = table.without_column(column.name)
            tables = tuple(narrower if t is table else t for t in case.schema.tables)
            rows = [r[:position] + r[position + 1:] for r in case.rows[table.name]]
            if narrower.key != table.key:
                continue  # a key column goes last, with the key itself, below
            yield replace(case, schema=Schema(tables), rows={**case.rows, table.name: rows})
        if table.key:
            keyless = replace(table, key=())
            yield replace(case, schema=Schema(tuple(keyless if t is table else t for t in case.schema.tables)))


def _simpler_nodes(node: exp.Expression) -> list[exp.Expression | None]:
    """Replacements for one node, simplest first; None removes an optional clause."""
    if isinstance(node, (exp.Where, exp.Having, exp.Order, exp.Limit, exp.Offset, exp.Distinct, exp.With, exp.Join, exp.Group)):
        return [None]
    if isinstance(node, exp.Connector):
        return [node.this, node.expression]
    if isinstance(node, (exp.Not, exp.Paren, exp.Neg, exp.Abs, exp.Upper, exp.Lower)):
        return [node.this]
    if isinstance(node, exp.Coalesce):
        return [node.this, *node.expressions]
    if isinstance(node, exp.Case):
        return [n for n in (node.args.get("default"), *(i.args.get("true") for i in node.args.get("ifs") or [])) if n is not None]
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.DPipe)):
        return [node.this, node.expression]
    if isinstance(node, (exp.Exists, exp.In, exp.Between, exp.Like, exp.Is, exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT,
                         exp.GTE, exp.NullSafeEQ)):
        return [exp.Boolean(this=True), exp.Boolean(this=False)]
    if isinstance(node, exp.Subquery) and not node.alias:
        return [exp.Null()]
    return []


def _simpler_trees(tree: exp.Expression) -> Iterator[exp.Expression]:
    count = len(list(tree.walk()))
    for position in range(count):
        original = list(tree.walk())[position]
        assignment = isinstance(original.parent, exp.Update) and original.arg_key == "expressions"
        for replacement in [] if assignment else _simpler_nodes(original):
            candidate = tree.copy()
            target = list(candidate.walk())[position]
            if target is candidate:
                if replacement is None:
                    continue
                yield replacement.copy()
                continue
            if replacement is None:
                target.pop()
            else:
                target.replace(replacement.copy())
            yield candidate
        # a projection list, an UPDATE's SET list or a VALUES list loses an item (a set
        # operation or an INSERT's column list rejects what no longer fits, by failing)
        if isinstance(original, (exp.Select, exp.Update, exp.Values)) and len(original.expressions) > 1:
            for i in range(len(original.expressions)):
                candidate = tree.copy()
                target = list(candidate.walk())[position]
                target.set("expressions", [e for j, e in enumerate(target.expressions) if j != i])
                yield candidate


def _simpler_statements(case: Case) -> Iterator[Case]:
    for index, statement in enumerate(case.statements):
        for which in ("tree", "partitioned"):
            tree = getattr(statement, which)
            if tree is None:
                continue
            for simpler in _simpler_trees(tree):
                changed = statement.copy()  # a copy renders afresh
                setattr(changed, which, simpler)
                yield replace(case, statements=case.statements[:index] + [changed] + case.statements[index + 1:])


def shrink(case: Case, check: Check, *, budget: int = 300, last: int | None = None) -> Case:
    """The smallest case found (within `budget` checks) that `check` still holds for.
    `last`: the failing statement's index; statements after it are dropped first."""
    if last is not None and last + 1 < len(case.statements):
        shorter = replace(case, statements=case.statements[:last + 1])
        if check(shorter):
            case = shorter
    spent = 0
    progress = True
    while progress and spent < budget:
        progress = False
        for candidates in (_smaller_statement_lists, _fewer_tables_and_columns, _fewer_rows, _simpler_statements):
            for candidate in candidates(case):
                if spent >= budget:
                    return case
                spent += 1
                if check(candidate):
                    case = candidate
                    progress = True
                    break
            if progress:
                break
    return case


def script(case: Case, engine: str, *, transaction: bool = False) -> str:
    """The case as a SQL script for the engine, parameters inlined as literals."""
    def inline(tree: exp.Expression) -> str:
        tree = tree.copy()
        for placeholder in list(tree.find_all(exp.Placeholder)):
            placeholder.replace(literal(placeholder.meta.get("value")))
        return render(tree, engine)[0]

    lines = []
    for table in case.schema.tables:
        lines.append(inline(create_table(table, engine)) + ";")
        rows = case.rows[table.name]
        if rows:
            values = exp.Values(expressions=[exp.Tuple(expressions=[literal(v) for v in row]) for row in rows])
            lines.append(inline(exp.Insert(this=exp.to_table(table.name), expression=values)) + ";")
    if transaction:
        lines.append("BEGIN;")
    for i, statement in enumerate(case.statements):
        sql, params = statement.sql(engine)
        if params:  # what ran: literals stand in for the parameters below, which may matter
            lines.append(f"-- as run: {sql}  -- parameters {params!r}")
        lines.append(inline(statement.tree) + ";")
        if statement.partitioned is not None:
            lines.append("-- partitioned by TLP, must return the same rows:")
            lines.append(inline(statement.partitioned) + ";")
        if transaction and i in case.commit_after and i < len(case.statements) - 1:
            lines += ["COMMIT;", "BEGIN;"]
    if transaction:
        lines.append("COMMIT;")
    return "\n".join(lines)


def reproduction(env: Environment, case: Case, difference: Difference, *, budget: int = 300) -> tuple[Case, str]:
    """Shrinks a failing case and renders the report: script, then what differs."""
    small = shrink(case, still_differs(env, difference), budget=budget, last=difference.index)
    report, ran = run_case(env, small, transactions=difference.mode == "transaction")
    shown = next((d for d in report.differences if d.signature == difference.signature), difference)
    text = (f"-- {shown.engine}, {shown.mode}: {shown.what} differs at statement {shown.index + 1} (case seed {case.seed})\n"
            + script(ran, env.engine, transaction=shown.mode == "transaction")
            + f"\n-- native: {shown.expected}\n-- tique:  {shown.got}")
    return ran, text
