"""Random statements as sqlglot trees, typed by family (num, str, bool, date) so that
almost every statement is valid on every engine and the comparison has something to say.

Every column reference is qualified by a source alias unique within the statement, so
correlated subqueries are unambiguous; every output column has an alias unique within the
statement, so column names and ORDER BY mean the same on every engine. Constants are
literals or, sometimes, bound parameters: a `Placeholder` carrying its value in `meta`.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any, Sequence

from sqlglot import exp

from fuzz.exclusions import Features
from fuzz.schema import FAMILIES, Schema, Table, literal, random_value


@dataclass(frozen=True)
class Source:
    """A FROM item: a table or derived table under an alias, with its columns' families."""
    alias: str
    columns: tuple[tuple[str, str], ...]  # (name, family)


@dataclass
class Statement:
    tree: exp.Expression
    # TLP: the same query, partitioned by a predicate and recombined; must equal `tree`.
    partitioned: exp.Expression | None = None
    ordered: bool = False  # ORDER BY fixes every row's position: compare as lists
    _rendered: dict = field(default_factory=dict, repr=False, compare=False)

    def sql(self, engine: str, *, partitioned: bool = False) -> tuple[str, tuple]:
        """Rendered once per engine: statements do not change once made (a shrinker's
        simpler version is a new Statement)."""
        from fuzz.engines import render

        key = (engine, partitioned)
        if key not in self._rendered:
            tree = self.partitioned if partitioned else self.tree
            assert tree is not None
            self._rendered[key] = render(tree, engine)
        return self._rendered[key]

    @property
    def is_write(self) -> bool:
        return isinstance(self.tree, (exp.Insert, exp.Update, exp.Delete))

    def copy(self) -> "Statement":
        return Statement(self.tree.copy(), self.partitioned.copy() if self.partitioned is not None else None, self.ordered)


_ATOMS = (exp.Column, exp.Literal, exp.Null, exp.Boolean, exp.Placeholder, exp.Paren, exp.Func,
          exp.Subquery, exp.Cast, exp.Window, exp.Star)


def paren(node: exp.Expression) -> exp.Expression:
    """Built trees carry no precedence: wrap every compound operand."""
    if isinstance(node, _ATOMS) and not isinstance(node, (exp.Binary, exp.Connector)):
        return node
    return exp.Paren(this=node)


def param(value: Any) -> exp.Placeholder:
    node = exp.Placeholder()
    node.meta["value"] = value
    return node


def _where_all(tree: exp.Expression, conditions: list[exp.Expression]) -> None:
    """Sets `tree`'s WHERE to the conjunction of `conditions`, if any."""
    if conditions:
        where = conditions[0]
        for extra in conditions[1:]:
            where = exp.And(this=paren(where), expression=paren(extra))
        tree.set("where", exp.Where(this=where))


@dataclass
class Generator:
    rng: random.Random
    schema: Schema
    features: Features = field(default_factory=Features)

    def __post_init__(self) -> None:
        self._names = itertools.count()

    def _alias(self, prefix: str) -> str:
        return f"{prefix}{next(self._names)}"

    # -- scalar expressions ------------------------------------------------------------------

    def constant(self, family: str, *, bindable: bool = False) -> exp.Expression:
        value = random_value(self.rng, family, nulls=self.rng.random() < 0.3)
        if bindable and value is not None and self.features.params and self.rng.random() < 0.3:
            return param(value)
        return literal(value)

    def column(self, scope: Sequence[Source], family: str) -> exp.Expression | None:
        found = [(s.alias, name) for s in scope for name, fam in s.columns if fam == family]
        if not found:
            return None
        alias, name = self.rng.choice(found)
        return exp.column(name, table=alias)

    def expr(self, family: str, scope: Sequence[Source], depth: int = 2) -> exp.Expression:
        """An expression of `family` over the columns in scope."""
        rng = self.rng
        if depth <= 0 or rng.random() < 0.35:
            col = self.column(scope, family)
            if col is not None and rng.random() < 0.8:
                return col
            return self.constant(family)
        if family == "bool":
            return self.predicate(scope, depth)
        roll = rng.random()
        if roll < 0.15:
            return exp.Coalesce(this=self.expr(family, scope, depth - 1), expressions=[self.expr(family, scope, depth - 1)])
        if roll < 0.25:
            return exp.Case(ifs=[exp.If(this=self.predicate(scope, depth - 1), true=self.expr(family, scope, depth - 1))],
                            default=self.expr(family, scope, depth - 1) if rng.random() < 0.7 else None)
        if roll < 0.32 and self.features.subqueries:
            return self.scalar_subquery(family, scope)
        if family == "num":
            kind = rng.choice(["add", "sub", "mul", "neg", "abs", "length"])
            if kind in ("add", "sub", "mul"):
                cls = {"add": exp.Add, "sub": exp.Sub, "mul": exp.Mul}[kind]
                return cls(this=paren(self.expr("num", scope, depth - 1)), expression=paren(self.expr("num", scope, depth - 1)))
            if kind == "neg":
                return exp.Neg(this=paren(self.expr("num", scope, depth - 1)))
            if kind == "abs":
                return exp.Abs(this=self.expr("num", scope, depth - 1))
            return exp.Length(this=self.expr("str", scope, depth - 1))
        if family == "str":
            kind = rng.choice(["upper", "lower", "concat"])
            if kind == "upper":
                return exp.Upper(this=self.expr("str", scope, depth - 1))
            if kind == "lower":
                return exp.Lower(this=self.expr("str", scope, depth - 1))
            return exp.DPipe(this=paren(self.expr("str", scope, depth - 1)), expression=paren(self.expr("str", scope, depth - 1)))
        return self.column(scope, family) or self.constant(family)

    def comparable(self, scope: Sequence[Source], depth: int) -> tuple[str, exp.Expression, exp.Expression]:
        """A family and two operands of it, the left one usually a column."""
        families = [fam for s in scope for _, fam in s.columns if fam != "bool"] or ["num"]
        family = self.rng.choice(families)
        left = self.expr(family, scope, depth - 1)
        right = self.constant(family, bindable=True) if self.rng.random() < 0.5 else self.expr(family, scope, depth - 1)
        return family, left, right

    def predicate(self, scope: Sequence[Source], depth: int = 2) -> exp.Expression:
        rng = self.rng
        roll = rng.random()
        if depth > 0 and roll < 0.2:
            cls = rng.choice([exp.And, exp.Or])
            return cls(this=paren(self.predicate(scope, depth - 1)), expression=paren(self.predicate(scope, depth - 1)))
        if depth > 0 and roll < 0.27:
            return exp.Not(this=paren(self.predicate(scope, depth - 1)))
        if roll < 0.35:
            operand = self.expr(rng.choice(FAMILIES), scope, depth - 1)
            test = exp.Is(this=paren(operand), expression=exp.Null())
            return exp.Not(this=test) if rng.random() < 0.5 else test
        if roll < 0.42:
            col = self.column(scope, "bool")
            if col is not None:
                return col
        if roll < 0.48:
            family_of_left, left, right = self.comparable(scope, depth)
            return exp.Between(this=paren(left), low=paren(right), high=paren(self.constant(family_of_left)))
        if roll < 0.55:
            family_of_left, left, right = self.comparable(scope, depth)
            values = [right] + [self.constant(family_of_left, bindable=True) for _ in range(rng.randint(0, 2))]
            node = exp.In(this=paren(left), expressions=values)
            return exp.Not(this=node) if rng.random() < 0.3 else node
        if roll < 0.6:
            col = self.column(scope, "str")
            if col is not None:
                pattern = rng.choice(["a%", "%b%", "_", "%", "", "a_c", "%x"])
                return exp.Like(this=col, expression=exp.Literal.string(pattern))
        if roll < 0.72 and depth > 0 and self.features.subqueries:
            return self.subquery_predicate(scope)
        _, left, right = self.comparable(scope, depth)
        cls = rng.choice([exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.EQ, exp.NullSafeEQ])
        return cls(this=paren(left), expression=paren(right))

    # -- subqueries ---------------------------------------------------------------------------

    def _table_source(self) -> tuple[exp.Expression, Source]:
        table = self.rng.choice(self.schema.tables)
        alias = self._alias("s")
        node = exp.Table(this=exp.to_identifier(table.name), alias=exp.TableAlias(this=exp.to_identifier(alias)))
        return node, Source(alias, tuple((c.name, c.family) for c in table.columns))

    def _correlation(self, inner: Source, outer: Sequence[Source]) -> exp.Expression | None:
        """inner.x = outer.y for some pair of one family, when correlation is on."""
        if not outer or not self.features.correlated or self.rng.random() < 0.35:
            return None
        pairs = [(name, o.alias, oname) for name, fam in inner.columns for o in outer for oname, ofam in o.columns
                 if fam == ofam and fam != "bool"]
        if not pairs:
            return None
        name, oalias, oname = self.rng.choice(pairs)
        return exp.EQ(this=exp.column(name, table=inner.alias), expression=exp.column(oname, table=oalias))

    def _inner_where(self, inner: Source, outer: Sequence[Source]) -> exp.Expression | None:
        parts = [p for p in (self._correlation(inner, outer),
                             self.predicate([inner], 1) if self.rng.random() < 0.5 else None) if p is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else exp.And(this=paren(parts[0]), expression=paren(parts[1]))

    def scalar_subquery(self, family: str, outer: Sequence[Source]) -> exp.Expression:
        """(SELECT agg(x) FROM t WHERE ...): one row always, so never an error natively."""
        node, inner = self._table_source()
        agg = self.aggregate(family, [inner])
        query = exp.Select(expressions=[agg]).from_(node, copy=False)
        where = self._inner_where(inner, outer)
        if where is not None:
            query = query.where(where, copy=False)
        sub = exp.Subquery(this=query)
        sub.meta["family"] = family
        return sub

    def subquery_predicate(self, outer: Sequence[Source]) -> exp.Expression:
        rng = self.rng
        node, inner = self._table_source()
        where = self._inner_where(inner, outer)
        roll = rng.random()
        if roll < 0.4:
            query = exp.Select(expressions=[exp.Literal.number(1)]).from_(node, copy=False)
            if where is not None:
                query = query.where(where, copy=False)
            test = exp.Exists(this=query)
            return exp.Not(this=test) if rng.random() < 0.3 else test
        if roll < 0.8:
            families = [fam for _, fam in inner.columns if fam != "bool"]
            family = rng.choice(families) if families else "num"
            left = self.column(outer, family) or self.constant(family)
            query = exp.Select(expressions=[self.expr(family, [inner], 1)]).from_(node, copy=False)
            if where is not None:
                query = query.where(where, copy=False)
            test = exp.In(this=paren(left), query=exp.Subquery(this=query))
            return exp.Not(this=test) if rng.random() < 0.3 else test
        family = rng.choice(["num", "str", "date"])
        left = self.column(outer, family) or self.constant(family)
        cls = rng.choice([exp.EQ, exp.LT, exp.GT, exp.NEQ])
        return cls(this=paren(left), expression=self.scalar_subquery(family, outer))

    # -- aggregates and windows ---------------------------------------------------------------

    def aggregate(self, family: str, scope: Sequence[Source]) -> exp.Expression:
        rng = self.rng
        if family == "num":
            kind = rng.choice(["count_star", "count", "sum", "min", "max", "avg", "count_distinct"])
            if kind == "count_star":
                return exp.Count(this=exp.Star())
            if kind in ("count", "count_distinct"):
                operand = self.expr(rng.choice(FAMILIES), scope, 1)
                return exp.Count(this=exp.Distinct(expressions=[operand]) if kind == "count_distinct" else operand)
            cls = {"sum": exp.Sum, "min": exp.Min, "max": exp.Max, "avg": exp.Avg}[kind]
            return _family_of(cls(this=self.expr("num", scope, 1)), "num")
        if family == "bool":
            left = self.aggregate("num", scope)
            return rng.choice([exp.GT, exp.LT, exp.EQ])(this=left, expression=self.constant("num"))
        return _family_of(rng.choice([exp.Min, exp.Max])(this=self.expr(family, scope, 1)), family)

    def window(self, family: str, scope: Sequence[Source]) -> exp.Expression:
        """Window functions whose result the rows alone define (ties share a rank; the default
        frame takes peers together); the order-dependent ones only with their feature on."""
        rng = self.rng
        partition = [self.column(scope, rng.choice(FAMILIES)) for _ in range(rng.randint(0, 2))]
        partition = [p for p in partition if p is not None]
        order = []
        for _ in range(rng.randint(0 if family != "rank" else 1, 2)):
            col = self.column(scope, rng.choice(["num", "str", "date"]))
            if col is not None:
                ordered = exp.Ordered(this=col, desc=rng.random() < 0.3)
                if self.features.explicit_nulls_order and rng.random() < 0.3:
                    ordered.meta["explicit_nulls"] = True
                    ordered.set("nulls_first", rng.random() < 0.5)
                order.append(ordered)
        if family == "num":
            kinds = ["sum", "count", "rank", "dense_rank", "min"]
            if self.features.order_dependent_windows:
                kinds += ["row_number"]
            kind = rng.choice(kinds)
            if kind in ("rank", "dense_rank", "row_number") and not order:
                col = self.column(scope, "num")
                if col is None:
                    kind = "count"
                else:
                    order.append(exp.Ordered(this=col))
            func: exp.Expression = {
                "sum": lambda: exp.Sum(this=self.expr("num", scope, 1)),
                "count": lambda: exp.Count(this=exp.Star()),
                "rank": lambda: exp.Anonymous(this="RANK"),
                "dense_rank": lambda: exp.Anonymous(this="DENSE_RANK"),
                "row_number": lambda: exp.RowNumber(),
                "min": lambda: exp.Min(this=self.expr("num", scope, 1)),
            }[kind]()
        else:
            func = rng.choice([exp.Min, exp.Max])(this=self.expr(family, scope, 1))
        return exp.Window(this=func, partition_by=partition or None,
                          order=exp.Order(expressions=order) if order else None, over="OVER")

    # -- queries ------------------------------------------------------------------------------

    def from_clause(self, depth: int, outer: Sequence[Source]) -> tuple[exp.From, list[exp.Join], list[Source], list[exp.Expression]]:
        """FROM with up to three sources joined every way; returns the CTEs it introduced."""
        rng = self.rng
        ctes: list[exp.Expression] = []
        sources: list[Source] = []
        joins: list[exp.Join] = []
        first: exp.Expression | None = None
        count = 1 + (rng.random() < 0.45) + (rng.random() < 0.15) if self.features.joins else 1
        for i in range(count):
            if depth > 0 and self.features.derived_tables and rng.random() < 0.12:
                node, src, cte = self._derived(depth - 1)
                if cte is not None:
                    ctes.append(cte)
            else:
                node, src = self._table_source()
            if i == 0:
                first = node
            else:
                kind = rng.choice(["INNER", "LEFT", "RIGHT", "FULL", "CROSS"])
                if kind == "CROSS":
                    joins.append(exp.Join(this=node, kind="CROSS"))
                else:
                    on = self._join_condition(src, sources, full=kind == "FULL")
                    side = None if kind == "INNER" else kind
                    joins.append(exp.Join(this=node, side=side, on=on))
            sources.append(src)
        assert first is not None
        return exp.From(this=first), joins, sources, ctes

    def _join_condition(self, new: Source, existing: Sequence[Source], *, full: bool) -> exp.Expression:
        pairs = [(n, e.alias, en) for n, fam in new.columns for e in existing for en, efam in e.columns
                 if fam == efam and fam != "bool"]
        if pairs:
            n, ealias, en = self.rng.choice(pairs)
            cond: exp.Expression = exp.EQ(this=exp.column(n, table=new.alias), expression=exp.column(en, table=ealias))
        else:
            cond = exp.Boolean(this=True)
        if not full and self.rng.random() < 0.3:
            cond = exp.And(this=paren(cond), expression=paren(self.predicate([new, *existing], 1)))
        return cond

    def _derived(self, depth: int) -> tuple[exp.Expression, Source, exp.Expression | None]:
        """A derived table or a CTE over a generated query."""
        signature = [self.rng.choice(FAMILIES) for _ in range(self.rng.randint(1, 3))]
        query, names = self.select(signature, depth, [], top=False)
        alias = self._alias("d")
        src = Source(alias, tuple(zip(names, signature)))
        if self.features.ctes and self.rng.random() < 0.5:
            name = self._alias("w")
            cte = exp.CTE(this=query, alias=exp.TableAlias(this=exp.to_identifier(name)))
            node = exp.Table(this=exp.to_identifier(name), alias=exp.TableAlias(this=exp.to_identifier(alias)))
            return node, src, cte
        return exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier(alias))), src, None

    def select(self, signature: Sequence[str] | None, depth: int, outer: Sequence[Source], *,
               top: bool = True, shape: str | None = None) -> tuple[exp.Select, list[str]]:
        """A SELECT producing `signature`'s families (random when None); returns it and its output names."""
        rng = self.rng
        from_, joins, scope, ctes = self.from_clause(depth, outer)
        if signature is None:
            signature = [rng.choice(FAMILIES) for _ in range(rng.randint(1, 4))]
        shape = shape or rng.choices(["plain", "grouped", "aggregate", "window"],
                                     [5, 2 if self.features.aggregates else 0, 1 if self.features.aggregates else 0,
                                      1 if self.features.windows else 0])[0]
        full_scope = [*scope, *outer]
        names = [self._alias("o") for _ in signature]
        items: list[exp.Expression] = []
        group: list[exp.Expression] = []
        if shape == "grouped":
            for family in signature:
                col = self.column(scope, family)
                if col is not None and rng.random() < 0.6:
                    group.append(col)
                    items.append(col.copy())
                else:
                    items.append(self.aggregate(family, full_scope))
            if not group:
                extra = self.column(scope, rng.choice(FAMILIES))
                if extra is not None:
                    group.append(extra)
        elif shape == "aggregate":
            items = [self.aggregate(family, full_scope) for family in signature]
        else:
            for family in signature:
                if shape == "window" and family != "bool" and rng.random() < 0.5:
                    items.append(self.window(family, scope))
                else:
                    items.append(self.expr(family, full_scope, 2))
        query = exp.Select(expressions=[exp.alias_(item, name) for item, name in zip(items, names)])
        query.set("from_", from_)
        if joins:
            query.set("joins", joins)
        if rng.random() < 0.6:
            query.set("where", exp.Where(this=self.predicate(full_scope, 2)))
        if group:
            query.set("group", exp.Group(expressions=group))
            if rng.random() < 0.3:
                query.set("having", exp.Having(this=self.aggregate("bool", full_scope)))
        if self.features.distinct and rng.random() < 0.15:
            query.set("distinct", exp.Distinct())
        if ctes:
            query.set("with_", exp.With(expressions=ctes))
        return query, names

    def query(self) -> Statement:
        """A top-level read: a SELECT or a set operation, maybe ordered and limited."""
        rng = self.rng
        query: exp.Expression
        if self.features.set_operations and rng.random() < 0.15:
            signature = [rng.choice(FAMILIES) for _ in range(rng.randint(1, 3))]
            left, names = self.select(signature, 1, [])
            right, _ = self.select(signature, 1, [])
            cls = rng.choice([exp.Union, exp.Union, exp.Except, exp.Intersect])
            # a branch may not carry its own WITH (PostgreSQL): the CTEs go on top
            ctes = [cte for branch in (left, right) for cte in (branch.args.get("with_") or exp.With()).expressions]
            left.set("with_", None)
            right.set("with_", None)
            query = cls(this=left, expression=right, distinct=rng.random() < 0.5)
            if ctes:
                query.set("with_", exp.With(expressions=ctes))
        else:
            query, names = self.select(None, 2, [])
        ordered = False
        if self.features.order_limit and rng.random() < 0.4:
            keys = rng.sample(names, rng.randint(1, len(names)))
            if rng.random() < 0.5:
                keys = names[:]  # every output column: a total order on distinct rows
                rng.shuffle(keys)
            order = [exp.Ordered(this=exp.column(k), desc=rng.random() < 0.4) for k in keys]
            if self.features.explicit_nulls_order and rng.random() < 0.4:
                for o in order:
                    o.meta["explicit_nulls"] = True
                    o.set("nulls_first", rng.random() < 0.5)
            query.set("order", exp.Order(expressions=order))
            ordered = len(keys) == len(names)
            # LIMIT only under a total order on distinct rows: which of several tied rows a
            # LIMIT keeps is undefined, and two native runs may well agree on it by chance.
            if ordered and rng.random() < 0.6:
                query.set("limit", exp.Limit(expression=exp.Literal.number(rng.randint(0, 6))))
                if rng.random() < 0.4:
                    query.set("offset", exp.Offset(expression=exp.Literal.number(rng.randint(0, 3))))
        elif self.features.unaliased_columns and isinstance(query, exp.Select) and rng.random() < 0.5:
            # the engine names these columns itself (after the expression's text, or its
            # function), and tique must leave those names as they are
            query.set("expressions", [item.this if isinstance(item, exp.Alias) and rng.random() < 0.5 else item
                                      for item in query.expressions])
        return Statement(query, ordered=ordered)

    def tlp_query(self) -> Statement:
        """Ternary logic partitioning: Q == Q∧p ⊎ Q∧¬p ⊎ Q∧(p IS NULL), for rows or for an aggregate."""
        rng = self.rng
        from_, joins, scope, ctes = self.from_clause(1, [])
        predicate = self.predicate(scope, 2)
        aggregate = self.features.aggregates and rng.random() < 0.35
        base = exp.Select()
        base.set("from_", from_)
        if joins:
            base.set("joins", joins)
        if ctes:
            base.set("with_", exp.With(expressions=ctes))
        name = self._alias("o")
        if aggregate:
            kind = rng.choice(["count", "sum", "min", "max"])
            family = "num" if kind in ("count", "sum") else rng.choice(["num", "str", "date"])
            operand = self.expr(family, scope, 1)
            agg = {"count": exp.Count(this=exp.Star()), "sum": exp.Sum(this=operand),
                   "min": _family_of(exp.Min(this=operand), family), "max": exp.Max(this=operand)}[kind]
            base.set("expressions", [exp.alias_(agg, name)])
            combine = {"count": exp.Sum, "sum": exp.Sum, "min": exp.Min, "max": exp.Max}[kind]
        else:
            signature = [rng.choice(FAMILIES) for _ in range(rng.randint(1, 3))]
            names = [name] + [self._alias("o") for _ in signature[1:]]
            base.set("expressions", [exp.alias_(self.expr(f, scope, 1), n) for f, n in zip(signature, names)])
            if self.features.distinct and rng.random() < 0.25:
                base.set("distinct", exp.Distinct())
        if base.find(exp.RowNumber) is not None:
            # ROW_NUMBER under ties numbers peers in whatever order a plan meets them, and the
            # partitioned query is another plan: its rows may differ from the query's with no
            # bug anywhere (the reordered native copy checks the query alone). No TLP then.
            return Statement(base)
        distinct = base.args.get("distinct") is not None
        parts = []
        for part in (paren(predicate.copy()), exp.Not(this=paren(predicate.copy())),
                     exp.Is(this=paren(predicate.copy()), expression=exp.Null())):
            branch = base.copy()
            branch.set("with_", None)
            branch.set("where", exp.Where(this=part))
            parts.append(branch)
        combined: exp.Expression = exp.Union(this=exp.Union(this=parts[0], expression=parts[1], distinct=distinct),
                                             expression=parts[2], distinct=distinct)
        if aggregate:
            combined = exp.Select(expressions=[exp.alias_(_family_of(combine(this=exp.column(name)), family), name)]).from_(
                exp.Subquery(this=combined, alias=exp.TableAlias(this=exp.to_identifier(self._alias("p")))), copy=False)
        if ctes:
            combined.set("with_", exp.With(expressions=[c.copy() for c in ctes]))
        return Statement(base, partitioned=combined)

    def norec_query(self) -> Statement:
        """NoREC: COUNT(*) under WHERE p equals the count of rows p holds for, computed
        without a WHERE the optimizer could use (SUM of CASE WHEN p THEN 1 ELSE 0 END)."""
        from_, joins, scope, ctes = self.from_clause(1, [])
        predicate = self.predicate(scope, 2)
        name = self._alias("o")
        filtered = exp.Select(expressions=[exp.alias_(exp.Count(this=exp.Star()), name)])
        unfiltered = exp.Select(expressions=[exp.alias_(exp.Sum(this=exp.Case(
            ifs=[exp.If(this=paren(predicate.copy()), true=exp.Literal.number(1))], default=exp.Literal.number(0))), name)])
        for query in (filtered, unfiltered):
            query.set("from_", from_.copy())
            if joins:
                query.set("joins", [j.copy() for j in joins])
            if ctes:
                query.set("with_", exp.With(expressions=[c.copy() for c in ctes]))
        filtered.set("where", exp.Where(this=predicate))
        # SUM over no rows is NULL where COUNT is 0
        unfiltered.set("expressions", [exp.alias_(exp.Coalesce(this=unfiltered.expressions[0].this,
                                                               expressions=[exp.Literal.number(0)]), name)])
        return Statement(filtered, partitioned=unfiltered)

    # -- writes -------------------------------------------------------------------------------

    def _target(self) -> tuple[Table, Source]:
        table = self.rng.choice(self.schema.tables)
        return table, Source(table.name, tuple((c.name, c.family) for c in table.columns))

    def insert(self) -> Statement:
        rng = self.rng
        table, _ = self._target()
        columns = list(table.columns)
        if rng.random() < 0.4:
            required = [c for c in columns if (c.not_null or c.name in table.key) and c.default is None]
            optional = [c for c in columns if c not in required]
            chosen = set(c.name for c in required) | set(c.name for c in rng.sample(optional, rng.randint(0, len(optional))))
            columns = [c for c in columns if c.name in chosen] or columns[:1]
        target = exp.Schema(this=exp.to_table(table.name), expressions=[exp.to_identifier(c.name) for c in columns])
        if self.features.insert_select and rng.random() < 0.3:
            from_, joins, scope, ctes = self.from_clause(1, [])
            query = exp.Select(expressions=[self.expr(c.family, scope, 1) for c in columns])
            query.set("from_", from_)
            if joins:
                query.set("joins", joins)
            if rng.random() < 0.7:
                query.set("where", exp.Where(this=self.predicate(scope, 2)))
            if ctes:
                query.set("with_", exp.With(expressions=ctes))
            source: exp.Expression = query
        else:
            rows = []
            for _ in range(rng.randint(1, 3)):
                values = []
                for c in columns:
                    value = random_value(rng, c.type, nulls=not c.not_null or rng.random() < 0.05)
                    values.append(param(value) if self.features.params and rng.random() < 0.7 else literal(value))
                rows.append(exp.Tuple(expressions=values))
            source = exp.Values(expressions=rows)
        return Statement(exp.Insert(this=target, expression=source))

    def update(self) -> Statement:
        rng = self.rng
        table, target = self._target()
        scope = [target]
        tree = exp.Update(this=exp.to_table(table.name))
        conditions: list[exp.Expression] = []
        if self.features.update_from and rng.random() < 0.25:
            node, src = self._table_source()
            tree.set("from_", exp.From(this=node))
            scope.append(src)
            conditions.append(self._join_condition(src, [target], full=True))
        assigned = rng.sample(list(table.columns), rng.randint(1, min(2, len(table.columns))))
        # The new values come from the target row alone: with FROM, a target row several
        # source rows match takes its values from an arbitrary one of them (undefined in
        # SQL, and not caught by reordering the rows), while the FROM's filtering and the
        # rows updated once each stay defined and compared.
        tree.set("expressions", [exp.EQ(this=exp.column(c.name), expression=self.expr(c.family, [target], 2))
                                 for c in assigned])
        if rng.random() < 0.8:
            conditions.append(self.predicate(scope, 2))
        _where_all(tree, conditions)
        return Statement(tree)

    def delete(self) -> Statement:
        rng = self.rng
        table, target = self._target()
        scope = [target]
        tree = exp.Delete(this=exp.to_table(table.name))
        conditions: list[exp.Expression] = []
        if self.features.delete_using and rng.random() < 0.25:
            node, src = self._table_source()
            tree.set("using", [node])
            scope.append(src)
            conditions.append(self._join_condition(src, [target], full=True))
        if rng.random() < 0.85:
            conditions.append(self.predicate(scope, 2))
        _where_all(tree, conditions)
        return Statement(tree)

    def statement(self) -> Statement:
        roll = self.rng.random()
        if roll < 0.45:
            return self.query()
        if roll < 0.56 and self.features.tlp:
            return self.tlp_query()
        if roll < 0.6 and self.features.norec:
            return self.norec_query()
        if roll < 0.75:
            return self.insert()
        if roll < 0.9:
            return self.update()
        return self.delete()


def _family_of(aggregate: exp.Expression, family: str) -> exp.Expression:
    """Records the family of an aggregate's value (fuzz/departures.py reads a MIN's)."""
    aggregate.meta["family"] = family
    return aggregate
