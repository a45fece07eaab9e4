"""Join-aware answers: declared foreign keys and semantic-layer joins, never inferred (real store, fake embedder)."""

from projects import column, scan_files, write_files

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.service import KtxIndex
from ktx_index.snapshot.joins import Edge, join_graph, scan_edges, sql_name, sql_table
from ktx_index.snapshot.snapshot import Snapshot

SYNC = "2026-01-01-000000-local-a"


def table(name: str, columns: list[dict], fks: list[dict] | None = None) -> dict:
    return {"catalog": None, "db": "main", "name": name, "kind": "table", "columns": columns, "foreignKeys": fks or []}


def fk(src: str, to: str, dst: str, constraint: str | None = None) -> dict:
    return {
        "fromColumn": src, "toCatalog": None, "toDb": "main", "toTable": to, "toColumn": dst,
        "constraintName": constraint,
    }  # fmt: skip


SHOP = [
    table("drivers", [column("driver_id", "integer", "number"), column("dob", "date", "time", "driver date of birth")]),
    table(
        "results",
        [
            column("result_id", "integer", "number"),
            column("driver_ref", "integer", "number"),
            column("finish_position", "integer", "number", "finishing position of the driver in the race"),
        ],
        [fk("driver_ref", "drivers", "driver_id")],
    ),
    table("weather", [column("rain_mm", "integer", "number", "rainfall")]),
]


def indexed(make_project, tables: list[dict]) -> tuple[KtxIndex, Snapshot]:
    """A sqlite connection scanned with these tables, indexed: the service and its snapshot."""
    root = make_project(scan_files("f1", SYNC, tables), config="connections:\n  f1:\n    driver: sqlite\n")
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    return service, service.refreshed_engine().snapshot


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
    tables = [*SHOP[:1], table("results", SHOP[1]["columns"]), SHOP[2]]
    tables.append(
        table("laps", [column("lap_driver", "integer", "number")], [fk("lap_driver", "drivers", "driver_id")])
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


def test_two_tables_that_join_only_through_a_third_come_with_both_joins_to_it(make_project):
    from ktx_index.tools.discover import joins_between

    rides = [
        table("trips", [column("trip_id", "integer", "number"), column("start_station", "integer", "number")],
              [fk("start_station", "stations", "station_id")]),
        table("stations", [column("station_id", "integer", "number"), column("zone_ref", "integer", "number")],
              [fk("zone_ref", "zones", "zone_id")]),
        table("zones", [column("zone_id", "integer", "number"), column("zone_name", comment="name of the zone")]),
        table("weather", [column("rain_mm", "integer", "number", "rainfall")]),
    ]  # fmt: skip
    service, snap = indexed(make_project, rides)
    joins = joins_between(snap, [["table:f1:main.trips"], ["table:f1:main.zones"], ["table:f1:main.weather"]])
    assert sorted((j.from_, j.to) for j in joins) == [("main.stations", "main.zones"), ("main.trips", "main.stations")]
    # a table the refs hold joins directly, with no detour
    direct = joins_between(snap, [["table:f1:main.trips"], ["table:f1:main.stations"], ["table:f1:main.zones"]])
    assert sorted((j.from_, j.to) for j in direct) == [("main.stations", "main.zones"), ("main.trips", "main.stations")]
    service.close()


def test_the_left_out_table_that_joins_the_most_of_them_comes_first(make_project):
    from ktx_index.tools.discover import joins_between

    key = lambda name: column(name, "integer", "number")  # noqa: E731
    coop = [
        table("members", [key("member_id")]),
        table("crops", [key("crop_id")]),
        table("buyers", [key("buyer_id")]),
        table("contracts", [key("c_member"), key("c_crop")],
              [fk("c_member", "members", "member_id"), fk("c_crop", "crops", "crop_id")]),
        table("tickets", [key("t_member"), key("t_crop"), key("t_buyer")],
              [fk("t_member", "members", "member_id"), fk("t_crop", "crops", "crop_id"),
               fk("t_buyer", "buyers", "buyer_id")]),
    ]  # fmt: skip
    service, snap = indexed(make_project, coop)
    refs = [["table:f1:main.members"], ["table:f1:main.crops"], ["table:f1:main.buyers"]]
    # tickets joins all three; contracts (first by name) two, which tickets already joins
    assert {j.from_ for j in joins_between(snap, refs)} == {"main.tickets"}
    service.close()


def test_two_tables_that_join_only_through_two_others_come_with_the_three_joins(make_project):
    """Customers and products: through orders and their lines, neither of them returned."""
    from ktx_index.tools.discover import joins_between

    key = lambda name: column(name, "integer", "number")  # noqa: E731
    shop = [
        table("customers", [key("customer_id")]),
        table("products", [key("product_id")]),
        table("orders", [key("order_id"), key("o_customer")], [fk("o_customer", "customers", "customer_id")]),
        table("order_lines", [key("l_order"), key("l_product")],
              [fk("l_order", "orders", "order_id"), fk("l_product", "products", "product_id")]),
        table("suppliers", [key("supplier_id")]),
    ]  # fmt: skip
    service, snap = indexed(make_project, shop)
    joins = joins_between(snap, [["table:f1:main.customers"], ["table:f1:main.products"], ["table:f1:main.suppliers"]])
    assert sorted((j.from_, j.to) for j in joins) == [
        ("main.order_lines", "main.orders"), ("main.order_lines", "main.products"), ("main.orders", "main.customers"),
    ]  # fmt: skip
    # one table between them is enough: no second detour
    lines = joins_between(snap, [["table:f1:main.orders"], ["table:f1:main.products"]])
    assert sorted((j.from_, j.to) for j in lines) == [
        ("main.order_lines", "main.orders"),
        ("main.order_lines", "main.products"),
    ]
    service.close()


def test_a_table_that_references_itself_comes_with_that_join(make_project):
    """A manager is an employee: the self-reference was dropped from the facts, so ``joins`` never gave it, while
    entity_details listed the foreign key."""
    from ktx_index.tools.discover import joins_between

    staff = [
        table("employees", [column("employee_id", "integer", "number"), column("reports_to", "integer", "number")],
              [fk("reports_to", "employees", "employee_id")]),
    ]  # fmt: skip
    service, snap = indexed(make_project, staff)
    assert snap.facts.joins == {}  # nothing to lift between two tables
    joins = joins_between(snap, [["column:f1:main.employees.reports_to"]])
    assert [(j.from_, j.to, j.on) for j in joins] == [
        ("main.employees", "main.employees", "employees.reports_to = parent.employee_id")  # JOIN employees AS parent
    ]
    service.close()


def test_scanned_join_quotes_a_name_sql_would_not_read_unquoted():
    fields = {
        "table_ref": {"catalog": None, "db": "main", "name": "Order Details"},
        "attrs": {"foreignKeys": [fk("Product-ID", "Products", "ProductID")]},
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
    fks = [fk("BillToAddressID", "Person.Address", "AddressID"), fk("ShipToAddressID", "Person.Address", "AddressID")]
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
        "film", [fk("language_id", "language", "language_id"), fk("original_language_id", "language", "language_id")]
    )
    assert [(on, alias) for _other, on, alias in film] == [
        ("film.language_id = language.language_id", None),
        ("film.original_language_id = original_language.language_id", "original_language"),
    ]
    # two keys to different columns of a table reach the same row: no roles
    player = edges_of(
        "Player_Attributes",
        [fk("player_api_id", "Player", "player_api_id"), fk("player_fifa_api_id", "Player", "player_fifa_api_id")],
    )
    assert [(on, alias) for _other, on, alias in player] == [
        ("Player_Attributes.player_api_id = Player.player_api_id", None),
        ("Player_Attributes.player_fifa_api_id = Player.player_fifa_api_id", None),
    ]
    # two references to itself: each its role, not two `parent`s
    staff = edges_of("staff", [fk("manager_id", "staff", "id"), fk("mentor_id", "staff", "id")])
    assert [(on, alias) for _other, on, alias in staff] == [
        ("staff.manager_id = manager.id", "manager"),
        ("staff.mentor_id = mentor.id", "mentor"),
    ]
    assert edges_of("staff", [fk("manager_id", "staff", "id")]) == [
        ("table:c:main.staff", "staff.manager_id = parent.id", "parent")
    ]
    # keys to other columns than their own name are roles (a transfer's two accounts)
    transfer = edges_of("transfer", [fk("from_acct_no", "account", "number"), fk("to_account_id", "account", "id")])
    assert [alias for _other, _on, alias in transfer] == ["from_acct_no", "to_account"]


def test_a_role_alias_is_never_a_name_the_condition_already_uses():
    """``customer_id`` → ``customer`` in table ``customer`` compared a row with itself; an alias is never this
    table's name, a table it references, ``parent``, or another role's alias."""
    fks = [fk("customer_id", "person", "id"), fk("referrer_id", "person", "id"), fk("parent_id", "person", "id")]
    assert [alias for _other, _on, alias in edges_of("customer", fks)] == ["customer_id", "referrer", "parent_id"]
    fks = [fk("ship_id", "port", "id"), fk("ship", "port", "id"), fk("harbour_id", "port", "id")]
    assert [alias for _other, _on, alias in edges_of("voyage", fks)] == ["ship", "ship_2", "harbour"]
    staff = edges_of("staff", [fk("staff_id", "staff", "id"), fk("mentor_id", "staff", "id")])
    assert [alias for _other, _on, alias in staff] == ["staff_id", "mentor"]
    # the one key named after the table it references keeps the table's name; a table named parent has no `parent`
    fks = [fk("address_id", "address", "id"), fk("billing_address_id", "address", "id")]
    assert [alias for _other, _on, alias in edges_of("orders", fks)] == [None, "billing_address"]
    assert edges_of("parent", [fk("parent_id", "parent", "id")])[0][1:] == (
        "parent.parent_id = parent_id.id",
        "parent_id",
    )
    # only a key's own suffix goes: *paid* keeps its *id*
    fks = [fk("paid", "account", "id"), fk("payer_key", "account", "id")]
    assert [alias for _other, _on, alias in edges_of("fee", fks)] == ["paid", "payer"]


def test_the_columns_of_one_constraint_are_one_join():
    detail = [
        fk("SpecialOfferID", "SpecialOfferProduct", "SpecialOfferID", "FK_Detail_Offer"),
        fk("ProductID", "SpecialOfferProduct", "ProductID", "FK_Detail_Offer"),
        fk("ProductID", "Product", "ProductID", "FK_Detail_Product"),
    ]
    assert [on for _other, on, _alias in edges_of("Detail", detail)] == [
        "Detail.SpecialOfferID = SpecialOfferProduct.SpecialOfferID and Detail.ProductID = SpecialOfferProduct.ProductID",
        "Detail.ProductID = Product.ProductID",
    ]


def test_a_join_both_the_scan_and_the_semantic_layer_declare_is_listed_once_by_the_sources_names(make_project):
    from ktx_index.tools.discover import joins_between

    files = scan_files(
        "shop",
        SYNC,
        [
            table("orders", [column("id", "integer"), column("customer_id", "integer")], [fk("customer_id", "customers", "id")]),
            table("customers", [column("id", "integer"), column("region")]),
        ],
    )  # fmt: skip
    files["semantic-layer/shop/orders.yaml"] = (
        "name: orders\ntable: main.orders\ngrain: [id]\ncolumns:\n  - {name: id, type: number}\n"
        "  - {name: customer_id, type: number}\n"
        "joins:\n  - {to: customers, on: orders.customer_id = customers.id, relationship: many_to_one}\n"
    )
    files["semantic-layer/shop/customers.yaml"] = (
        "name: customers\ntable: main.customers\ngrain: [id]\ncolumns:\n  - {name: id, type: number}\n"
        "  - {name: region, type: string}\n"
    )
    service = KtxIndex(
        make_project(files, config="connections:\n  shop:\n    driver: sqlite\n"), embedder=HashEmbedder()
    )
    service.rebuild()
    snap = service.refreshed_engine().snapshot
    both = [
        ["table:shop:main.orders", "sl_source:shop:orders"],
        ["table:shop:main.customers", "sl_source:shop:customers"],
    ]
    assert [(j.from_, j.to, j.on) for j in joins_between(snap, both)] == [
        ("orders", "customers", "orders.customer_id = customers.id")  # the source's, once
    ]
    column_only = [["table:shop:main.orders", "sl_source:shop:orders"], ["column:shop:main.customers.region"]]
    assert [(j.from_, j.to) for j in joins_between(snap, column_only)] == [("orders", "main.customers")]  # as named
    mixed = [["table:shop:main.orders"], ["sl_source:shop:customers"]]  # the scan's orders, the layer's customers
    assert [(j.from_, j.to) for j in joins_between(snap, mixed)] == [("main.orders", "customers")]
    service.close()


def scanned(make_project, tables: list[dict]) -> tuple[KtxIndex, Snapshot]:
    """A service over a SQLite scan of ``tables`` (connection ``f``), built, and its snapshot."""
    root = make_project(scan_files("f", SYNC, tables), config="connections:\n  f:\n    driver: sqlite\n")
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    return service, service.refreshed_engine().snapshot


def test_many_roles_are_told_by_their_own_key_columns_not_by_the_key_they_reference(make_project):
    """Search adds the referenced key (``player.player_api_id``) when two tables rank high: every role joins on it,
    so it said nothing of which roles the refs hold, and all six came back."""
    from ktx_index.tools.discover import joins_between

    slots = [f"home_player_{n}" for n in range(1, 7)]
    tables = [
        table("player", [column("player_api_id", "integer", "number")]),
        table(
            "match", [column(s, "integer", "number") for s in slots], [fk(s, "player", "player_api_id") for s in slots]
        ),
    ]
    service, snap = scanned(make_project, tables)
    refs = [["table:f:main.match"], ["column:f:main.player.player_api_id"]]
    assert [j.alias for j in joins_between(snap, refs)] == ["home_player_1", "home_player_2"]
    refs.append(["column:f:main.match.home_player_5"])
    assert [j.alias for j in joins_between(snap, refs)] == ["home_player_5"]
    service.close()


def test_many_roles_of_a_table_in_itself_are_told_by_their_own_columns(make_project):
    """A table referencing itself six ways holds the referenced key too: it is every role's, not a role's own."""
    from ktx_index.tools.discover import joins_between

    roles = [f"{r}_id" for r in "abcdef"]
    tables = [table("emp", [column("id", "integer", "number")] + [column(r, "integer", "number") for r in roles], [fk(r, "emp", "id") for r in roles])]  # fmt: skip
    service, snap = scanned(make_project, tables)
    refs = [["table:f:main.emp"], ["column:f:main.emp.id"]]
    assert [j.alias for j in joins_between(snap, refs)] == ["a", "b"]
    assert [j.alias for j in joins_between(snap, [*refs, ["column:f:main.emp.c_id"]])] == ["c"]
    service.close()


def test_a_join_the_semantic_layer_writes_without_an_alias_comes_as_the_scan_aliases_it(make_project):
    """A source's own self-join (``reservations.orig_res_id = reservations.res_id``) compares a row with itself; the
    scan's foreign key says the same join with the referenced row as ``parent``, and that condition is listed."""
    from ktx_index.tools.discover import joins_between

    files = scan_files(
        "shop",
        SYNC,
        [table("reservations", [column("res_id", "integer"), column("orig_res_id", "integer")], [fk("orig_res_id", "reservations", "res_id")])],
    )  # fmt: skip
    files["semantic-layer/shop/reservations.yaml"] = (
        "name: reservations\ntable: main.reservations\ngrain: [res_id]\ncolumns:\n  - {name: res_id, type: number}\n"
        "  - {name: orig_res_id, type: number}\n"
        "joins:\n  - {to: reservations, on: reservations.orig_res_id = reservations.res_id, relationship: many_to_one}\n"
    )
    root = make_project(files, config="connections:\n  shop:\n    driver: sqlite\n")
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    snap = service.refreshed_engine().snapshot
    joins = joins_between(snap, [["sl_source:shop:reservations"]])
    assert [(j.from_, j.to, j.on, j.alias) for j in joins] == [
        ("reservations", "reservations", "reservations.orig_res_id = parent.res_id", "parent")
    ]
    service.close()


def test_a_sources_join_and_its_tables_foreign_key_are_one_join_the_scans_condition(make_project):
    """Sources named otherwise than their tables (``trip_otp`` over ``fct_trip_otp``): their join and the tables'
    foreign key came as two joins, one of them naming sources where SQL needs tables (an outside agent pass)."""
    from ktx_index.tools.discover import joins_between

    files = scan_files(
        "dw",
        SYNC,
        [
            table("fct_trip_otp", [column("trp_id", "integer"), column("rte_id", "integer")], [fk("rte_id", "rte", "rte_id")]),
            table("rte", [column("rte_id", "integer"), column("rte_nm")]),
        ],
    )  # fmt: skip
    files["semantic-layer/dw/trip_otp.yaml"] = (
        "name: trip_otp\ntable: main.fct_trip_otp\ngrain: [trp_id]\ncolumns:\n  - {name: trp_id, type: number}\n"
        "  - {name: rte_id, type: number}\n"
        "joins:\n  - {to: routes, on: trip_otp.rte_id = routes.rte_id, relationship: many_to_one}\n"
    )
    files["semantic-layer/dw/routes.yaml"] = (
        "name: routes\ntable: main.rte\ngrain: [rte_id]\ncolumns:\n  - {name: rte_id, type: number}\n"
    )
    root = make_project(files, config="connections:\n  dw:\n    driver: sqlite\n")
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    snap = service.refreshed_engine().snapshot
    joins = joins_between(snap, [["sl_source:dw:trip_otp"], ["sl_source:dw:routes"]])
    assert [(j.from_, j.to, j.on) for j in joins] == [("trip_otp", "routes", "fct_trip_otp.rte_id = rte.rte_id")]
    with_twins = [
        ["sl_source:dw:trip_otp"],
        ["table:dw:main.rte"],
        ["sl_source:dw:routes"],
        ["table:dw:main.fct_trip_otp"],
    ]
    assert joins_between(snap, with_twins) == joins  # a table and its source are one end, whichever refs name it
    service.close()
