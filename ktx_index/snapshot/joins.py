"""Which tables and sources join, and on which columns: from the project's own metadata only.

Edges come from a scanned table's declared ``foreignKeys``, a semantic-layer source's ``joins``
and its usage digest's ``commonJoins``; nothing is inferred from names. Search uses them to lift
the key columns between two tables it already ranks high, and ``discover_data`` returns them
(``joins: [{from, to, on}]``) so an agent can write the JOIN without guessing.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

from indexers.models import display_name

#: ``orders.customer_id = customers.id`` → (orders, customer_id), (customers, id)
QUALIFIED = re.compile(r"([\w$]+)\.([\w$]+)")
#: What a self-join's condition calls the referenced row (``employees.reports_to = parent.employee_id``), so it
#: pastes into ``JOIN employees AS parent``; the table's own name on both sides would compare a row with itself.
SELF_ALIAS = "parent"
#: A name SQL reads as written, unquoted.
PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
#: Drivers whose SQL quotes a name in backticks, and in square brackets; the others read the standard's double
#: quotes (Postgres, SQLite, Snowflake, DuckDB, Oracle, Redshift, Trino).
BACKTICKS = frozenset({"mysql", "mariadb", "bigquery", "databricks", "spark", "hive", "clickhouse"})
BRACKETS = frozenset({"sqlserver", "mssql", "azuresql", "synapse", "fabric"})
#: Drivers that read an unquoted name in lower case: a name holding a capital needs its quotes (``"ProductID"``).
FOLDS_TO_LOWER = frozenset({"postgres", "postgresql"})
#: Drivers whose scans write a table's schema into its name (``Sales.SalesOrderHeader``, db ``AdventureWorks``):
#: SQL Server's. Elsewhere the schema is the scan's ``db``, and a dot in a name is part of it.
SCHEMA_IN_NAME = BRACKETS
#: The end of a foreign key's column naming what it holds rather than its role (``BillToAddressID``,
#: ``from_currency_code``): left out of the role alias (``BillToAddress``, ``from_currency``); not ``paid``'s *id*.
KEY_SUFFIX = re.compile(r"(?i:_(?:id|key|code|fk))$|(?<=[a-z0-9])(?:ID|Id|Key|Code|FK)$")
#: The quotes of every dialect above, stripped when conditions are compared (condition_key).
QUOTES = '"`[]'


#: Words a plain name cannot be in any of those dialects (a table named ``order`` or ``user``).
RESERVED = frozenset(
    "all and as by case check column create cross default delete desc distinct drop else end from full grant group "
    "having in index inner insert into is join key left like limit not null offset on or order outer primary "
    "references right select session table then to union unique update user using values when where with".split()
)


def sql_name(name: str, driver: str | None = None) -> str:
    """A table or column name as a join condition writes it: quoted as the connection's driver quotes (double
    quotes by default, backticks for MySQL or BigQuery, brackets for SQL Server) when it is not a plain name
    (``Order Details``), is a reserved word (``order``), or holds a capital Postgres would fold (``ProductID``), so
    the condition can be pasted into a query. Case is kept as the scan wrote it."""
    folded = driver in FOLDS_TO_LOWER and name != name.lower()
    if PLAIN_NAME.fullmatch(name) and name.casefold() not in RESERVED and not folded:
        return name
    if driver in BACKTICKS:
        return "`" + name.replace("`", "``") + "`"
    if driver in BRACKETS:
        return "[" + name.replace("]", "]]") + "]"
    return '"' + name.replace('"', '""') + '"'


def sql_table(name: str, driver: str | None = None) -> str:
    """A scanned table's name as SQL reads it: a schema-qualified name (``Sales.SalesOrderHeader``, as scans of SQL
    Server write them) part by part, each quoted only when it needs to be; elsewhere whole, a dot in it part of
    the name."""
    if driver not in SCHEMA_IN_NAME or "." not in name.strip("."):
        return sql_name(name, driver)
    return ".".join(sql_name(part, driver) for part in name.split("."))


def condition_key(on: str) -> str:
    """A join condition by its tables' own names and columns, each equality's sides and the equalities in one order:
    ``a.x = b.y`` and ``b.y = a.x`` (one edge, seen from each table) are the same join, and so are the semantic
    layer's ``orders.customer_id = customers.id`` and the scan's ``public.orders.customer_id = public.customers.id``;
    ``matches.home = teams.id`` and ``matches.id = teams.home`` are two."""
    parts = re.split(r"\s+and\s+", on.casefold().strip())
    return " and ".join(sorted(" = ".join(sorted(_last_two(side) for side in p.split("="))) for p in parts))


def _last_two(side: str) -> str:
    """``"sales.order details".productid`` → ``order details.productid``: a side's table (schema dropped) and column,
    unquoted."""
    qualifier, _, column = side.strip().rpartition(".")
    table = qualifier.strip(QUOTES).rpartition(".")[2].strip(QUOTES)
    return f"{table}.{column.strip(QUOTES)}"


@dataclass(frozen=True)
class JoinEdge:
    """One way of joining a container to another (stored on both ends)."""

    other: str  # uid of the other table or source
    keys: tuple[str, ...]  # uids of the key columns on either side (resolved when used: they may not exist)
    on: str  # the condition as the metadata states it
    key: str  # what tells it from another join between the two (condition_key, of the condition without aliases)
    alias: str | None = None  # the name ``on`` gives the other end, when it is not the table's own
    declared: bool = True  # this end declares it (the table holding the foreign key, the source listing the join)


class Edge(NamedTuple):
    """A join as one document declares it."""

    container: str  # the declaring table or source's uid
    other: str  # the uid of the one it joins (itself for a self-join)
    keys: list[str]  # the key columns' uids, on either side
    on: str
    key: str  # condition_key of the condition with each table under its own name
    alias: str | None = None  # the name ``on`` gives ``other`` (a role, or a self-join's ``parent``)


def scan_edges(uid: str, conn: str | None, fields: dict) -> list[Edge]:
    """A scanned table's declared foreign keys as joins: the columns of one constraint as one join (``a.x = b.x and
    a.y = b.y``). A table referenced by several keys is joined once per role, each condition naming it by an alias
    from its key column (``BillToAddressID``: ``… = BillToAddress.AddressID``, to read as ``JOIN Person.Address AS
    BillToAddress``), except through a key named as the column it references (``player_api_id`` →
    ``player_api_id``: the table's own key, the row itself) and, when no such key joins it, through the one key
    named after the table (``address_id`` beside ``billing_address_id``). A row joined to another row of its own
    table is the ``parent``, or each its role when there are several. An alias is never a name the condition
    already uses."""
    ref = fields.get("table_ref") or {}
    name = ref.get("name") or fields.get("name") or ""
    attrs = fields.get("attrs") or {}
    driver = attrs.get("driver") if isinstance(attrs.get("driver"), str) else None
    display = fields.get("display") or display_name(ref.get("catalog"), ref.get("db"), name)
    constraints: dict[tuple[str, str], list[dict]] = {}  # (other table's display, constraint) → its column pairs
    for fk in attrs.get("foreignKeys") or []:
        if not all(isinstance(fk.get(k), str) for k in ("toTable", "fromColumn", "toColumn")):
            continue
        constraint = fk.get("constraintName")
        named = constraint if isinstance(constraint, str) and constraint else fk["fromColumn"]
        constraints.setdefault((display_name(fk.get("toCatalog"), fk.get("toDb"), fk["toTable"]), named), []).append(fk)
    references = Counter(to_display for to_display, _named in constraints)
    # names an alias must not take: this table's, every table it references, ``parent``
    taken = {bare_name(name), SELF_ALIAS, *(bare_name(fks[0]["toTable"]) for fks in constraints.values())}
    own_key = {
        c: all(fk["fromColumn"].casefold() == fk["toColumn"].casefold() for fk in fks) for c, fks in constraints.items()
    }
    unaliased = {to_display for (to_display, _named), is_own in own_key.items() if is_own}  # the row itself
    own, out = sql_table(name, driver), []
    for (to_display, named), fks in constraints.items():
        other = f"table:{conn or ''}:{to_display}"
        plain = sql_table(fks[0]["toTable"], driver)
        column = fks[0]["fromColumn"]
        if other == uid:  # a row and another row of its table: two names needed
            single = references[to_display] == 1 and bare_name(name) != SELF_ALIAS
            alias = SELF_ALIAS if single else role_alias(column, taken, driver)
        elif references[to_display] == 1 or own_key[to_display, named]:
            alias = None
        elif (
            _role_base(column) == bare_name(fks[0]["toTable"]) and to_display not in unaliased
        ):  # address_id: the address
            alias = None
            unaliased.add(to_display)
        else:
            alias = role_alias(column, taken, driver)
        pairs = [(sql_name(fk["fromColumn"], driver), sql_name(fk["toColumn"], driver)) for fk in fks]
        on = " and ".join(f"{own}.{src} = {alias or plain}.{dst}" for src, dst in pairs)
        key = condition_key(" and ".join(f"{own}.{src} = {plain}.{dst}" for src, dst in pairs))
        keys = [f"column:{conn or ''}:{display}.{fk['fromColumn']}" for fk in fks]
        keys += [f"column:{conn or ''}:{to_display}.{fk['toColumn']}" for fk in fks]
        out.append(Edge(uid, other, keys, on, key, alias))
    return out


def role_alias(column: str, taken: set[str], driver: str | None) -> str:
    """The alias a foreign key's column gives the table it references in one of its roles: the column without its
    key suffix (``ShipToAddressID`` → ``ShipToAddress``), else the column itself, else it numbered; never one of
    the ``taken`` names (casefolded), to which it is added."""
    base = KEY_SUFFIX.sub("", column) or column
    alias = next(a for a in (base, column, *(f"{column}_{n}" for n in range(2, 99))) if a.casefold() not in taken)
    taken.add(alias.casefold())
    return sql_name(alias, driver)


def _role_base(column: str) -> str:
    """A key column's name without its key suffix, casefolded (``AddressID`` → ``address``)."""
    return (KEY_SUFFIX.sub("", column) or column).casefold()


def bare_name(table: str) -> str:
    """A table's own name, without catalog, schema or quotes, casefolded: what a condition calls it."""
    return table.rpartition(".")[2].strip(QUOTES).casefold()


def source_edges(uid: str, conn: str | None, fields: dict) -> list[Edge]:
    """A semantic-layer source's joins and usage commonJoins, as the layer writes their conditions."""
    name = fields.get("name") or ""
    attrs = fields.get("attrs") or {}
    declared = [(j.get("to"), j.get("on") or "") for j in attrs.get("joins") or [] if isinstance(j, dict)]
    common = [(j.get("table"), " and ".join(j.get("on") or [])) for j in attrs.get("commonJoins") or []]
    out = []
    for target, on in declared + common:
        if not isinstance(target, str):
            continue
        target = target.rsplit(".", 1)[-1]  # commonJoins may name the physical table
        other = f"sl_source:{conn or ''}:{target}"
        keys = [
            f"sl_dimension:{conn or ''}:{source}.{column}"
            for owner, column in QUALIFIED.findall(on)
            for source in (name, target)
            if owner.casefold() == source.casefold()
        ]
        out.append(Edge(uid, other, keys, on, condition_key(on)))
    return out


def join_graph(edges: list[Edge]) -> dict[str, list[JoinEdge]]:
    """Container uid → its edges to other containers, both directions, one per (other, on) (self_joins has the
    rest)."""
    graph: dict[str, list[JoinEdge]] = {}
    seen: set[tuple[str, str, str]] = set()
    for edge in edges:
        a, b, on = edge.container, edge.other, edge.on
        if a == b:
            continue
        for x, y in ((a, b), (b, a)):
            if (x, y, on.casefold()) in seen:
                continue
            seen.add((x, y, on.casefold()))
            keys = tuple(dict.fromkeys(edge.keys))
            graph.setdefault(x, []).append(JoinEdge(y, keys, on, edge.key, edge.alias, declared=x == a))
    return graph


def self_joins(edges: list[Edge]) -> tuple[Edge, ...]:
    """The joins of a container to itself (a row to its parent row), from one document's edges: kept out of the
    graph, whose lifts look for two tables, and returned with the joins."""
    return tuple(edge for edge in edges if edge.container == edge.other)
