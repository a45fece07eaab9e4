"""What each step of the declared ranking pipeline earns, per family: the step switched off against all on.

    python tests/benchmarks/stages.py [--work /tmp/ktx-index-quality] [--only judged,bird-dev,tuning-business]
    python tests/benchmarks/stages.py --only abbreviated,ktx-style,ktx-style-2,ktx-style-3   # helper-written projects

Run quality.py first (with ``--only heldout-sql,heldout-business,validation-business`` too): it builds the indexes
read here. Each row switches one step off through search/scoring.py's ``Params`` (its share set to 0, or the kind
prior made flat) and scores every answerable and no-answer judged discover_data question of each family: the
judged KTX-style projects, the bird-dev databases, the held-out projects no constant was chosen on, and
``validation-business`` (``tuning-business`` with ``--only``). The learned order is on, as shipped, and is not
retrained without the step: a row says what removing the step alone would cost. Switching a step on or off
chooses no constant per fold, so each family's figure is held out for the step itself. A step earns its place when
switching it off loses on some family and gains on none.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from heldout import FAMILIES, TRAINING_FAMILIES, heldout_corpora, training_corpora  # noqa: E402
from quality import DEFAULT_CORPORA, JUDGED_TABLE, judged_corpora  # noqa: E402
from warehouse_corpora import WAREHOUSE_FAMILIES, warehouse_corpora  # noqa: E402

from ktx_index.evaluation.metrics import evaluate_index  # noqa: E402
from ktx_index.search.scoring import PARAMS  # noqa: E402
from ktx_index.service import KtxIndex  # noqa: E402

#: step → the Params change that switches it off
OFF: dict[str, dict[str, Any]] = {
    "bridge (lane)": {"bridged_term": 0.0},
    "container coverage (lane)": {"member_context": 0.0},
    "kind prior (fusion)": {"kind_prior": {k: 1.0 for k in PARAMS.kind_prior}, "key_member": 1.0},
    "key prior (fusion)": {"key_member": 1.0},
    "propagate": {"parent_share": 0.0},
    "named": {"named_share": 0.0},
    "join_keys": {"join_share": 0.0},
    "shaped": {"shape_share": 0.0},
    "namesakes": {"namesake_share": 0.0},
    "measure_inputs": {"measure_share": 0.0},
    "coherence": {"coherence": 0.0},
    "page_scope": {"other_connection_page": 1.0},
}


def corpora(work: Path, families: set[str]) -> list[tuple[str, Path, list]]:
    out = []
    for name, table, queries in judged_corpora(DEFAULT_CORPORA):
        family = "judged" if table == JUDGED_TABLE else table
        if family in families and (work / name / ".ktx").is_dir():
            out.append((family, work / name, [q for q in queries if q.tool == "discover_data"]))
    found = heldout_corpora(work / "heldout") if families & set(FAMILIES) else []
    for family in families & set(TRAINING_FAMILIES):
        found += training_corpora(work / "tuning", family)
    for family in sorted(families & set(WAREHOUSE_FAMILIES)):  # the helper-written projects, as quality.py indexes them
        found += [(name, path, queries, family) for name, path, queries, _family in warehouse_corpora(family)]
    for name, _path, queries, family in found:
        if family in families and (work / name / ".ktx").is_dir():
            out.append((family, work / name, [q for q in queries if q.tool == "discover_data"]))
    return out


def family_ndcg(items: list[tuple[str, Path, list]], changes: dict[str, Any]) -> dict[str, float]:
    """Per family, the mean over its projects of their questions' mean nDCG@10 (a project weighs as much as
    another, as the cross-validation weighs them)."""
    params = dataclasses.replace(PARAMS, **changes)
    per: dict[str, list[float]] = {}
    for family, root, queries in items:
        service = KtxIndex(root, params=params)
        try:
            report = evaluate_index(service, queries)
        finally:
            service.close()
        per.setdefault(family, []).append(statistics.mean(r.ndcg for r in report.queries))
    return {family: statistics.mean(values) for family, values in per.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/ktx-index-quality"), help="quality.py's work folder")
    parser.add_argument(
        "--only", default="judged,bird-dev,heldout-sql,heldout-business,validation-business", help="families"
    )
    args = parser.parse_args()
    items = corpora(args.work, set(args.only.split(",")))
    base = family_ndcg(items, {})
    families = sorted(base)
    print(f"{'switched off':<28}" + "".join(f"{f:>21}" for f in families) + "   verdict")
    print(f"{'(nothing: the pipeline)':<28}" + "".join(f"{base[f]:>21.3f}" for f in families))
    for step, changes in OFF.items():
        off = family_ndcg(items, changes)
        cells = "".join(f"{off[f]:>14.3f} {off[f] - base[f]:+.3f}" for f in families)
        losses = [f for f in families if off[f] < base[f] - 5e-4]
        gains = [f for f in families if off[f] > base[f] + 5e-4]
        verdict = "earns its place" if losses and not gains else "no family moves" if not gains else "mixed"
        print(f"{step:<28}{cells}   {verdict}")


if __name__ == "__main__":
    main()
