"""Result column names as the engine gives them natively, for output columns the
application left unaliased.

DuckDB names such a column after the expression as its parser prints it back: the
application's text, normalized (`x::int` is `CAST(x AS INTEGER)`, `?` is `$1`). tique sends
the engine a rewritten statement (tique tables become snapshot subqueries, parameters are
renumbered after tique's own), so the engine would name the column after the rewrite. The
name is the parser's alone (no binding, no catalog), so DuckDB's own parser works it out
from the application's text (json_serialize_sql, then json_deserialize_sql of a one-column
SELECT), and the rewritten statement aliases the column with it.

PostgreSQL names an unaliased column after its outermost function, cast type or column,
else `?column?`, which no rewrite changes; MonetDB's numbered labels (`%2`) are learned
from the engine per statement (tique/backends/monetdb.py, Naming).
"""
from __future__ import annotations

import json
import re
import threading
from typing import Any

from sqlglot import exp

from tique.rewrite.params import USER_PREFIX

_parser_lock = threading.Lock()
_parser: Any = None  # an in-memory DuckDB connection: only its parser is used
# Functions that DuckDB expands into several columns, whose alias would change the result.
_EXPANDING = frozenset({"unnest", "unpack"})


def name_columns_as_native(tree: exp.Expression, sql: str, dialect: str) -> None:
    """Aliases each unaliased, named-by-text output column of the query `tree` (parsed from
    `sql`) with the name the engine gives it natively. Only DuckDB needs it."""
    if dialect != "duckdb" or not isinstance(tree, exp.Query):
        return
    select = _leftmost_select(tree)
    if select is None or not any(_named_by_text(item) for item in select.expressions):
        return
    names = _duckdb_names(sql)
    if names is None or len(names) != len(select.expressions):
        return  # not the statement DuckDB parses the same way: leave the engine's names
    for item, name in zip(list(select.expressions), names):
        if name is not None and _named_by_text(item):
            item.replace(exp.alias_(item.copy(), exp.to_identifier(name, quoted=True)))


_CREATE_AS = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:(?:TEMP|TEMPORARY)\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"
    r"(?:\"[^\"]*\"|\w+)(?:\.(?:\"[^\"]*\"|\w+))*\s+AS\s+(?P<query>.*?)(?:\s+WITH\s+(?:NO\s+)?DATA)?\s*;?\s*$",
    re.IGNORECASE | re.DOTALL)


def name_created_columns_as_native(query: exp.Expression, sql: str, dialect: str) -> None:
    """CREATE TABLE ... AS query names the new table's columns as the query's result columns
    (through tique, the rewritten query's would spell its snapshots). The query's own text
    is cut from `sql`; where that fails, it is regenerated from `query` (as parsed, before
    any rewrite), which DuckDB reads as the same statement (tests/test_round_trip.py)."""
    if dialect != "duckdb" or not isinstance(query, exp.Query):
        return
    found = _CREATE_AS.match(sql)
    text = found.group("query") if found else None
    if text is None or _duckdb_names(text) is None:
        plain = query.copy()
        for marker in list(plain.find_all(exp.Placeholder)):
            if marker.name.startswith(USER_PREFIX):
                marker.replace(exp.Placeholder(this=marker.name[len(USER_PREFIX):]))
        text = plain.sql("duckdb")
    name_columns_as_native(query, text, dialect)


def _leftmost_select(tree: exp.Expression) -> exp.Select | None:
    """The SELECT whose columns name the result (the first one of a set operation)."""
    while isinstance(tree, (exp.SetOperation, exp.Subquery)):
        tree = tree.this
    return tree if isinstance(tree, exp.Select) else None


def _named_by_text(item: exp.Expression) -> bool:
    return not isinstance(item, (exp.Alias, exp.Column, exp.Star))


def _duckdb_names(sql: str) -> list[str | None] | None:
    """Per item of the outermost (leftmost) SELECT's list: the name DuckDB gives its column
    where that is the expression's text, else None; None where DuckDB cannot say."""
    global _parser
    with _parser_lock:
        if _parser is None:
            import duckdb

            _parser = duckdb.connect(":memory:")
        try:
            parsed = json.loads(_parser.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
            if parsed.get("error") or len(parsed.get("statements", ())) != 1:
                return None
            node = parsed["statements"][0]["node"]
            while node.get("type") == "SET_OPERATION_NODE":
                node = (node.get("children") or [node.get("left")])[0]
            if not node or node.get("type") != "SELECT_NODE":
                return None
            return [_printed(_parser, item) for item in node["select_list"]]
        except Exception:  # whatever DuckDB's parser makes of it, the engine's own names stand
            return None


def _printed(parser: Any, item: dict) -> str | None:
    if item.get("alias") or item.get("class") in ("COLUMN_REF", "STAR") or _expands(item):
        return None
    one = {"error": False, "statements": [{"node": {
        "type": "SELECT_NODE", "modifiers": [], "cte_map": {"map": []}, "select_list": [item],
        "from_table": {"type": "EMPTY", "alias": "", "sample": None},
        "where_clause": None, "group_expressions": [], "group_sets": [], "aggregate_handling": "STANDARD_HANDLING",
        "having": None, "sample": None, "qualify": None}, "named_param_map": []}]}
    text = parser.execute("SELECT json_deserialize_sql(?)", [json.dumps(one)]).fetchone()[0]
    return text.removeprefix("SELECT ") if text.startswith("SELECT ") else None


def _expands(item: Any) -> bool:
    """Holds a star or COLUMNS(...) (several columns), or an unnest, outside subqueries."""
    if isinstance(item, dict):
        if item.get("class") == "STAR" or (item.get("class") == "FUNCTION" and item.get("function_name") in _EXPANDING):
            return True
        return any(_expands(v) for k, v in item.items() if k != "subquery")
    if isinstance(item, list):
        return any(_expands(v) for v in item)
    return False
