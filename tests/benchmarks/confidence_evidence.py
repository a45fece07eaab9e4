"""Is there more in the confidence rule's evidence than the rule reads? A learned rule against the shipped one.

    python tests/benchmarks/confidence_evidence.py [--work /tmp/ktx-index-quality] [--features top_score,...]
    python tests/benchmarks/confidence_evidence.py --noise-levels 90/90,75/90,50/90
    python tests/benchmarks/confidence_evidence.py --carried 'below=-0.04,-0.025,-0.01;above=0.04,0.06,0.1'

Run quality.py first over the judged projects and the heldout-sql, heldout-business, tuning-business,
validation-business, judged-blind, wiki-tuning, wiki-heldout and wiki-more families (``corpora``): it builds the
indexes read here. For every judged discover_data and wiki_search question this collects what a confidence rule
can see at answer time (the best fused score, the best cosine and lexical score, the noise level it must clear,
concept coverage, how far the best cosine stands out of the ten best, how many candidates score near the best, …)
and the shipped rule's verdict (``signals.assess``). A logistic regression over those figures is fitted per tool
on the tuning families (each family, and in it the answerable and the no-answer questions, weighed equally), its
threshold set so that it flags as many answerable tuning questions ``low`` as the shipped rule does. Then, per
family, it prints the learned score's AUC (answerable above no-answer) and both rules at that operating point:
answerable questions flagged low (fewer is better) and no-answer questions declined (more is better). The learned
rule is worth shipping only if no held-out family declines fewer no-answer questions.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from heldout import heldout_corpora, training_corpora  # noqa: E402
from quality import DEFAULT_CORPORA, JUDGED_TABLE, blind_corpora, judged_corpora, project_path  # noqa: E402
from wiki_corpora import WIKI_FAMILIES, wiki_corpora  # noqa: E402

from ktx_index.search import calibration, carried  # noqa: E402
from ktx_index.search.engine import Engine  # noqa: E402
from ktx_index.search.lexical_lane import bridges  # noqa: E402
from ktx_index.search.pages import wiki_noise  # noqa: E402
from ktx_index.search.query import Query  # noqa: E402
from ktx_index.search.scoring import PARAMS, Params  # noqa: E402
from ktx_index.search.signals import assess, concept_coverage, vocabulary  # noqa: E402
from ktx_index.service import KtxIndex  # noqa: E402
from ktx_index.snapshot.snapshot import curated  # noqa: E402
from ktx_index.tools.discover import normalize_kinds  # noqa: E402

#: per tool, the families a rule may be fitted on; every other family only reports
TUNING = {"discover_data": ("judged", "tuning-business"), "wiki_search": ("judged", "wiki-tuning")}
FEATURES = "top_score,best_cosine,best_lexical,coverage,noise,cos_lift,score_lift,near_best,terms"


def evidence(
    engine: Engine,
    q: Query,
    tool: str,
    kinds: list[str] | None,
    connection: str | None,
    settings: dict[str, Params] | None = None,
) -> dict[str, Any]:
    """What a confidence rule can read once a question is ranked, the shipped rule's verdict, and its verdict
    under each of ``settings`` (other ranking constants, the ranking itself unchanged)."""
    snap = engine.snapshot
    wanted = ["wiki"] if tool == "wiki_search" else normalize_kinds(kinds)
    if tool == "wiki_search":
        ranked, noise = engine.rank(q, wanted), wiki_noise(engine, snap, q)
    else:
        ranked, noise = engine.rank(q, wanted, connection), engine.noise(snap, q)
    bridging = bridges(wanted)
    # the curated floor, as discover_data reads it (with vectors, which every family here has)
    own = tool == "discover_data" and snap.matrix is not None and curated(snap)
    words = carried.weakest(engine, snap, q, ranked) if tool in engine.params.carried else None
    scores = sorted((c.score for c in ranked), reverse=True) or [0.0]
    cosines = sorted((c.cosine for c in ranked if c.cosine is not None), reverse=True) or [0.0]
    return {
        "level": assess(
            engine.lexical,
            q,
            ranked,
            tool,
            lambda: noise,
            engine.params,
            lambda: words,
            bridging=bridging,
            curated=own,
        ).level,
        "top_score": scores[0],
        "best_cosine": cosines[0],
        "best_lexical": max((c.lexical for c in ranked), default=0.0),
        "coverage": concept_coverage(vocabulary(engine.lexical, None if bridging else q), engine.lexical.idf, q),
        "noise": noise or 0.0,
        "cos_lift": cosines[0] - float(np.mean(cosines[:10])),
        "score_lift": scores[0] - float(np.mean(scores[:10])),
        "near_best": sum(s >= 0.9 * scores[0] for s in scores),
        "terms": len([t for t in q.terms if t not in q.data_words]),
        "carried": words if words is not None else 0.0,  # None: no vectors, never so in these families
        "verdicts": {
            name: assess(
                engine.lexical, q, ranked, tool, lambda: noise, p, lambda: words, bridging=bridging, curated=own
            ).level
            for name, p in (settings or {}).items()
        },
    }


def corpora(work: Path) -> list[tuple[str, str, list, Path]]:
    """(project, family, questions, path) of every family with no-answer questions, and heldout-sql."""
    out = [
        (n, t, qs, project_path(n, DEFAULT_CORPORA))
        for n, t, qs in judged_corpora(DEFAULT_CORPORA)
        if t == JUDGED_TABLE
    ]
    out += [(n, f, qs, p) for n, p, qs, f in heldout_corpora(work / "heldout")]
    out += [(n, f, qs, p) for n, p, qs, f in blind_corpora(DEFAULT_CORPORA)]
    for family in ("tuning-business", "validation-business"):
        out += [(n, f, qs, p) for n, p, qs, f in training_corpora(work / "tuning", family)]
    for family in WIKI_FAMILIES:
        out += [(n, f, qs, p) for n, p, qs, f in wiki_corpora(family)]
    return out


def collect(work: Path, settings: dict[str, Params] | None = None) -> list[dict[str, Any]]:
    rows = []
    for name, family, questions, source in corpora(work):
        path = work / name  # quality.py's copy: an index is never built inside the vendored corpora
        if not (path / "ktx.yaml").is_file():
            raise SystemExit(f"no copy of {name} under {work}: run quality.py over its family first ({source})")
        service = KtxIndex(path)
        try:
            service.rebuild()
            engine = service.refreshed_engine()
            for jq in questions:
                if jq.tool in TUNING:
                    q = Query.parse(jq.query or "")
                    row = evidence(engine, q, jq.tool, jq.kinds, jq.connection, settings)
                    rows.append(row | {"family": family, "tool": jq.tool, "answerable": bool(jq.relevant)})
        finally:
            service.close()
    return rows


def fit_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = 1e-2) -> np.ndarray:
    """Weighted, L2-regularised logistic regression by Newton's method (x standardised, bias last)."""
    x = np.c_[x, np.ones(len(x))]
    beta = np.zeros(x.shape[1])
    ridge = l2 * np.eye(len(beta))
    ridge[-1, -1] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-x @ beta))
        grad = x.T @ (w * (p - y)) + ridge @ beta
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + ridge
        beta -= np.linalg.solve(hess, grad)
    return beta


def matrix(rows: list[dict[str, Any]], names: list[str]) -> np.ndarray:
    return np.array([[float(r[n]) for n in names] for r in rows])


def learned_scores(rows: list[dict[str, Any]], names: list[str], model: tuple[np.ndarray, ...]) -> np.ndarray:
    """The fitted rule's score (higher: more likely answerable) of each row."""
    mean, std, beta = model
    z = (matrix(rows, names) - mean) / std
    return np.c_[z, np.ones(len(z))] @ beta


def report(rows: list[dict[str, Any]], names: list[str]) -> None:
    for tool, tuning in TUNING.items():
        mine = [r for r in rows if r["tool"] == tool]
        train = [r for r in mine if r["family"] in tuning]
        x = matrix(train, names)
        mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
        groups = Counter((r["family"], r["answerable"]) for r in train)
        weights = np.array([1.0 / groups[(r["family"], r["answerable"])] for r in train])
        beta = fit_logistic((x - mean) / std, np.array([r["answerable"] for r in train], float), weights)
        model = (mean, std, beta)

        flagged = sum(r["level"] != "high" for r in train if r["answerable"])  # the shipped rule's count
        answerable = np.sort(learned_scores([r for r in train if r["answerable"]], names, model))
        threshold = answerable[min(flagged, len(answerable) - 1)]
        print(f"\n{tool}: learned over {', '.join(names)}; threshold matched on {', '.join(tuning)}")
        print(f"{'family':<22} {'n':>4} {'AUC':>6}   {'answerable low':>16}   {'no-answer declined':>19}")
        print(f"{'':<22} {'':>4} {'':>6}   {'shipped learned':>16}   {'shipped learned':>19}")
        for family in dict.fromkeys(r["family"] for r in mine):
            rs = [r for r in mine if r["family"] == family]
            s = learned_scores(rs, names, model)
            pos = [s[i] for i, r in enumerate(rs) if r["answerable"]]
            neg = [s[i] for i, r in enumerate(rs) if not r["answerable"]]
            auc = np.mean([a > b for a in pos for b in neg]) if pos and neg else float("nan")
            low = (sum(r["level"] != "high" for r in rs if r["answerable"]), sum(v < threshold for v in pos))
            declined = (
                sum(r["level"] != "high" for r in rs if not r["answerable"]),
                sum(s[i] < threshold or r["level"] == "none" for i, r in enumerate(rs) if not r["answerable"]),
            )
            print(
                f"{family:<22} {len(rs):>4} {auc:>6.3f}   {low[0]:>7} {low[1]:>7} /{len(pos):<4}"
                f" {declined[0]:>7} {declined[1]:>7} /{len(neg)}"
            )


def emptied_by_noise_level(work: Path, settings: list[str]) -> None:
    """Per pair of noise-level percentiles (a question with an English word / without, search/calibration.py):
    how many answerable and no-answer questions come back with nothing, the answerable ones per family."""
    print(f"{'percentiles':<12} {'no-answer emptied':>18}   answerable emptied")
    for setting in settings:
        english, not_english = (int(v) for v in setting.split("/"))
        calibration.ENGLISH_PERCENTILE, calibration.NOT_ENGLISH_PERCENTILE = english, not_english
        emptied = [r for r in collect(work) if r["level"] == "none"]
        families = Counter(r["family"] for r in emptied if r["answerable"])
        where = ", ".join(f"{family} {n}" for family, n in sorted(families.items()))
        print(f"{setting:<12} {sum(not r['answerable'] for r in emptied):>18}   {sum(families.values())} ({where})")


def carried_grid(work: Path, belows: list[float], aboves: list[float]) -> None:
    """Per pair of ``Params.carried`` thresholds for discover_data (search/carried.py), and with the rule off:
    per family, no-answer questions declined and answerable questions flagged low. The pair kept is the one that
    declines at least 80 % of the no-answer questions of every tuning family while flagging the fewest of their
    answerable questions low (the tuning families weighed equally); the other families only report."""
    settings = {"off": dataclasses.replace(PARAMS, carried={})}
    for below, above in itertools.product(belows, aboves):
        settings[f"{below}/{above}"] = dataclasses.replace(PARAMS, carried={"discover_data": (below, above)})
    rows = [r for r in collect(work, settings) if r["tool"] == "discover_data"]
    families = list(dict.fromkeys(r["family"] for r in rows))

    def rates(name: str, family: str) -> tuple[float, float]:
        rs = [r for r in rows if r["family"] == family]
        declined = [r["verdicts"][name] != "high" for r in rs if not r["answerable"]]
        low = [r["verdicts"][name] != "high" for r in rs if r["answerable"]]
        return (float(np.mean(declined)) if declined else float("nan")), float(np.mean(low))

    table = {name: {family: rates(name, family) for family in families} for name in settings}
    tuning = TUNING["discover_data"]
    eligible = [n for n in settings if n != "off" and all(table[n][f][0] >= 0.8 for f in tuning)]
    kept = min(eligible, key=lambda n: np.mean([table[n][f][1] for f in tuning]), default=None)
    print(f"{'below/above':<14}" + "".join(f" {f[:20]:>21}" for f in families))
    print(f"{'':<14}" + "".join(f" {'declined  low':>21}" for _ in families))
    for name in settings:
        mark = " <- kept" if name == kept else ""
        cells = "".join(f" {table[name][f][0]:>10.2f} {table[name][f][1]:>10.2f}" for f in families)
        print(f"{name:<14}{cells}{mark}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/ktx-index-quality"), help="quality.py's --work")
    parser.add_argument("--features", default=FEATURES, help="comma-separated evidence the learned rule reads")
    parser.add_argument(
        "--noise-levels", help="instead: questions emptied per pair of noise percentiles, e.g. '90/90,75/90'"
    )
    parser.add_argument(
        "--carried",
        help="instead: the carried-words rule per pair of thresholds, e.g. 'below=-0.03,-0.025;above=0.04,0.06'",
    )
    args = parser.parse_args()
    if args.carried:
        grid = dict(part.split("=", 1) for part in args.carried.split(";"))
        carried_grid(args.work, *([float(v) for v in grid[k].split(",")] for k in ("below", "above")))
        return
    if args.noise_levels:
        emptied_by_noise_level(args.work, args.noise_levels.split(","))
        return
    report(collect(args.work), args.features.split(","))


if __name__ == "__main__":
    main()
