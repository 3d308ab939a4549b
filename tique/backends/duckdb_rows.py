"""DuckDB: many rows of one INSERT ... VALUES shape travel as one list per parameter.

DuckDB binds and plans a VALUES list at about 16 us a row, parameters or literals alike,
which caps a many-row insert (and so executemany) near 50,000 rows/s before tique does
anything. The same rows as one list per parameter of the row, unnested side by side,
cost about 1 us a row. The row's expressions stay as written (casts included), reading
each parameter from its list, so each row gets what it would have got from VALUES; the
values are only grouped by position when bound.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from sqlglot import exp

from tique.rewrite.params import USER_PREFIX, Compiled, RowTemplate
from tique.rewrite.templates import quoted

COLUMN_PREFIX = "tq_column_"  # the list of every row's n-th parameter of the row
COLUMNS = "tq_columns"
# From this many rows on, lists; fewer rows are cheap either way and keep VALUES.
LISTS_FROM = 16


@dataclass(frozen=True)
class ListsStatement(Compiled):
    """The insert reading `rows` rows from lists: list n holds parameter n of each row,
    where row r takes the application's parameters r * width + 1 ... (r + 1) * width."""

    width: int = 0
    rows: int = 0

    def values(self, user: tuple | list, context: dict[str, int]) -> list:
        out: list = []
        for name in self.names:
            if name.startswith(COLUMN_PREFIX):
                first = int(name[len(COLUMN_PREFIX):]) - 1
                out.append(list(user[first:first + self.rows * self.width:self.width]))
            else:
                out.append(context[name])
        return out


@dataclass(frozen=True)
class ListRowTemplate(RowTemplate):
    """A RowTemplate (VALUES for few rows) that sends `LISTS_FROM` rows or more as lists."""

    lists: ListsStatement | None = None

    def expand(self, rows: int) -> Compiled:
        if self.lists is None or rows < LISTS_FROM:
            return super().expand(rows)
        return replace(self.lists, rows=rows)


def lists_insert(tree: exp.Insert, width: int) -> exp.Insert | None:
    """A copy of `tree`, an insert over one VALUES row aliased tq_new, reading its rows from
    unnested lists instead; None when the row takes no parameter (nothing to unnest) or
    one outside the first `width`."""
    from tique.rewrite.writes import NEW  # which imports the backends

    tree = tree.copy()
    values = next(v for v in tree.find_all(exp.Values) if v.alias == NEW)
    row = values.expressions[0]
    used: list[int] = []
    for placeholder in list(row.find_all(exp.Placeholder)):
        name = str(placeholder.this)
        if not name.startswith(USER_PREFIX):
            return None
        n = int(name[len(USER_PREFIX):])
        if not 1 <= n <= width:
            return None
        if n not in used:
            used.append(n)
        placeholder.replace(exp.column(f"{COLUMN_PREFIX}{n}", COLUMNS, quoted=True))
    if not used:
        return None
    unnested = exp.select(*[exp.alias_(exp.Anonymous(this="unnest", expressions=[exp.Placeholder(this=f"{COLUMN_PREFIX}{n}")]),
                                       f"{COLUMN_PREFIX}{n}", quoted=True) for n in sorted(used)])
    rows = exp.select(*row.expressions).from_(exp.Subquery(this=unnested, alias=exp.TableAlias(this=quoted(COLUMNS))))
    values.replace(exp.Subquery(this=rows, alias=values.args["alias"].copy()))
    return tree
