"""Join-aware answers: declared foreign keys and semantic-layer joins, never inferred (real store, fake embedder)."""

from projects import column, foreign_key, scan_files, scan_table, write_files

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.service import KtxIndex
from ktx_index.snapshot.joins import Edge, join_graph, scan_edges, sql_name, sql_table

SYNC = "2026-01-01-000000-local-a"


SHOP = [
    scan_table(
        "drivers", [column("driver_id", "integer", "number"), column("dob", "date", "time", "driver date of birth")]
    ),
    scan_table(
        "results",
        [
            column("result_id", "integer", "number"),
            column("driver_ref", "integer", "number"),
            column("finish_position", "integer", "number", "finishing position of the driver in the race"),
        ],
        [foreign_key("driver_ref", "drivers", "driver_id")],
    ),
    scan_table("weather", [column("rain_mm", "integer", "number", "rainfall")]),
]


def test_graph_keeps_both_directions_once():
    graph = join_graph(
        [Edge("a", "b", ["x", "y"], "a.x = b.y", "a.x = b.y"), Edge("b", "a", ["y", "x"], "A.X = B.Y", "a.x = b.y")]
    )
    assert [(e.other, e.keys) for e in graph["a"]] == [("b", ("x", "y"))]
    assert [(e.other, e.keys) for e in graph["b"]] == [("a", ("x", "y"))]


def test_discover_returns_the_join_and_its_key_columns(make_project):
    root = make_project(scan_files("f1", SYNC, SHOP), config="connections:\n  f1:\n    driver: sqlite\n")
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    result = service.discover_data("birth date of drivers by finishing position in results", limit=10)
    ids = [r.id for r in result.refs]
    assert "main.drivers" in ids and "main.results" in ids
    # the key columns between two high-ranked tables that join are part of the answer
    assert "main.results.driver_ref" in ids and "main.drivers.driver_id" in ids
    assert result.joins is not None
    assert [(j.from_, j.to, j.on) for j in result.joins] == [  # from the table holding the foreign key
        ("main.results", "main.drivers", "results.driver_ref = drivers.driver_id")
    ]
    dumped = result.model_dump(mode="json")
    assert dumped["joins"] == [
        {"from": "main.results", "to": "main.drivers", "on": "results.driver_ref = drivers.driver_id"}
    ]
    # nothing invented: a table with no declared key never joins
    lone = service.discover_data("rainfall and drivers", limit=10)
    assert all("main.weather" not in (j.from_, j.to) for j in lone.joins or [])
    service.close()


def test_semantic_layer_joins_resolve_to_dimensions(make_project):
    files = {
        "semantic-layer/warehouse/orders.yaml": (
            "name: orders\ntable: public.orders\ngrain: [id]\n"
            "columns:\n  - {name: id, type: number}\n  - {name: customer_id, type: number}\n"
            "  - {name: amount, type: number, descriptions: {user: order amount}}\n"
            "joins:\n  - {to: customers, on: orders.customer_id = customers.id, relationship: many_to_one}\n"
        ),
        "semantic-layer/warehouse/customers.yaml": (
            "name: customers\ntable: public.customers\ngrain: [id]\n"
            "columns:\n  - {name: id, type: number}\n  - {name: region, type: string, descriptions: {user: customer region}}\n"
        ),
    }
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    result = service.discover_data("order amount by customer region", limit=10)
    assert [(j.from_, j.to) for j in result.joins or []] == [("orders", "customers")]  # from the source declaring it
    ids = [r.id for r in result.refs]
    assert "orders.customer_id" in ids and "customers.id" in ids
    service.close()


def test_facts_patched_from_changed_uids_equal_a_full_load(make_project):
    from ktx_index.snapshot.facts import load_facts, update_facts

    root = make_project(scan_files("f1", SYNC, SHOP), config="connections:\n  f1:\n    driver: sqlite\n")
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    store = service.ensure_index().store
    before = load_facts(store)
    # a new table with a foreign key to drivers, and the results table no longer declaring one
    tables = [*SHOP[:1], scan_table("results", SHOP[1]["columns"]), SHOP[2]]
    tables.append(
        scan_table(
            "laps", [column("lap_driver", "integer", "number")], [foreign_key("lap_driver", "drivers", "driver_id")]
        )
    )
    write_files(root, scan_files("f1", SYNC, tables))
    service.rebuild()
    store = service.ensure_index().store
    changed = {"table:f1:main.laps", "table:f1:main.results", "column:f1:main.laps.lap_driver"}
    patched = update_facts(before, store, changed)
    full = load_facts(store)
    assert (patched.joins, patched.itself, patched.table_of, patched.by_table) == (
        full.joins, full.itself, full.table_of, full.by_table
    )  # fmt: skip
    assert [e.other for e in patched.joins["table:f1:main.drivers"]] == ["table:f1:main.laps"]
    assert update_facts(before, store, {"column:f1:main.drivers.dob"}) is before  # nothing that matters
    service.close()


def test_scanned_join_quotes_a_name_sql_would_not_read_unquoted():
    fields = {
        "table_ref": {"catalog": None, "db": "main", "name": "Order Details"},
        "attrs": {"foreignKeys": [foreign_key("Product-ID", "Products", "ProductID")]},
    }
    (edge,) = scan_edges("table:nw:main.Order Details", "nw", fields)
    assert edge.other == "table:nw:main.Products"
    assert edge.on == '"Order Details"."Product-ID" = Products.ProductID'
    assert sql_name('say "hi"') == '"say ""hi"""' and sql_name("_x$1") == "_x$1" and sql_name("1st") == '"1st"'
    assert sql_name("order") == '"order"' and sql_name("User") == '"User"' and sql_name("Orders") == "Orders"


def test_names_are_quoted_as_the_connections_driver_quotes_them():
    assert sql_name("Order Details", "mysql") == "`Order Details`" and sql_name("a`b", "bigquery") == "`a``b`"
    assert sql_name("Order Details", "sqlserver") == "[Order Details]" and sql_name("a]b", "sqlserver") == "[a]]b]"
    assert sql_name("Order Details", "postgres") == '"Order Details"' and sql_name("orders", "mysql") == "orders"
    # a scan of SQL Server names a table with its schema: each part is a name of its own
    assert sql_table("Sales.SalesOrderHeader", "sqlserver") == "Sales.SalesOrderHeader"
    assert sql_table("Sales.Order Details", "sqlserver") == "Sales.[Order Details]"
    assert sql_table("Sales.SalesOrderHeader", "sqlite") == '"Sales.SalesOrderHeader"'  # elsewhere: one name
    assert sql_table("my.table", "postgres") == '"my.table"'
    # Postgres reads an unquoted name in lower case: a capital keeps its quotes
    assert sql_name("ProductID", "postgres") == '"ProductID"' and sql_name("product_id", "postgres") == "product_id"


def edges_of(name: str, fks: list[dict], driver: str | None = None) -> list[tuple[str, str, str | None]]:
    fields = {
        "table_ref": {"catalog": None, "db": "main", "name": name},
        "attrs": {"foreignKeys": fks, "driver": driver},
    }
    return [(e.other, e.on, e.alias) for e in scan_edges(f"table:c:main.{name}", "c", fields)]


def test_two_keys_to_one_table_are_two_roles_each_under_an_alias():
    """Joined under one name, a bill-to and a ship-to address would be the same row: each condition names the
    address by its role, as the query must (JOIN Person.Address AS BillToAddress)."""
    header = "Sales.SalesOrderHeader"
    fks = [
        foreign_key("BillToAddressID", "Person.Address", "AddressID"),
        foreign_key("ShipToAddressID", "Person.Address", "AddressID"),
    ]
    assert edges_of(header, fks, "sqlserver") == [
        (
            "table:c:main.Person.Address",
            "Sales.SalesOrderHeader.BillToAddressID = BillToAddress.AddressID",
            "BillToAddress",
        ),
        (
            "table:c:main.Person.Address",
            "Sales.SalesOrderHeader.ShipToAddressID = ShipToAddress.AddressID",
            "ShipToAddress",
        ),
    ]
    # the key named after the table keeps the table's name; a role's alias drops the key suffix
    film = edges_of(
        "film",
        [
            foreign_key("language_id", "language", "language_id"),
            foreign_key("original_language_id", "language", "language_id"),
        ],
    )
    assert [(on, alias) for _other, on, alias in film] == [
        ("film.language_id = language.language_id", None),
        ("film.original_language_id = original_language.language_id", "original_language"),
    ]
    # two keys to different columns of a table reach the same row: no roles
    player = edges_of(
        "Player_Attributes",
        [
            foreign_key("player_api_id", "Player", "player_api_id"),
            foreign_key("player_fifa_api_id", "Player", "player_fifa_api_id"),
        ],
    )
    assert [(on, alias) for _other, on, alias in player] == [
        ("Player_Attributes.player_api_id = Player.player_api_id", None),
        ("Player_Attributes.player_fifa_api_id = Player.player_fifa_api_id", None),
    ]
    # two references to itself: each its role, not two `parent`s
    staff = edges_of("staff", [foreign_key("manager_id", "staff", "id"), foreign_key("mentor_id", "staff", "id")])
    assert [(on, alias) for _other, on, alias in staff] == [
        ("staff.manager_id = manager.id", "manager"),
        ("staff.mentor_id = mentor.id", "mentor"),
    ]
    assert edges_of("staff", [foreign_key("manager_id", "staff", "id")]) == [
        ("table:c:main.staff", "staff.manager_id = parent.id", "parent")
    ]
    # keys to other columns than their own name are roles (a transfer's two accounts)
    transfer = edges_of(
        "transfer", [foreign_key("from_acct_no", "account", "number"), foreign_key("to_account_id", "account", "id")]
    )
    assert [alias for _other, _on, alias in transfer] == ["from_acct_no", "to_account"]


def test_a_role_alias_is_never_a_name_the_condition_already_uses():
    """``customer_id`` → ``customer`` in table ``customer`` compared a row with itself; an alias is never this
    table's name, a table it references, ``parent``, or another role's alias."""
    fks = [
        foreign_key("customer_id", "person", "id"),
        foreign_key("referrer_id", "person", "id"),
        foreign_key("parent_id", "person", "id"),
    ]
    assert [alias for _other, _on, alias in edges_of("customer", fks)] == ["customer_id", "referrer", "parent_id"]
    fks = [
        foreign_key("ship_id", "port", "id"),
        foreign_key("ship", "port", "id"),
        foreign_key("harbour_id", "port", "id"),
    ]
    assert [alias for _other, _on, alias in edges_of("voyage", fks)] == ["ship", "ship_2", "harbour"]
    staff = edges_of("staff", [foreign_key("staff_id", "staff", "id"), foreign_key("mentor_id", "staff", "id")])
    assert [alias for _other, _on, alias in staff] == ["staff_id", "mentor"]
    # the one key named after the table it references keeps the table's name; a table named parent has no `parent`
    fks = [foreign_key("address_id", "address", "id"), foreign_key("billing_address_id", "address", "id")]
    assert [alias for _other, _on, alias in edges_of("orders", fks)] == [None, "billing_address"]
    assert edges_of("parent", [foreign_key("parent_id", "parent", "id")])[0][1:] == (
        "parent.parent_id = parent_id.id",
        "parent_id",
    )
    # only a key's own suffix goes: *paid* keeps its *id*
    fks = [foreign_key("paid", "account", "id"), foreign_key("payer_key", "account", "id")]
    assert [alias for _other, _on, alias in edges_of("fee", fks)] == ["paid", "payer"]


def test_the_columns_of_one_constraint_are_one_join():
    detail = [
        foreign_key("SpecialOfferID", "SpecialOfferProduct", "SpecialOfferID", "FK_Detail_Offer"),
        foreign_key("ProductID", "SpecialOfferProduct", "ProductID", "FK_Detail_Offer"),
        foreign_key("ProductID", "Product", "ProductID", "FK_Detail_Product"),
    ]
    assert [on for _other, on, _alias in edges_of("Detail", detail)] == [
        "Detail.SpecialOfferID = SpecialOfferProduct.SpecialOfferID and Detail.ProductID = SpecialOfferProduct.ProductID",
        "Detail.ProductID = Product.ProductID",
    ]
