"""The joins a discover_data answer lists (tools/answer_joins.py): through the tables the refs leave out, a table
and its source as one end, the conditions that paste into SQL, many roles cut to those the refs hold (real store,
fake embedder)."""

from projects import column, foreign_key, scan_files, scan_table, sqlite_indexed

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.service import KtxIndex
from ktx_index.tools.answer_joins import joins_between

SYNC = "2026-01-01-000000-local-a"


def test_two_tables_that_join_only_through_a_third_come_with_both_joins_to_it(make_project):
    rides = [
        scan_table("trips", [column("trip_id", "integer", "number"), column("start_station", "integer", "number")],
              [foreign_key("start_station", "stations", "station_id")]),
        scan_table("stations", [column("station_id", "integer", "number"), column("zone_ref", "integer", "number")],
              [foreign_key("zone_ref", "zones", "zone_id")]),
        scan_table("zones", [column("zone_id", "integer", "number"), column("zone_name", comment="name of the zone")]),
        scan_table("weather", [column("rain_mm", "integer", "number", "rainfall")]),
    ]  # fmt: skip
    service, snap = sqlite_indexed(make_project, rides)
    joins = joins_between(snap, [["table:f1:main.trips"], ["table:f1:main.zones"], ["table:f1:main.weather"]])
    assert sorted((j.from_, j.to) for j in joins) == [("main.stations", "main.zones"), ("main.trips", "main.stations")]
    # a table the refs hold joins directly, with no detour
    direct = joins_between(snap, [["table:f1:main.trips"], ["table:f1:main.stations"], ["table:f1:main.zones"]])
    assert sorted((j.from_, j.to) for j in direct) == [("main.stations", "main.zones"), ("main.trips", "main.stations")]
    service.close()


def test_the_left_out_table_that_joins_the_most_of_them_comes_first(make_project):
    key = lambda name: column(name, "integer", "number")  # noqa: E731
    coop = [
        scan_table("members", [key("member_id")]),
        scan_table("crops", [key("crop_id")]),
        scan_table("buyers", [key("buyer_id")]),
        scan_table("contracts", [key("c_member"), key("c_crop")],
              [foreign_key("c_member", "members", "member_id"), foreign_key("c_crop", "crops", "crop_id")]),
        scan_table("tickets", [key("t_member"), key("t_crop"), key("t_buyer")],
              [foreign_key("t_member", "members", "member_id"), foreign_key("t_crop", "crops", "crop_id"),
               foreign_key("t_buyer", "buyers", "buyer_id")]),
    ]  # fmt: skip
    service, snap = sqlite_indexed(make_project, coop)
    refs = [["table:f1:main.members"], ["table:f1:main.crops"], ["table:f1:main.buyers"]]
    # tickets joins all three; contracts (first by name) two, which tickets already joins
    assert {j.from_ for j in joins_between(snap, refs)} == {"main.tickets"}
    service.close()


def test_two_tables_that_join_only_through_two_others_come_with_the_three_joins(make_project):
    """Customers and products: through orders and their lines, neither of them returned."""
    key = lambda name: column(name, "integer", "number")  # noqa: E731
    shop = [
        scan_table("customers", [key("customer_id")]),
        scan_table("products", [key("product_id")]),
        scan_table("orders", [key("order_id"), key("o_customer")], [foreign_key("o_customer", "customers", "customer_id")]),
        scan_table("order_lines", [key("l_order"), key("l_product")],
              [foreign_key("l_order", "orders", "order_id"), foreign_key("l_product", "products", "product_id")]),
        scan_table("suppliers", [key("supplier_id")]),
    ]  # fmt: skip
    service, snap = sqlite_indexed(make_project, shop)
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
    staff = [
        scan_table("employees", [column("employee_id", "integer", "number"), column("reports_to", "integer", "number")],
              [foreign_key("reports_to", "employees", "employee_id")]),
    ]  # fmt: skip
    service, snap = sqlite_indexed(make_project, staff)
    assert snap.facts.joins == {}  # nothing to lift between two tables
    joins = joins_between(snap, [["column:f1:main.employees.reports_to"]])
    assert [(j.from_, j.to, j.on) for j in joins] == [
        ("main.employees", "main.employees", "employees.reports_to = parent.employee_id")  # JOIN employees AS parent
    ]
    service.close()


def test_a_join_both_the_scan_and_the_semantic_layer_declare_is_listed_once_by_the_sources_names(make_project):
    files = scan_files(
        "shop",
        SYNC,
        [
            scan_table("orders", [column("id", "integer"), column("customer_id", "integer")], [foreign_key("customer_id", "customers", "id")]),
            scan_table("customers", [column("id", "integer"), column("region")]),
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


def test_many_roles_are_told_by_their_own_key_columns_not_by_the_key_they_reference(make_project):
    """Search adds the referenced key (``player.player_api_id``) when two tables rank high: every role joins on it,
    so it said nothing of which roles the refs hold, and all six came back."""
    slots = [f"home_player_{n}" for n in range(1, 7)]
    tables = [
        scan_table("player", [column("player_api_id", "integer", "number")]),
        scan_table(
            "match",
            [column(s, "integer", "number") for s in slots],
            [foreign_key(s, "player", "player_api_id") for s in slots],
        ),
    ]
    service, snap = sqlite_indexed(make_project, tables, "f")
    refs = [["table:f:main.match"], ["column:f:main.player.player_api_id"]]
    assert [j.alias for j in joins_between(snap, refs)] == ["home_player_1", "home_player_2"]
    refs.append(["column:f:main.match.home_player_5"])
    assert [j.alias for j in joins_between(snap, refs)] == ["home_player_5"]
    service.close()


def test_many_roles_of_a_table_in_itself_are_told_by_their_own_columns(make_project):
    """A table referencing itself six ways holds the referenced key too: it is every role's, not a role's own."""
    roles = [f"{r}_id" for r in "abcdef"]
    tables = [scan_table("emp", [column("id", "integer", "number")] + [column(r, "integer", "number") for r in roles], [foreign_key(r, "emp", "id") for r in roles])]  # fmt: skip
    service, snap = sqlite_indexed(make_project, tables, "f")
    refs = [["table:f:main.emp"], ["column:f:main.emp.id"]]
    assert [j.alias for j in joins_between(snap, refs)] == ["a", "b"]
    assert [j.alias for j in joins_between(snap, [*refs, ["column:f:main.emp.c_id"]])] == ["c"]
    service.close()


def test_a_join_the_semantic_layer_writes_without_an_alias_comes_as_the_scan_aliases_it(make_project):
    """A source's own self-join (``reservations.orig_res_id = reservations.res_id``) compares a row with itself; the
    scan's foreign key says the same join with the referenced row as ``parent``, and that condition is listed."""
    files = scan_files(
        "shop",
        SYNC,
        [scan_table("reservations", [column("res_id", "integer"), column("orig_res_id", "integer")], [foreign_key("orig_res_id", "reservations", "res_id")])],
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
    files = scan_files(
        "dw",
        SYNC,
        [
            scan_table("fct_trip_otp", [column("trp_id", "integer"), column("rte_id", "integer")], [foreign_key("rte_id", "rte", "rte_id")]),
            scan_table("rte", [column("rte_id", "integer"), column("rte_nm")]),
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
