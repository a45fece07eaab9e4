"""Held-out projects written by helpers: abbreviated legacy warehouses, and whole KTX projects.

    python tests/benchmarks/quality.py --only abbreviated
    python tests/benchmarks/quality.py --only ktx-style

Every other scan-only project here names its tables and columns in words (northwind's ``UnitsInStock``, the
training databases' ``customer_id``); a real warehouse often does not (``ACCT_MSTR.CUR_BAL_AMT``, ``rx_ord.prn_flg``,
``PolHdr.wrtnPrem``, ``fact_shpmt.frt_trm_cd``). Each project here (``tests/benchmarks/warehouses/<name>/``, a
``ktx.yaml`` and one scan with its relationship profile, made by the generator script beside it) was written by
one helper as a company's legacy warehouse, in its own domain and naming convention, without seeing the code; its
questions (``tests/benchmarks/judged/warehouses/<name>.yaml``) were written by another helper from the scan files
alone, in a business user's words, before any index was built on them. No ranking choice was made on them: the
family is reported, never tuned on, and a change is kept only if it does not lose here.

The ``ktx-style`` family is three whole KTX projects (a wiki, a semantic layer over part of the scan with its
``_schema`` manifests, a scan over a raw and a modelled layer, profiles), as a data team's project looks after some
months: a veterinary clinic group on Postgres, a holiday-rental booking platform on Snowflake, a payments app on
BigQuery, each in its own house vocabulary (*nests* for wallets, *berths* for rooms, *DNA* for a missed
appointment). Written the same way in the thirty-ninth session, with ``discover_data`` and ``wiki_search``
questions: the held-out KTX-style projects the issue's targets speak of, beside demo and orbit.

``ktx-style-2`` is three more, written the same way in the fortieth session once ``ktx-style`` had been measured
and its misses read (so that family is no longer blind): a group of schools on SQL Server (*PA* for persistent
absence, *cover* for supply staff), a craft brewery on MySQL (*depletions*, *dead kegs*, hectolitres) and a mobile
game on ClickHouse (*whales*, *pearls*, ARPDAU). Its figures are the held-out check of what was chosen on
``ktx-style``. ``ktx-style-3``, written the same way in the same session (a gym chain on BigQuery, a supermarket
chain on Snowflake, a ferry operator on Postgres), trained the learned order in an experiment that was not kept
(docs/benchmarks.md, fortieth session).

The forty-first session wrote six more the same way, before any search ran on them. ``ktx-style-4`` (a dental
group on SQL Server, a car-hire firm on Postgres, a ticketing marketplace on Snowflake) is the blind held-out check
of that session's choices: measured at the family level only, its misses never read. ``ktx-style-train`` (a solar
installer on BigQuery, a courier on MySQL, a broadband provider on ClickHouse) is training data for the learned
order of curated projects (tests/training/train_ranker.py). ``ktx-style-5``, six more written the same way later
in that session once that order shipped (a housing association on SQL Server, an online florist on Postgres, a
cinema chain on BigQuery, a dairy co-operative on Snowflake, a security SaaS on ClickHouse, a waste collector on
MySQL), is its second held-out check; trained on too, they moved no family (docs/benchmarks.md).

``ktx-style-6``, four more written by two helpers in the forty-fourth session (a renal dialysis provider on
Snowflake, a bakery group on MySQL, a climbing-gym chain on BigQuery, a marina chain on Postgres), each author
writing a project and its questions before anything was run on them, is the blind check of that session's
measure-inputs step, whose idea came from counts over the six families before it.
"""

from __future__ import annotations

from pathlib import Path

from ktx_index.evaluation.judged import JudgedQuery, load_judged

HERE = Path(__file__).resolve().parent
PROJECTS = HERE / "warehouses"
QUESTIONS = HERE / "judged" / "warehouses"
WAREHOUSE_FAMILIES: dict[str, tuple[str, ...]] = {
    "abbreviated": ("freight-wms", "hospital-pharmacy", "hvpw-cis-dw", "muni-utility", "mutual-insurance"),
    "ktx-style": ("kestrel-pay", "pawsworth-vets", "tidewater-stays"),
    "ktx-style-2": ("brightwell-trust", "copperkettle-brewing", "lanternfish-games"),
    "ktx-style-3": ("cobalt-fitness", "fenwick-grocers", "harbourline-ferries"),
    "ktx-style-4": ("meridian-dental", "northgate-car-hire", "tallyho-tickets"),
    "ktx-style-5": (
        "brambleway-housing",
        "coldharbour-cinemas",
        "fieldfare-dairy",
        "greenlane-waste",
        "petalpost-florist",
        "sparrowhawk-security",
    ),
    "ktx-style-train": ("kiteline-courier", "ripplewave-isp", "saltmarsh-solar"),
    "ktx-style-6": ("ashgrove-dialysis", "millbrook-bakeries", "northwall-climbing", "quayside-marinas"),
}


def warehouse_corpora(family: str) -> list[tuple[str, Path, list[JudgedQuery], str]]:
    """(name, project path, questions, family) for each project of one of ``WAREHOUSE_FAMILIES``."""
    return [
        (f"{family}/{name}", PROJECTS / name, load_judged(QUESTIONS / f"{name}.yaml").queries, family)
        for name in WAREHOUSE_FAMILIES[family]
    ]
