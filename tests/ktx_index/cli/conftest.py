"""The small project the CLI tests run commands against (a wiki page and a semantic-layer source, no embeddings)."""

import pytest

CONFIG = "connections:\n  warehouse:\n    driver: postgres\nindex:\n  embeddings: false\n"
FILES = {
    "wiki/global/revenue.md": "---\nsummary: Revenue definition\ntags: [finance]\n---\n# Revenue\n\nRevenue is net of refunds.\n",
    "semantic-layer/warehouse/orders.yaml": (
        "name: orders\ntable: public.orders\ndescriptions: {user: Customer orders}\n"
        "columns:\n  - {name: status, type: string, enum_values: {dbt: [paid, refunded]}}\n"
        "measures:\n  - {name: order_count, expr: count(*), description: Number of orders}\n"
    ),
}


@pytest.fixture
def project(make_project):
    return make_project(FILES, config=CONFIG)
