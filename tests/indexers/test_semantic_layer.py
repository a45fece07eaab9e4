import yaml

from indexers import load_project, read_project
from indexers.sl_records import compose_overlay, load_records, resolve_description

SHARD = """tables:
  orders:
    table: public.orders
    descriptions: {ai: Orders placed by customers, db: raw orders}
    columns:
      - {name: id, type: string, pk: true}
      - {name: status, type: string, descriptions: {ai: Order status}}
      - {name: ordered_at, type: time}
      - {name: legacy_flag, type: boolean}
    joins:
      - {to: customers, "on": orders.customer_id = customers.id, relationship: many_to_one, source: inferred}
  customers:
    table: public.customers
    columns:
      - {name: id, type: string}
"""

OVERLAY = """name: orders
descriptions:
  user: Paid and refunded customer orders
measures:
  - {name: order_count, expr: count(*), description: Number of paid orders}
column_overrides:
  - name: status
    descriptions: {user: Lifecycle status of the order}
columns:
  - {name: is_paid, type: boolean, expr: "status = 'paid'"}
exclude_columns: [legacy_flag]
"""

STANDALONE = """name: subscriptions
descriptions:
  dbt: One row per subscription
table: analytics.subscriptions
grain: [subscription_id]
columns:
  - name: plan
    type: string
    descriptions: {dbt: Plan tier}
    enum_values: {dbt: [basic, family_4]}
measures:
  - {name: active_subscriptions, expr: count(*), filter: "status = 'active'"}
tags: {dbt: [finance]}
usage:
  narrative: Used for the weekly subscriber report
  frequencyTier: high
"""


def test_description_resolution_order():
    assert resolve_description({"db": "d", "ai": "a", "dbt": "b"}) == "a"
    assert resolve_description({"user": " u ", "ai": "a"}) == "u"
    assert resolve_description({"ktx": "k"}) == "k"
    assert resolve_description({"user": "  "}, "legacy") == "legacy"
    assert resolve_description(None) == ""


def test_overlay_composes_onto_manifest_regardless_of_file_order(make_project):
    root = make_project(
        {
            "semantic-layer/warehouse/_schema/public.yaml": SHARD,
            "semantic-layer/warehouse/a-orders-overlay.yaml": OVERLAY,  # sorts before nothing in particular
            "semantic-layer/warehouse/subscriptions.yaml": STANDALONE,
        }
    )
    records, diagnostics = load_records(load_project(root), "warehouse")
    assert diagnostics == []
    orders = records["orders"]
    assert orders.path == "semantic-layer/warehouse/_schema/public.yaml#orders"
    assert orders.overlays == ["semantic-layer/warehouse/a-orders-overlay.yaml"]
    assert resolve_description(orders.data["descriptions"]) == "Paid and refunded customer orders"
    names = [c["name"] for c in orders.data["columns"]]
    assert names == ["id", "status", "ordered_at", "is_paid"]
    assert orders.data["grain"] == ["id"]
    composed = yaml.safe_load(orders.yaml_text())
    assert composed["measures"][0]["name"] == "order_count"
    assert records["subscriptions"].yaml_text() == STANDALONE  # standalone read back verbatim


def test_documents_for_sources_measures_dimensions_and_enum_values(make_project):
    root = make_project(
        {
            "semantic-layer/warehouse/_schema/public.yaml": SHARD,
            "semantic-layer/warehouse/orders.yaml": OVERLAY,
            "semantic-layer/warehouse/subscriptions.yaml": STANDALONE,
        }
    )
    read = read_project(load_project(root))
    by_uid = {d.uid: d for d in read.documents}
    source = by_uid["sl_source:warehouse:subscriptions"]
    assert source.description == "One row per subscription" and source.display == "analytics.subscriptions"
    assert source.tags == ["finance"] and source.attrs["frequencyTier"] == "high"
    assert source.table_ref.db == "analytics"
    measure = by_uid["sl_measure:warehouse:orders.order_count"]
    assert measure.summary == "Number of paid orders" and measure.expr == "count(*)"
    assert by_uid["sl_measure:warehouse:subscriptions.active_subscriptions"].expr == "count(*) where status = 'active'"
    dim = by_uid["sl_dimension:warehouse:orders.status"]
    assert dim.description == "Lifecycle status of the order" and dim.column_name == "status"
    assert by_uid["sl_dimension:warehouse:subscriptions.plan"].sample_values == ["basic", "family_4"]
    values = sorted(d.id for d in read.documents if d.kind == "dictionary_value")
    assert values == ["basic", "family_4"]
    assert "sl_dimension:warehouse:orders.legacy_flag" not in by_uid


def test_overlay_without_base_and_broken_files_are_reported(make_project):
    root = make_project(
        {
            "semantic-layer/warehouse/_schema/public.yaml": SHARD,
            "semantic-layer/warehouse/ghost.yaml": "name: ghost\nmeasures: []\n",
            "semantic-layer/warehouse/broken.yaml": "name: SIGNED_UP\ncolumns: [unterminated\n",
            "semantic-layer/warehouse/_schema/bad.yaml": "tables: [1, 2",
            "semantic-layer/warehouse/subscriptions.yaml": STANDALONE,
        }
    )
    project = load_project(root)
    records, diagnostics = load_records(project, "warehouse")
    reasons = {d.path.rsplit("/", 1)[1]: d.message for d in diagnostics}
    assert "no base source" in reasons["ghost.yaml"]
    assert "invalid YAML" in reasons["broken.yaml"] and "invalid YAML" in reasons["bad.yaml"]
    assert records["SIGNED_UP"].origin == "broken" and "[unterminated" in records["SIGNED_UP"].yaml_text()
    read = read_project(project)
    kinds = {d.uid for d in read.documents if d.kind == "sl_source"}
    assert kinds == {"sl_source:warehouse:orders", "sl_source:warehouse:customers", "sl_source:warehouse:subscriptions"}


def test_compose_reports_unknown_override_targets():
    base = {"name": "t", "columns": [{"name": "a"}], "joins": [{"to": "x", "on": "t.a = x.a"}]}
    out, problems = compose_overlay(
        base,
        {"name": "t", "column_overrides": [{"name": "zz"}], "joins": [{"to": "x", "on": "T.A  =  X.A"}], "bogus": 1},
    )
    assert len(out["joins"]) == 1
    assert any("zz" in p for p in problems) and any("bogus" in p for p in problems)


def test_folder_without_ktx_yaml_entry_is_indexed(make_project):
    root = make_project({"semantic-layer/finance/subscriptions.yaml": STANDALONE})
    project = load_project(root)
    assert project.connections["finance"].declared is False
    assert project.connections["warehouse"].declared is True  # declared but empty is fine
    assert any(d.connection_id == "finance" for d in read_project(project).documents)


def test_yaml_booleans_follow_yaml_1_2_as_ktx_reads_them():
    # under YAML 1.1 a join's `on:` key became True and its condition was lost
    from indexers.files import parse_yaml

    data = parse_yaml("joins:\n  - {to: customers, on: orders.customer_id = customers.id}\nflag: yes\nok: true\n")
    assert data == {
        "joins": [{"to": "customers", "on": "orders.customer_id = customers.id"}],
        "flag": "yes",
        "ok": True,
    }
