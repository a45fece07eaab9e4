"""Synthetic KTX project of N warehouse columns, for scale benchmarks.

    python tests/benchmarks/synth.py --columns 100000 --out /tmp/ktx-scale/100000 [--seed 7]

Writes what a ktx scan plus a little human curation leaves on disk (layout as in
tests/benchmarks/corpora/README.md and the reference §1.3-1.5):

- ``ktx.yaml`` with 1-3 warehouse connections (postgres / snowflake);
- per connection one scan snapshot ``raw-sources/<conn>/live-database/<syncId>/`` with
  ``connection.json``, ``scan-report.json``, ``foreign-keys.json``, ``warnings.json`` and one
  ``tables/<b64(catalog|_)>.<b64(db|_)>.<b64(name)>.json`` per table (~25 columns with
  business names, ~60 % of tables and columns commented);
- ``enrichment/relationship-profile.json`` profiling ~30 % of the tables (row counts, null
  rates, distinct counts, the 5 most frequent values as strings);
- ``semantic-layer/<conn>/_schema/<shard>.yaml`` manifest shards covering every table
  (``ai`` descriptions), overlays and standalone sources with measures for ~5 % of tables;
- ``wiki/global/*.md`` metric pages (~1 per 200 tables, at least 5) that name tables.

The same seed and N give byte-identical files. Files are written as they are generated
(profiles, shards and the foreign-key index stream through temporary files), so memory
stays flat even at 1M columns (~40k table files).
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import random
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

SYNTH_VERSION = 1
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

# --------------------------------------------------------------------------- vocabularies

#: schema → (weight, entities). An entity is (singular, plural).
SCHEMAS: dict[str, tuple[int, list[tuple[str, str]]]] = {
    "sales": (14, [("customer", "customers"), ("order", "orders"), ("order_line", "order_lines"),
                   ("quote", "quotes"), ("opportunity", "opportunities"), ("account", "accounts"),
                   ("contract", "contracts"), ("sales_rep", "sales_reps"), ("territory", "territories"),
                   ("lead", "leads"), ("renewal", "renewals")]),
    "finance": (12, [("invoice", "invoices"), ("payment", "payments"), ("refund", "refunds"),
                     ("ledger_entry", "ledger_entries"), ("journal", "journals"), ("budget", "budgets"),
                     ("expense", "expenses"), ("fx_rate", "fx_rates"), ("revenue_schedule", "revenue_schedules"),
                     ("cost_center", "cost_centers"), ("credit_note", "credit_notes")]),
    "ops": (12, [("shipment", "shipments"), ("warehouse", "warehouses"), ("carrier", "carriers"),
                 ("delivery", "deliveries"), ("route", "routes"), ("inventory_item", "inventory_items"),
                 ("stock_movement", "stock_movements"), ("purchase_order", "purchase_orders"),
                 ("supplier", "suppliers"), ("fulfillment", "fulfillments"), ("return", "returns")]),
    "marketing": (10, [("campaign", "campaigns"), ("ad_spend", "ad_spend"), ("email_send", "email_sends"),
                       ("web_session", "web_sessions"), ("promo_code", "promo_codes"),
                       ("attribution_touch", "attribution_touches"), ("audience_segment", "audience_segments"),
                       ("landing_page", "landing_pages"), ("signup", "signups"), ("referral", "referrals")]),
    "hr": (6, [("employee", "employees"), ("department", "departments"), ("payroll_run", "payroll_runs"),
               ("position", "positions"), ("timesheet", "timesheets"), ("leave_request", "leave_requests"),
               ("candidate", "candidates"), ("performance_review", "performance_reviews")]),
    "product": (10, [("product", "products"), ("sku", "skus"), ("feature_flag", "feature_flags"),
                     ("release", "releases"), ("subscription", "subscriptions"), ("plan", "plans"),
                     ("usage_event", "usage_events"), ("experiment", "experiments"), ("workspace", "workspaces")]),
    "support": (8, [("ticket", "tickets"), ("agent", "agents"), ("csat_survey", "csat_surveys"),
                    ("sla_policy", "sla_policies"), ("chat_session", "chat_sessions"),
                    ("escalation", "escalations"), ("knowledge_article", "knowledge_articles")]),
    "risk": (5, [("fraud_alert", "fraud_alerts"), ("chargeback", "chargebacks"), ("kyc_check", "kyc_checks"),
                 ("dispute", "disputes"), ("risk_score", "risk_scores")]),
    "billing": (8, [("billing_account", "billing_accounts"), ("usage_record", "usage_records"),
                    ("price", "prices"), ("discount", "discounts"), ("tax_rate", "tax_rates"),
                    ("dunning_attempt", "dunning_attempts")]),
    "analytics": (9, [("customer", "customers"), ("revenue", "revenue"), ("cohort", "cohorts"),
                      ("funnel_step", "funnel_steps"), ("churn_event", "churn_events"), ("kpi", "kpis"),
                      ("retention", "retention")]),
}  # fmt: skip

SOURCES = ["stripe", "salesforce", "hubspot", "netsuite", "zendesk", "shopify", "workday", "segment", "braze"]
QUALIFIERS = ["history", "snapshot", "daily", "weekly", "monthly", "events", "audit", "summary", "latest",
              "by_region", "by_channel", "enriched"]  # fmt: skip
VARIANT_SUFFIXES = ["emea", "apac", "amer", "latam", "v2", "legacy", "archive", "backup_2023", "tmp", "old", "eu",
                    "us", "test", "v3", "staging_copy", "2022", "2024", "restated"]  # fmt: skip

VALUES: dict[str, list[str]] = {
    "order_status": ["pending", "paid", "shipped", "delivered", "cancelled", "returned", "on_hold"],
    "ticket_status": ["open", "pending", "solved", "closed", "escalated"],
    "subscription_status": ["active", "trialing", "past_due", "cancelled", "paused"],
    "shipment_status": ["label_created", "in_transit", "out_for_delivery", "delivered", "exception", "returned"],
    "invoice_status": ["draft", "open", "paid", "void", "uncollectible"],
    "employee_status": ["active", "on_leave", "terminated", "pending_start"],
    "generic_status": ["active", "inactive", "archived", "pending_review"],
    "tier": ["free", "starter", "growth", "pro", "enterprise"],
    "loyalty_tier": ["bronze", "silver", "gold", "platinum"],
    "country": ["US", "CA", "GB", "DE", "FR", "NL", "ES", "IT", "AU", "BR", "MX", "JP", "IN", "SG", "SE"],
    "channel": ["organic_search", "paid_search", "paid_social", "email", "referral", "direct", "affiliate",
                "partner", "display"],
    "region": ["north_america", "emea", "apac", "latam"],
    "segment": ["smb", "mid_market", "enterprise", "consumer", "public_sector"],
    "currency": ["USD", "EUR", "GBP", "CAD", "AUD", "JPY"],
    "carrier": ["UPS", "FEDEX", "DHL", "USPS", "ONTRAC", "LASERSHIP"],
    "payment_method": ["card", "ach", "wire", "paypal", "apple_pay", "invoice"],
    "reason": ["damaged_item", "late_delivery", "wrong_item", "not_as_described", "duplicate_charge", "goodwill",
               "fraud"],
    "priority": ["low", "normal", "high", "urgent"],
    "plan": ["basic_monthly", "basic_annual", "pro_monthly", "pro_annual", "enterprise_annual"],
    "device": ["desktop", "mobile_web", "ios_app", "android_app", "tablet"],
    "industry": ["retail", "healthcare", "financial_services", "manufacturing", "education", "media", "logistics",
                 "software"],
    "stage": ["prospecting", "qualification", "proposal", "negotiation", "closed_won", "closed_lost"],
    "language": ["en", "fr", "de", "es", "pt", "ja"],
    "source_system": SOURCES,
    "category": ["apparel", "footwear", "accessories", "home", "electronics", "beauty", "grocery"],
    "expense_category": ["travel", "meals", "software", "hardware", "contractors", "marketing", "office"],
    "department": ["engineering", "sales", "marketing", "finance", "operations", "people", "support"],
    "record_type": ["standard", "internal", "partner", "reseller", "test"],
}  # fmt: skip

#: Status value set by entity (else generic_status).
STATUS_OF = {"order": "order_status", "order_line": "order_status", "ticket": "ticket_status",
             "escalation": "ticket_status", "subscription": "subscription_status", "shipment": "shipment_status",
             "delivery": "shipment_status", "fulfillment": "shipment_status", "invoice": "invoice_status",
             "payment": "invoice_status", "employee": "employee_status", "opportunity": "stage"}  # fmt: skip


@dataclass(frozen=True)
class Attr:
    suffix: str
    kind: str  # category | text | money | amount | count | time | date | bool
    label: str
    values: str | None = None
    comment: str | None = None  # a specific comment template beside the generic ones


ATTRS: list[Attr] = [
    Attr("status", "category", "status", "*status", "Current {s} status: {v}."),
    Attr("tier", "category", "pricing tier", "tier", "Pricing tier of the {s} at the time of the event ({v})."),
    Attr("loyalty_tier", "category", "loyalty tier", "loyalty_tier"),
    Attr("country_code", "category", "country", "country", "ISO 3166-1 alpha-2 country of the {s}, e.g. {v}."),
    Attr("billing_country", "category", "billing country", "country"),
    Attr("channel", "category", "acquisition channel", "channel",
         "Marketing channel that acquired the {s} (last non-direct touch): {v}."),
    Attr("region", "category", "sales region", "region"),
    Attr("segment", "category", "customer segment", "segment", "Go-to-market segment of the {s}: {v}."),
    Attr("currency_code", "category", "currency", "currency", "ISO 4217 currency of the {s} amounts ({v})."),
    Attr("carrier_code", "category", "carrier", "carrier", "Shipping carrier that handled the {s} ({v})."),
    Attr("payment_method", "category", "payment method", "payment_method"),
    Attr("reason_code", "category", "reason", "reason", "Why the {s} happened, from the policy list: {v}."),
    Attr("priority", "category", "priority", "priority"),
    Attr("plan_name", "category", "subscription plan", "plan"),
    Attr("device_type", "category", "device type", "device"),
    Attr("industry", "category", "industry", "industry"),
    Attr("stage", "category", "pipeline stage", "stage"),
    Attr("language_code", "category", "preferred language", "language"),
    Attr("source_system", "category", "source system", "source_system",
         "System of record the {s} was loaded from ({v})."),
    Attr("category", "category", "category", "category"),
    Attr("expense_category", "category", "expense category", "expense_category"),
    Attr("department", "category", "owning department", "department"),
    Attr("record_type", "category", "record type", "record_type"),
    Attr("name", "text", "display name"),
    Attr("email", "text", "contact email", None, "Primary contact email of the {s}; PII, masked outside prod."),
    Attr("city", "text", "city"),
    Attr("postal_code", "text", "postal code"),
    Attr("external_ref", "text", "external reference", None, "Identifier of the {s} in the upstream system."),
    Attr("notes", "text", "free-text notes"),
    Attr("description", "text", "description"),
    Attr("amount_usd", "money", "amount in USD"),
    Attr("revenue_usd", "money", "revenue in USD",
         comment="Recognised {s} revenue in USD, net of discounts, before refunds."),
    Attr("net_revenue_usd", "money", "net revenue in USD",
         comment="Gross revenue minus discounts, refunds and credits, in USD."),
    Attr("gross_amount", "money", "gross amount", comment="Before discounts and tax, in the {s} currency."),
    Attr("cost_usd", "money", "cost in USD"),
    Attr("lifetime_value_usd", "money", "lifetime value in USD",
         comment="Predicted lifetime value of the {s} in USD, net of refunds (model v3)."),
    Attr("arr_usd", "money", "annual recurring revenue in USD",
         comment="Annual recurring revenue of the {s} at month end, in USD."),
    Attr("mrr_usd", "money", "monthly recurring revenue in USD"),
    Attr("discount_amount", "money", "discount amount"),
    Attr("tax_amount", "money", "tax amount", comment="Sales tax charged on the {s}; excluded from revenue."),
    Attr("unit_price", "money", "unit price"),
    Attr("balance_usd", "money", "outstanding balance in USD"),
    Attr("margin_pct", "amount", "gross margin percentage"),
    Attr("discount_rate", "amount", "discount rate"),
    Attr("weight_kg", "amount", "weight in kilograms"),
    Attr("fx_rate", "amount", "exchange rate to USD", comment="Daily rate used to convert the {s} amounts to USD."),
    Attr("score", "amount", "health score", comment="0-100 health score of the {s}; below 40 is at risk."),
    Attr("conversion_rate", "amount", "conversion rate"),
    Attr("quantity", "count", "quantity"),
    Attr("item_count", "count", "number of items"),
    Attr("days_to_close", "count", "days to close", comment="Calendar days from creation to close of the {s}."),
    Attr("attempt_count", "count", "delivery attempts"),
    Attr("seat_count", "count", "licensed seats"),
    Attr("page_views", "count", "page views"),
    Attr("session_count", "count", "sessions"),
    Attr("tenure_months", "count", "tenure in months"),
    Attr("open_tickets", "count", "open support tickets"),
    Attr("created_at", "time", "created", comment="When the {s} record was created (UTC)."),
    Attr("updated_at", "time", "last updated", comment="Last modification of the {s} row; used for incremental loads."),
    Attr("closed_at", "time", "closed"),
    Attr("shipped_at", "time", "shipped"),
    Attr("delivered_at", "time", "delivered"),
    Attr("cancelled_at", "time", "cancelled", comment="When the {s} was cancelled; null while active."),
    Attr("signed_at", "time", "signed"),
    Attr("paid_at", "time", "paid"),
    Attr("first_seen_at", "time", "first seen"),
    Attr("due_date", "date", "due date"),
    Attr("start_date", "date", "start date"),
    Attr("end_date", "date", "end date"),
    Attr("snapshot_date", "date", "snapshot date", comment="Business date of the snapshot (one row per {s} per day)."),
    Attr("is_active", "bool", "is active"),
    Attr("is_deleted", "bool", "is soft-deleted", comment="Soft-delete flag; filter it out in every report."),
    Attr("is_test", "bool", "is a test record", comment="True for internal and QA {s} records; exclude from metrics."),
    Attr("has_discount", "bool", "has a discount applied"),
    Attr("is_first_order", "bool", "is the customer's first order"),
    Attr("is_refunded", "bool", "was refunded"),
    Attr("is_late", "bool", "missed its SLA"),
    Attr("is_churned", "bool", "has churned"),
]  # fmt: skip

TEMPLATES: dict[str, list[str]] = {
    "category": ["{L} of the {s}: {v}.", "{S} {l}; one of {v}.", "{L} ({v}). Set by the {src} sync."],
    "text": ["{L} of the {s} as entered in {src}.", "{S} {l}, free text.", "{L} of the {s}."],
    "money": ["{L} for the {s}, two decimals.", "{S} {l}, converted at the daily FX rate.",
              "{L}. Null until the {s} is finalised."],
    "amount": ["{L} of the {s}.", "{S} {l}, computed nightly.", "{L}; see the {schema} runbook for the formula."],
    "count": ["Number of {l} for the {s}.", "{S} {l} (integer, never negative).", "{L} counted at load time."],
    "time": ["When the {s} was {l} (UTC).", "Timestamp the {s} was {l}; null if it never was.",
             "{S} {l} time, UTC."],
    "date": ["{L} of the {s} (local business date).", "{S} {l}.", "{L}, inclusive."],
    "bool": ["True when the {s} {l}.", "Flag: the {s} {l}.", "Whether the {s} {l}."],
    "id": ["Identifier of the {s}.", "Primary key of the {s}, stable across reloads.", "Surrogate key of the {s}."],
    "fk": ["Foreign key to {target}.", "The {s} this row belongs to ({target}).", "Reference to {target}."],
}  # fmt: skip
AI_TEMPLATES: dict[str, list[str]] = {
    "category": ["The {l} associated with this {s}, with values such as {v}."],
    "text": ["The {l} recorded for the {s}."],
    "money": ["Monetary {l} of the {s}."],
    "amount": ["The {l} measured for the {s}."],
    "count": ["How many {l} the {s} has."],
    "time": ["Date and time at which the {s} was {l}."],
    "date": ["Calendar {l} of the {s}."],
    "bool": ["Indicates whether the {s} {l}."],
    "id": ["Unique identifier of each {s}."],
    "fk": ["Links the {s} to {target}."],
}
TABLE_TEMPLATES: dict[str, list[str]] = {
    "base": ["One row per {e}. Loaded hourly from {src}.", "{E} master data, one row per {e}.",
             "All {ep} known to {src}, including deleted ones (see is_deleted)."],
    "fct": ["Fact table of {e} events at line grain, loaded nightly from {src}.",
            "One row per {e} transaction; amounts in USD."],
    "dim": ["Type 2 dimension of {ep}: one row per {e} version.", "Current attributes of each {e}."],
    "stg": ["Staging model for {src} {ep}; renamed and typed, no business logic.",
            "Raw {src} {ep} after deduplication."],
    "int": ["Intermediate model: {ep} {q}.", "{E} {q}, joined to the latest reference data."],
    "mart": ["{E} metrics by {q} for the {schema} dashboards.", "Reporting mart of {ep} at {q} grain."],
    "qual": ["{E} {q}: one row per {e} per period.", "{Ep} {q} (append-only)."],
    "variant": ["Copy of {base} for {q}; do not use for reporting.", "{E} data, {q} version of {base}."],
}  # fmt: skip
AI_TABLE = [
    "Table of {ep} in the {schema} domain with {cols}.",
    "Contains one record per {e}, including {cols}.",
]
METRICS = [
    ("net-revenue", "Net revenue", ["revenue", "finance"], "net_revenue_usd"),
    ("gross-margin", "Gross margin", ["margin", "finance"], "margin_pct"),
    ("customer-churn-rate", "Customer churn rate", ["retention", "customers"], "is_churned"),
    ("customer-lifetime-value", "Customer lifetime value", ["ltv", "customers"], "lifetime_value_usd"),
    ("annual-recurring-revenue", "Annual recurring revenue (ARR)", ["arr", "saas"], "arr_usd"),
    ("on-time-delivery-rate", "On-time delivery rate", ["logistics", "sla"], "is_late"),
    ("refund-rate", "Refund rate", ["refunds", "finance"], "is_refunded"),
    ("conversion-rate", "Funnel conversion rate", ["funnel", "marketing"], "conversion_rate"),
    ("average-order-value", "Average order value", ["orders", "sales"], "amount_usd"),
    ("ticket-resolution-time", "Ticket resolution time", ["support", "sla"], "days_to_close"),
    ("customer-acquisition-cost", "Customer acquisition cost", ["marketing", "cac"], "cost_usd"),
    ("inventory-turnover", "Inventory turnover", ["inventory", "ops"], "quantity"),
    ("headcount", "Headcount and attrition", ["hr", "people"], "is_active"),
    ("monthly-active-workspaces", "Monthly active workspaces", ["product", "engagement"], "session_count"),
    ("fraud-loss-rate", "Fraud loss rate", ["risk", "finance"], "amount_usd"),
    ("days-sales-outstanding", "Days sales outstanding (DSO)", ["finance", "billing"], "balance_usd"),
]
DRIVERS = [("warehouse", "postgres"), ("snowflake-prod", "snowflake"), ("legacy-pg", "postgres")]
CONN_WEIGHTS = [0.45, 0.35, 0.20]
BASE_TIME = dt.datetime(2026, 5, 6, 9, 30, tzinfo=dt.UTC)


# --------------------------------------------------------------------------- helpers


def b64(text: str | None) -> str:
    return base64.urlsafe_b64encode((text or "_").encode()).decode().rstrip("=")


def base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out or "0"


def human(identifier: str) -> str:
    return identifier.replace("_", " ").lower()


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def dumps(value: Any) -> str:
    """JSON.stringify(value, null, 2) + newline, as the ktx CLI writes."""
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def fill(template: str, **kw: str) -> str:
    upper = {k[0].upper() + k[1:]: cap(v) for k, v in kw.items()}
    return template.format(**kw, **upper)


class JsonStream:
    """A JSON object or array written entry by entry to a temporary file, spliced in at the end."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path = path
        self.kind = kind
        self.fh: TextIO = path.open("w", encoding="utf-8")
        self.count = 0

    def add(self, value: Any, key: str | None = None) -> None:
        text = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n    ")
        prefix = "" if self.count == 0 else ",\n"
        head = f"    {json.dumps(key, ensure_ascii=False)}: " if key is not None else "    "
        self.fh.write(prefix + head + text)
        self.count += 1

    def splice(self, out: TextIO) -> None:
        """Write the collected entries as a value nested at depth 1 (two-space indent)."""
        self.fh.close()
        opening, closing = ("{", "}") if self.kind == "object" else ("[", "]")
        if self.count == 0:
            out.write(opening + closing)
        else:
            out.write(opening + "\n")
            with self.path.open(encoding="utf-8") as fh:
                shutil.copyfileobj(fh, out)
            out.write("\n  " + closing)
        self.path.unlink()


# --------------------------------------------------------------------------- planning


@dataclass
class TablePlan:
    conn: str
    schema: str
    name: str  # raw name (lower case; upper-cased for snowflake when written)
    entity: tuple[str, str]
    variant: str  # base | fct | dim | stg | int | mart | qual | variant
    qualifier: str = ""
    base: str = ""
    columns: int = 25


@dataclass
class ConnPlan:
    id: str
    driver: str
    tables: list[TablePlan] = field(default_factory=list)

    @property
    def upper(self) -> bool:
        return self.driver == "snowflake"

    @property
    def catalog(self) -> str | None:
        return "ANALYTICS" if self.upper else None


def name_candidates(schema: str, rnd: random.Random) -> list[tuple[str, tuple[str, str], str, str, str]]:
    """Every table name one schema can hold: clean names first, then noisier variants."""
    entities = SCHEMAS[schema][1]
    tiers: list[list[tuple[str, tuple[str, str], str, str, str]]] = [[], [], []]
    for ent in entities:
        single, plural = ent
        tiers[0].append((plural, ent, "base", "", ""))
        tiers[0].append((f"fct_{plural}", ent, "fct", "", ""))
        tiers[0].append((f"dim_{single}", ent, "dim", "", ""))
        for src in SOURCES:
            tiers[1].append((f"stg_{src}__{plural}", ent, "stg", src, ""))
        for q in QUALIFIERS:
            tiers[1].append((f"{single}_{q}", ent, "qual", q, ""))
            tiers[1].append((f"int_{plural}_{q}", ent, "int", q, ""))
        for grain in ("daily", "weekly", "monthly", "by_region"):
            tiers[1].append((f"mart_{single}_{grain}", ent, "mart", grain, ""))
    for tier in tiers[:2]:
        rnd.shuffle(tier)
    for suffix in VARIANT_SUFFIXES:
        for name, ent, _variant, _q, _b in tiers[0] + tiers[1]:
            tiers[2].append((f"{name}_{suffix}", ent, "variant", suffix, name))
    rnd.shuffle(tiers[2])
    return tiers[0] + tiers[1] + tiers[2]


def plan(columns: int, seed: int) -> list[ConnPlan]:
    rnd = random.Random(f"{seed}:plan")
    sizes: list[int] = []
    total = 0
    while total < columns:
        size = max(8, min(48, int(rnd.triangular(10, 42, 24))))
        size = min(size, columns - total)
        if size < 3 and sizes:
            sizes[-1] += size
        else:
            sizes.append(size)
        total += size
    n_conn = 1 if columns < 2_000 else 2 if columns < 50_000 else 3
    conns = [ConnPlan(cid, driver) for cid, driver in DRIVERS[:n_conn]]
    weights = CONN_WEIGHTS[:n_conn]
    schema_names = list(SCHEMAS)
    schema_weights = [SCHEMAS[s][0] for s in schema_names]
    candidates = {(c.id, s): name_candidates(s, random.Random(f"{seed}:{c.id}:{s}")) for c in conns for s in SCHEMAS}
    cursor: dict[tuple[str, str], int] = {}
    used: dict[str, set[str]] = {c.id: set() for c in conns}
    for size in sizes:
        conn = rnd.choices(conns, weights)[0]
        schema = rnd.choices(schema_names, schema_weights)[0]
        key = (conn.id, schema)
        pool = candidates[key]
        while True:
            i = cursor.get(key, 0)
            cursor[key] = i + 1
            if i < len(pool):
                name, ent, variant, qual, base = pool[i]
            else:  # beyond the vocabulary: numbered copies
                name, ent, variant, qual, base = pool[i % len(pool)]
                qual = f"{qual}_{i // len(pool)}".strip("_")
                name, variant, base = f"{name}_{i // len(pool)}", "variant", name
            if name not in used[conn.id]:
                break
        used[conn.id].add(name)
        conn.tables.append(TablePlan(conn.id, schema, name, ent, variant, qual, base, size))
    return conns


# --------------------------------------------------------------------------- one table


@dataclass
class Column:
    name: str
    kind: str
    attr: Attr | None
    subject: str
    comment: str | None
    ai: str | None
    values: list[str] | None = None
    pk: bool = False
    nullable: bool = True
    target: tuple[str, str] | None = None  # (schema, table) for foreign keys


def native_type(kind: str, driver: str, rnd: random.Random) -> str:
    if driver == "snowflake":
        return {
            "id": "VARCHAR(36)", "fk": "VARCHAR(36)", "category": "VARCHAR(64)", "text": "VARCHAR(16777216)",
            "money": "NUMBER(18,2)", "amount": "FLOAT", "count": "NUMBER(38,0)", "time": "TIMESTAMP_NTZ(9)",
            "date": "DATE", "bool": "BOOLEAN",
        }[kind]  # fmt: skip
    if kind in ("id", "fk"):
        return rnd.choice(["bigint", "character varying(32)", "uuid"])
    return {
        "category": rnd.choice(["text", "character varying(50)"]), "text": "text", "money": "numeric(18,2)",
        "amount": "numeric(10,4)", "count": "integer", "time": "timestamp with time zone", "date": "date",
        "bool": "boolean",
    }[kind]  # fmt: skip


def dimension(kind: str) -> str:
    return {"money": "number", "amount": "number", "count": "number", "time": "time", "date": "time",
            "bool": "boolean"}.get(kind, "string")  # fmt: skip


def value_set(attr: Attr, entity: str) -> list[str] | None:
    if attr.values is None:
        return None
    key = STATUS_OF.get(entity, "generic_status") if attr.values == "*status" else attr.values
    return VALUES[key]


def make_columns(t: TablePlan, rnd: random.Random, documented: bool, siblings: list[tuple[str, str]]) -> list[Column]:
    single = t.entity[0]
    subject = human(single)
    src = rnd.choice(SOURCES)
    rate = 0.8 if documented else 0.35
    cols: list[Column] = []
    used: set[str] = set()

    def add(col: Column) -> None:
        used.add(col.name)
        cols.append(col)

    def text_for(kind: str, label: str, values: list[str] | None, specific: str | None, target: str = "") -> tuple:
        v = ", ".join(values[:6]) if values else ""
        kw = {"s": subject, "l": label, "v": v, "src": src, "schema": t.schema, "target": target}
        comment = None
        if rnd.random() < rate:
            pool = TEMPLATES[kind] + ([specific] * 2 if specific else [])
            comment = fill(rnd.choice(pool), **kw)
        ai = fill(rnd.choice(AI_TEMPLATES[kind]), **kw) if rnd.random() < 0.7 else None
        return comment, ai

    pk = f"{single}_id"
    add(Column(pk, "id", None, subject, *text_for("id", "identifier", None, None), pk=True, nullable=False))
    for other in rnd.sample(siblings, min(len(siblings), rnd.randint(1, 3))):
        name = f"{other[1]}_id"
        if name in used:
            continue
        target = f"{t.schema}.{other[0]}"
        add(Column(name, "fk", None, subject, *text_for("fk", "reference", None, None, target), target=other))
    while len(cols) < t.columns:
        attr = rnd.choice(ATTRS)
        prefix = rnd.random()
        if prefix < 0.4:
            name, subj = attr.suffix, subject
        elif prefix < 0.8:
            name, subj = f"{single}_{attr.suffix}", subject
        else:
            other = rnd.choice(SCHEMAS[t.schema][1])[0]
            name, subj = f"{other}_{attr.suffix}", human(other)
        if name in used:
            name = f"{name}_{rnd.choice(['2', 'prev', 'orig', 'local', 'usd', 'adj'])}"
            if name in used:
                continue
        values = value_set(attr, single)
        comment, ai = text_for(attr.kind, attr.label, values, attr.comment)
        if subj != subject:
            comment = comment and comment.replace(subject, subj)
            ai = ai and ai.replace(subject, subj)
        add(Column(name, attr.kind, attr, subj, comment, ai, values, nullable=rnd.random() < 0.7))
    return cols[: t.columns]


def table_comment(t: TablePlan, rnd: random.Random) -> str:
    single, plural = t.entity
    src = t.qualifier if t.variant == "stg" else rnd.choice(SOURCES)
    kw = {"e": human(single), "ep": human(plural), "src": src, "q": human(t.qualifier),
          "schema": t.schema, "base": t.base}  # fmt: skip
    return fill(rnd.choice(TABLE_TEMPLATES[t.variant]), **kw)


COMPANIES = ["Acme Corp", "Globex", "Initech", "Umbrella Health", "Stark Logistics", "Wayne Retail", "Hooli",
             "Vandelay Imports", "Soylent Foods", "Tyrell Systems", "Cyberdyne", "Wonka Confections"]  # fmt: skip
CITIES = ["Austin", "Berlin", "Lyon", "Madrid", "Osaka", "Toronto", "Leeds", "Denver", "Porto", "Utrecht"]
NOTES = ["called twice, escalated to tier 2", "customer asked for an invoice copy", "migrated from legacy CRM",
         "duplicate of an older record", "address verified by phone"]  # fmt: skip


def sample_values(col: Column, native: str, rnd: random.Random, rows: int) -> tuple[list[str], int]:
    """(top-5 values as strings, distinct count) as a profile would report them."""
    kind = col.kind
    if col.values:
        vals = rnd.sample(col.values, min(5, len(col.values)))
        return sorted(vals), len(col.values)
    if kind in ("id", "fk"):
        distinct = rows if kind == "id" else max(1, rows // 7)
        start = rnd.randint(1, 900_000)
        if "int" in native.lower():
            return sorted(str(start + i) for i in range(5)), distinct
        if native == "uuid":
            return sorted(f"{rnd.getrandbits(128):032x}" for _ in range(5)), distinct
        return [f"{col.name.split('_')[0][:3].lower()}_{start + i:07d}" for i in range(5)], distinct
    if kind == "text":
        suffix = col.attr.suffix if col.attr else ""
        pool = {
            "name": COMPANIES,
            "city": CITIES,
            "notes": NOTES,
            "description": NOTES,
            "email": [f"ops+{i}@{c.split()[0].lower()}.example.com" for i, c in enumerate(COMPANIES)],
            "postal_code": ["94107", "10001", "75008", "10115", "M5V 2T6", "LS1 4AP", "80202"],
            "external_ref": [f"SF-{rnd.randint(10_000, 99_999)}" for _ in range(6)],
        }.get(suffix, COMPANIES)
        return sorted(rnd.sample(pool, min(5, len(pool)))), max(1, rows // (3 if suffix != "city" else 40))
    if kind in ("money", "amount"):
        return sorted(f"{rnd.uniform(1, 900):.2f}" for _ in range(5)), max(1, rows // 3)
    if kind == "count":
        return sorted(str(rnd.randint(0, 40)) for _ in range(5)), 41
    if kind == "time":
        day = BASE_TIME - dt.timedelta(days=rnd.randint(1, 700))
        return [(day + dt.timedelta(hours=h)).strftime("%Y-%m-%d %H:00:00+00") for h in range(5)], max(1, rows // 2)
    if kind == "date":
        day = BASE_TIME.date() - dt.timedelta(days=rnd.randint(1, 700))
        return [(day + dt.timedelta(days=d)).isoformat() for d in range(5)], 730
    return ["false", "true"], 2


# --------------------------------------------------------------------------- writer


class ProjectWriter:
    def __init__(self, out: Path, seed: int, columns: int) -> None:
        self.out = out
        self.seed = seed
        self.columns = columns
        self.counts: dict[str, int] = {}
        self.bytes = 0
        self.files = 0
        self.wiki_pool: dict[str, list[tuple[str, str, str, list[str]]]] = {}  # metric → (conn, schema, table, cols)
        self.sl_sources: list[str] = []

    def bump(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def write(self, rel: str, text: str) -> None:
        path = self.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        path.write_bytes(data)
        self.bytes += len(data)
        self.files += 1

    def run(self) -> None:
        if self.out.exists():
            shutil.rmtree(self.out)
        self.out.mkdir(parents=True)
        conns = plan(self.columns, self.seed)
        self.write("ktx.yaml", self.ktx_yaml(conns))
        for index, conn in enumerate(conns):
            self.connection(conn, index)
        self.wiki(conns)
        self.write(
            ".synth.json",
            dumps({"synthVersion": SYNTH_VERSION, "seed": self.seed, "columns": self.columns, "counts": self.counts}),
        )

    def ktx_yaml(self, conns: list[ConnPlan]) -> str:
        connections: dict[str, Any] = {}
        for c in conns:
            schemas = sorted({t.schema for t in c.tables})
            if c.driver == "snowflake":
                connections[c.id] = {
                    "driver": "snowflake", "account": "env:SNOWFLAKE_ACCOUNT", "user": "env:SNOWFLAKE_USER",
                    "password": "env:SNOWFLAKE_PASSWORD", "warehouse": "REPORTING_WH", "database": "ANALYTICS",
                    "schemas": [s.upper() for s in schemas],
                }  # fmt: skip
            else:
                env = c.id.upper().replace("-", "_")
                connections[c.id] = {"driver": "postgres", "url": f"env:{env}_URL", "schemas": schemas}
        config = {
            "connections": connections,
            "storage": {"state": "sqlite", "search": "sqlite-fts5"},
            "ingest": {"adapters": ["live-database"], "embeddings": {"backend": "none", "dimensions": 8}},
        }
        return yaml.dump(config, Dumper=DUMPER, sort_keys=False)

    # ------------------------------------------------------------------ one connection

    def connection(self, conn: ConnPlan, index: int) -> None:
        when = BASE_TIME + dt.timedelta(minutes=7 * index)
        job = f"local-{base36(int(when.timestamp() * 1000))}"
        sync = f"{when.strftime('%Y-%m-%d-%H%M%S')}-{job}"
        base = f"raw-sources/{conn.id}/live-database/{sync}"
        tmp = self.out / ".synth-tmp"
        tmp.mkdir(exist_ok=True)
        profile_cols = JsonStream(tmp / f"{conn.id}.profile-columns", "object")
        profile_tables = JsonStream(tmp / f"{conn.id}.profile-tables", "array")
        fks = JsonStream(tmp / f"{conn.id}.fks", "array")
        shards: dict[str, TextIO] = {}
        shard_dir = self.out / "semantic-layer" / conn.id / "_schema"
        shard_dir.mkdir(parents=True, exist_ok=True)
        up = str.upper if conn.upper else str
        by_schema_base: dict[str, list[tuple[str, str]]] = {}
        for t in conn.tables:
            if t.variant == "base":
                by_schema_base.setdefault(t.schema, []).append((t.name, t.entity[0]))
        total_cols = 0
        queries = 0
        for i, t in enumerate(conn.tables):
            rnd = random.Random(f"{self.seed}:{conn.id}:{i}:{t.name}")
            documented = rnd.random() < 0.6
            siblings = [s for s in by_schema_base.get(t.schema, []) if s[1] != t.entity[0]]
            cols = make_columns(t, rnd, documented, siblings)
            comment = table_comment(t, rnd) if documented else None
            catalog, db, name = conn.catalog, up(t.schema), up(t.name)
            kind = "view" if t.variant in ("fct", "dim", "int", "mart", "stg") else "table"
            est = None if kind == "view" else int(10 ** rnd.uniform(2, 7.5))
            rows = min(10_000, est or rnd.randint(500, 10_000))
            rel = f"tables/{b64(catalog)}.{b64(db)}.{b64(name)}.json"
            table_fks = []
            for c in cols:
                if c.target is not None and conn.driver == "postgres" and rnd.random() < 0.6:
                    fk = {"fromColumn": c.name, "toCatalog": None, "toDb": db, "toTable": up(c.target[0]),
                          "toColumn": f"{c.target[1]}_id", "constraintName": f"{t.name}_{c.name}_fkey"}  # fmt: skip
                    table_fks.append(fk)
                    fks.add({"fromTable": name, "fromTablePath": rel, **fk})
            record = {
                "catalog": catalog, "db": db, "name": name, "kind": kind, "comment": comment, "estimatedRows": est,
                "columns": [
                    {
                        "name": up(c.name), "nativeType": (nt := native_type(c.kind, conn.driver, rnd)),
                        "normalizedType": nt, "dimensionType": dimension(c.kind), "nullable": c.nullable,
                        "primaryKey": c.pk, "comment": c.comment,
                    }
                    for c in cols
                ],
                "foreignKeys": table_fks,
            }  # fmt: skip
            self.write(f"{base}/{rel}", dumps(record))
            self.bump("tables")
            self.bump("columns", len(cols))
            self.bump("commented tables", comment is not None)
            self.bump("commented columns", sum(c.comment is not None for c in cols))
            total_cols += len(cols)
            if rnd.random() < 0.3:
                self.profile(conn, record, cols, rows, rnd, profile_cols, profile_tables)
                queries += 1
            self.shard(conn, t, record, cols, rnd, shards, shard_dir)
            if rnd.random() < 0.05:
                self.curated(conn, t, record, cols, rnd)
            metric = next((m for m in METRICS if any(c.attr and c.attr.suffix == m[3] for c in cols)), None)
            if metric and len(self.wiki_pool.setdefault(metric[0], [])) < 40:
                self.wiki_pool[metric[0]].append((conn.id, db, name, [up(c.name) for c in cols[:8]]))
        for fh in shards.values():
            self.bytes += fh.tell()
            self.files += 1
            fh.close()
        self.bump("shards", len(shards))
        # profile: header, tables, columns, warnings — spliced from the streams
        rel_profile = f"{base}/enrichment/relationship-profile.json"
        path = self.out / rel_profile
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as fh:
            fh.write(
                "{\n"
                f'  "connectionId": {json.dumps(conn.id)},\n  "driver": {json.dumps(conn.driver)},\n'
                f'  "sqlAvailable": true,\n  "queryCount": {queries},\n  "tables": '
            )
            profile_tables.splice(fh)
            fh.write(',\n  "columns": ')
            profile_cols.splice(fh)
            fh.write(',\n  "warnings": []\n}\n')
            self.bytes += fh.tell()
        self.files += 1
        with (self.out / base / "foreign-keys.json").open("w", encoding="utf-8") as fh:
            fh.write('{\n  "foreignKeys": ')
            fks.splice(fh)
            fh.write("\n}\n")
            self.bytes += fh.tell()
        self.files += 1
        schemas = sorted({up(t.schema) for t in conn.tables})
        self.write(f"{base}/warnings.json", dumps({"warnings": []}))
        self.write(
            f"{base}/connection.json",
            dumps(
                {
                    "connectionId": conn.id, "driver": conn.driver,
                    "extractedAt": (when + dt.timedelta(seconds=1)).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                    "scope": {"schemas": schemas},
                    "metadata": {"database": conn.catalog or "warehouse", "schemas": schemas,
                                 "host": "localhost" if conn.driver == "postgres" else "acme.snowflakecomputing.com",
                                 "table_count": len(conn.tables), "total_columns": total_cols},
                    "tableCount": len(conn.tables),
                }
            ),
        )  # fmt: skip
        shard_paths = sorted(f"semantic-layer/{conn.id}/_schema/{p.name}" for p in shard_dir.iterdir())
        self.write(
            f"{base}/scan-report.json",
            dumps(
                {
                    "connectionId": conn.id, "driver": conn.driver, "syncId": sync, "runId": job, "trigger": "cli",
                    "mode": "relationships", "dryRun": False,
                    "artifactPaths": {"rawSourcesDir": base, "reportPath": f"{base}/scan-report.json",
                                      "manifestShards": shard_paths, "enrichmentArtifacts": [rel_profile]},
                    "diffSummary": {"tablesAdded": len(conn.tables), "tablesModified": 0, "tablesDeleted": 0,
                                    "tablesUnchanged": 0, "columnsAdded": total_cols, "columnsModified": 0,
                                    "columnsDeleted": 0},
                    "manifestShardsWritten": len(shard_paths),
                    "structuralSyncStats": {k: 0 for k in ("tablesCreated", "tablesUpdated", "tablesDeleted",
                                                           "columnsCreated", "columnsUpdated", "columnsDeleted")},
                    "enrichment": {"dataDictionary": "skipped", "tableDescriptions": "completed",
                                   "columnDescriptions": "completed", "embeddings": "skipped",
                                   "deterministicRelationships": "completed", "llmRelationshipValidation": "skipped",
                                   "statisticalValidation": "skipped"},
                    "capabilityGaps": [], "warnings": [],
                    "relationships": {"accepted": 0, "review": 0, "rejected": 0, "skipped": 0},
                    "enrichmentState": {"resumedStages": [], "completedStages": ["relationships"],
                                        "failedStages": []},
                    "createdAt": (when + dt.timedelta(seconds=41)).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                }
            ),
        )  # fmt: skip
        shutil.rmtree(tmp, ignore_errors=True)

    def profile(self, conn, record, cols, rows, rnd, profile_cols: JsonStream, profile_tables: JsonStream) -> None:
        ref = {"catalog": record["catalog"], "db": record["db"], "name": record["name"]}
        profile_tables.add({"table": ref, "rowCount": rows})
        self.bump("profiled tables")
        for c, raw in zip(cols, record["columns"], strict=True):
            samples, distinct = sample_values(c, raw["nativeType"], rnd, rows)
            distinct = min(distinct, rows)
            null_rate = 0.0 if not c.nullable else round(rnd.choice([0, 0, 0.01, 0.05, 0.2, 0.6]), 4)
            nulls = int(rows * null_rate)
            lengths = [len(s) for s in samples] or [0]
            entry = {
                "table": ref, "column": raw["name"], "nativeType": raw["nativeType"],
                "normalizedType": raw["normalizedType"], "rowCount": rows, "nullCount": nulls,
                "distinctCount": distinct, "uniquenessRatio": round(distinct / max(1, rows - nulls), 6),
                "nullRate": null_rate, "sampleValues": samples,
                "minTextLength": min(lengths), "maxTextLength": max(lengths),
            }  # fmt: skip
            profile_cols.add(entry, key=f"{record['name']}.{raw['name']}")
            self.bump("profiled columns")

    def shard(self, conn, t: TablePlan, record, cols, rnd, shards: dict[str, TextIO], shard_dir: Path) -> None:
        key = f"{record['catalog']}.{record['db']}" if conn.upper else record["db"]
        fh = shards.get(key)
        if fh is None:
            fh = shards[key] = (shard_dir / f"{key}.yaml").open("w", encoding="utf-8")
            fh.write("tables:\n")
        display = ".".join(p for p in (record["catalog"], record["db"], record["name"]) if p)
        columns = []
        for c, raw in zip(cols, record["columns"], strict=True):
            entry: dict[str, Any] = {"name": raw["name"], "type": raw["dimensionType"]}
            if c.pk:
                entry["pk"] = True
            if not c.nullable:
                entry["nullable"] = False
            desc = {k: v for k, v in (("db", c.comment), ("ai", c.ai)) if v}
            if desc:
                entry["descriptions"] = desc
            columns.append(entry)
        names = ", ".join(human(c.name) for c in cols[1:4])
        single, plural = t.entity
        ai = fill(rnd.choice(AI_TABLE), e=human(single), ep=human(plural), schema=t.schema, cols=names)
        body: dict[str, Any] = {"table": display, "columns": columns}
        body["descriptions"] = {"db": record["comment"], "ai": ai} if record["comment"] else {"ai": ai}
        joins = [
            {
                "to": fk["toTable"],
                "on": f"{record['name']}.{fk['fromColumn']} = {fk['toTable']}.{fk['toColumn']}",
                "relationship": "many_to_one",
                "source": "formal",
            }
            for fk in record["foreignKeys"]
        ]
        if joins:
            body["joins"] = joins
        text = yaml.dump({record["name"]: body}, Dumper=DUMPER, sort_keys=False, width=10_000, allow_unicode=True)
        fh.write("".join(f"  {line}\n" for line in text.splitlines()))

    def curated(self, conn, t: TablePlan, record, cols, rnd) -> None:
        """An overlay on the manifest source (2/3) or a standalone SQL source (1/3), with measures."""
        numeric = [(c, raw) for c, raw in zip(cols, record["columns"], strict=True) if c.kind in ("money", "amount")]
        flags = [raw["name"] for c, raw in zip(cols, record["columns"], strict=True) if c.kind == "bool"]
        pk = record["columns"][0]["name"]
        subject = human(t.entity[0])
        measures = [{"name": f"{t.entity[0]}_count", "expr": "count(*)", "description": f"Number of {subject} rows."}]
        for c, raw in numeric[:3]:
            label = c.attr.label if c.attr else human(c.name)
            measures.append(
                {"name": f"total_{c.name}", "expr": f"sum({raw['name']})", "description": f"Total {label}."}
            )
        if flags:
            measures.append(
                {
                    "name": f"{t.entity[0]}_count_{flags[0].lower()}",
                    "expr": f"count(distinct {pk})",
                    "filter": f"{flags[0]} = true",
                    "description": f"Distinct {subject} rows where {human(flags[0])}.",
                }
            )
        user = f"Governed {subject} source for the {t.schema} team. " + (record["comment"] or "")
        if rnd.random() < 2 / 3:
            doc: dict[str, Any] = {"name": record["name"], "descriptions": {"user": user.strip()}}
            overrides = [
                {"name": raw["name"], "descriptions": {"user": f"{cap(c.subject)} {c.attr.label} (curated)."}}
                for c, raw in zip(cols, record["columns"], strict=True)
                if c.attr is not None
            ][:3]
            if overrides:
                doc["column_overrides"] = overrides
            doc["measures"] = measures
            self.bump("overlays")
            source = record["name"]
        else:
            source = f"{t.name}_metrics"
            display = ".".join(p for p in (record["catalog"], record["db"], record["name"]) if p)
            doc = {
                "name": source,
                "descriptions": {"user": f"{cap(subject)} metrics for {t.schema} reporting."},
                "sql": f"select * from {display} where not coalesce(is_test, false)",
                "grain": [pk],
                "columns": [{"name": raw["name"], "type": raw["dimensionType"]} for raw in record["columns"][:12]],
                "measures": measures,
            }
            self.bump("standalone sources")
        self.sl_sources.append(f"{conn.id}.{source}")
        self.bump("measures", len(measures))
        text = yaml.dump(doc, Dumper=DUMPER, sort_keys=False, width=10_000, allow_unicode=True)
        self.write(f"semantic-layer/{conn.id}/{source}.yaml", text)

    # ------------------------------------------------------------------ wiki

    def wiki(self, conns: list[ConnPlan]) -> None:
        tables = sum(len(c.tables) for c in conns)
        pages = max(5, round(tables / 200))
        rnd = random.Random(f"{self.seed}:wiki")
        keys: list[str] = []
        for i in range(pages):
            key, title, tags, attr = METRICS[i % len(METRICS)]
            scope = list(SCHEMAS)[(i // len(METRICS)) % len(SCHEMAS)]
            if i >= len(METRICS):
                key, title = f"{key}-{scope}-{i // len(METRICS)}", f"{title} ({scope})"
            keys.append(key)
            pool = self.wiki_pool.get(METRICS[i % len(METRICS)][0]) or [
                (c.id, c.tables[0].schema, c.tables[0].name, []) for c in conns if c.tables
            ]
            refs = rnd.sample(pool, min(3, len(pool)))
            sl_refs = rnd.sample(self.sl_sources, min(2, len(self.sl_sources)))
            front = {
                "summary": f"How {title.lower()} is defined at Acme, which tables hold it and the usual pitfalls.",
                "tags": ["metric", *tags],
                "refs": [k for k in keys[-4:-1]],
                "sl_refs": sl_refs,
                "usage_mode": "auto",
            }
            conn_id, db, table, cols = refs[0]
            lines = [
                f"# {title}",
                "",
                f"{title} is reported weekly to the leadership team and monthly to the board. "
                f"The governed number comes from `{db}.{table}`; ad-hoc queries on staging copies drift.",
                "",
                "## Definition",
                "",
                f"{title} uses the `{attr}` column. Exclude test records (`is_test`) and soft-deleted rows "
                "(`is_deleted`). Amounts are converted to USD with the daily FX rate of the booking date.",
                "",
                "## Where to get it",
                "",
            ]
            for conn_id, db, table, cols in refs:
                shown = ", ".join(f"`{c}`" for c in cols[:4]) or "its key columns"
                lines.append(f"- `{conn_id}.{db}.{table}` ({conn_id}): join on {shown}.")
            lines += [
                "",
                "## Gotchas",
                "",
                f"- Numbers for the latest {rnd.choice(['two weeks', 'month', 'three days'])} are provisional.",
                f"- The {rnd.choice(VALUES['region'])} region restated {rnd.choice(['2023', '2024'])} figures; "
                "use the restated tables for year-over-year comparisons.",
                f"- Filter `{rnd.choice(['status', 'order_status', 'record_type'])}` before aggregating.",
                "",
            ]
            text = "---\n" + yaml.dump(front, Dumper=DUMPER, sort_keys=False, width=10_000) + "---\n\n"
            self.write(f"wiki/global/{key}.md", text + "\n".join(lines))
            self.bump("wiki pages")


def generate(columns: int, out: Path, seed: int = 7) -> dict[str, int]:
    writer = ProjectWriter(out, seed, columns)
    writer.run()
    return {**writer.counts, "files": writer.files, "bytes": writer.bytes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--columns", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.columns < 1:
        parser.error("--columns must be at least 1")
    started = time.perf_counter()
    counts = generate(args.columns, args.out, args.seed)
    elapsed = time.perf_counter() - started
    for key, value in counts.items():
        shown = f"{value / 1e6:.1f} MB" if key == "bytes" else f"{value:,}"
        print(f"{key:<20} {shown}")
    print(f"{'time':<20} {elapsed:.1f} s  -> {args.out}")


if __name__ == "__main__":
    main()
