"""Abbreviated warehouses for ``discover_data``: legacy schemas named as real shops name them, held out.

    python tests/benchmarks/quality.py --only abbreviated

Every other scan-only project here names its tables and columns in words (northwind's ``UnitsInStock``, the
training databases' ``customer_id``); a real warehouse often does not (``ACCT_MSTR.CUR_BAL_AMT``, ``rx_ord.prn_flg``,
``PolHdr.wrtnPrem``, ``fact_shpmt.frt_trm_cd``). Each project here (``tests/benchmarks/warehouses/<name>/``, a
``ktx.yaml`` and one scan with its relationship profile, made by the generator script beside it) was written by
one helper as a company's legacy warehouse, in its own domain and naming convention, without seeing the code; its
questions (``tests/benchmarks/judged/warehouses/<name>.yaml``) were written by another helper from the scan files
alone, in a business user's words, before any index was built on them. No ranking choice was made on them: the
family is reported, never tuned on, and a change is kept only if it does not lose here.
"""

from __future__ import annotations

from pathlib import Path

from ktx_index.evaluation.judged import JudgedQuery, load_judged

HERE = Path(__file__).resolve().parent
PROJECTS = HERE / "warehouses"
QUESTIONS = HERE / "judged" / "warehouses"
WAREHOUSE_FAMILIES: dict[str, tuple[str, ...]] = {
    "abbreviated": ("freight-wms", "hospital-pharmacy", "hvpw-cis-dw", "muni-utility", "mutual-insurance"),
}


def warehouse_corpora(family: str) -> list[tuple[str, Path, list[JudgedQuery], str]]:
    """(name, project path, questions, family) for each project of one of ``WAREHOUSE_FAMILIES``."""
    return [
        (f"{family}/{name}", PROJECTS / name, load_judged(QUESTIONS / f"{name}.yaml").queries, family)
        for name in WAREHOUSE_FAMILIES[family]
    ]
