"""Train the learned order's models (ktx_index/search/learned.py) and write them to its ``weights/``.

    python tests/benchmarks/quality.py --only demo,orbit,northwind,sakila,adventureworks,bird-dev,tuning-business
    python tests/training/train_ranker.py [--work /tmp/ktx-index-quality] [--seed 7]
    python tests/benchmarks/quality.py --only ktx-style,ktx-style-3,ktx-style-train   # and the line above
    python tests/training/train_ranker.py --curated [--work /tmp/ktx-index-quality] [--seed 7]

Trained on the three tuning families only — the judged KTX-style projects, the bird-dev databases and the
tuning-business training databases (tests/benchmarks/heldout.py), each family weighed equally — from the
indexes quality.py built: per answerable judged discover_data question, the pipeline's best ``TOP`` candidates
with their grades. tuning-business also brings the 168 business questions of ``EXTRA_BUSINESS``, over 21 more
training databases (their projects written and indexed here, since no family is judged on them). The held-out
families of tests/benchmarks/heldout.py never enter.
tests/benchmarks/learned_ranker.py scores the same recipe leave one project out. Deterministic: one thread,
a fixed seed, the same file byte for byte.

``--curated`` trains the model of projects with a hand-written semantic layer (``Params.curated_ranker``) on the same
bird-dev and tuning-business questions and two families of such projects: the judged ones (demo, orbit) and the
helper-written ones of ``CURATED_FAMILIES``, four families weighed equally (``CURATED_TUNING``). ktx-style-2, -4,
-5 and -6 never enter; ``learned_ranker.py --curated`` scores it.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import lightgbm
import numpy as np

REPO = Path(__file__).resolve().parents[2]
for extra in (REPO, REPO / "tests" / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from heldout import TUNING_FAMILY, schemas, training_corpora, write_project  # noqa: E402
from naive import judged_id  # noqa: E402
from quality import DEFAULT_CORPORA, JUDGED_TABLE, judged_corpora  # noqa: E402
from warehouse_corpora import warehouse_corpora  # noqa: E402

from indexers.models import SEARCH_KINDS  # noqa: E402
from ktx_index.evaluation.judged import JudgedQuery, load_judged  # noqa: E402
from ktx_index.search import learned  # noqa: E402
from ktx_index.search.query import Query  # noqa: E402
from ktx_index.search.scoring import PARAMS  # noqa: E402
from ktx_index.search.trees import Trees  # noqa: E402
from ktx_index.service import KtxIndex  # noqa: E402
from ktx_index.snapshot.snapshot import curated  # noqa: E402

TUNING = ("judged", "bird-dev", TUNING_FAMILY)
#: Business questions over 21 training databases no family is judged on, in BIRD's id shape (tables grade 2,
#: columns 1): more business language for the ranker to learn from, weighed inside tuning-business. Held out, with
#: them against without (three ranker seeds each), every family gains a little and none loses (docs/benchmarks.md,
#: thirty-first session). The embedding model does not train on them (tests/training/more/README.md says why).
EXTRA_BUSINESS = REPO / "tests" / "training" / "more" / "business.jsonl"
#: The helper-written KTX projects (tests/benchmarks/warehouse_corpora.py) the curated model trains on.
CURATED_FAMILIES = ("ktx-style", "ktx-style-3", "ktx-style-train")
#: The curated model's four families, weighed equally.
CURATED_TUNING = ("bird-dev", TUNING_FAMILY, "curated-judged", "curated-written")


@dataclass
class Case:
    """One question's candidates as the ranker sees them, with their grades."""

    family: str
    group: str  # the project (a bird-dev database for bird-dev) left out together
    x: np.ndarray
    y: np.ndarray
    ideal: list[int]
    text: str
    scored: bool = True  # False for EXTRA_BUSINESS's questions: they train every model and are never scored


def case(service: KtxIndex, family: str, group: str, q: JudgedQuery, names: list[str]) -> Case | None:
    query = Query.parse(q.text)
    ranked = service.ensure_index().rank(query, list(q.kinds or SEARCH_KINDS), q.connection)[: learned.TOP]
    if not ranked:
        return None
    return Case(
        family,
        group,
        learned.matrix(learned.candidate_features(query, ranked), names),
        np.array([q.relevant.get(judged_id(c.uid), 0) for c in ranked]),
        list(q.relevant.values()),
        q.text,
    )


def feature_names() -> list[str]:
    from ktx_index.search.candidate import Candidate

    return sorted(learned.candidate_features(Query.parse("x"), [Candidate("table:a:b", score=1.0)]))


def group_of(project: str, q: JudgedQuery) -> str:
    """What leave one project out leaves out together: the project, or for bird-dev the question's database."""
    return f"bird/{q.tags[0]}" if project == "bird-dev" else project


Project = tuple[str, str, Path, list[JudgedQuery]]  # name, family, index folder, questions


def tuning_projects(work: Path, structure: bool = True) -> list[Project]:
    """The tuning families' projects, as quality.py indexes them under ``work``; with ``structure`` False, the
    training databases without column types and foreign keys, written and indexed under ``work/bare``."""
    projects = [
        (name, "judged" if table == JUDGED_TABLE else table, work / name, queries)
        for name, table, queries in judged_corpora(DEFAULT_CORPORA)
    ]
    projects += [
        (name, family, work / name if structure else bare(work, name.split("/", 1)[1]), queries)
        for name, _path, queries, family in training_corpora(work / "tuning")
    ]
    return [p for p in projects if p[1] in TUNING]


def bare(work: Path, db: str) -> Path:
    """The training database ``db`` as a project of text columns without foreign keys, written and indexed under
    ``work/bare``."""
    return indexed(write_project(work / "bare", db, schemas()[db], structure=False))


def indexed(path: Path) -> Path:
    service = KtxIndex(path)
    try:
        service.rebuild()  # every time, as quality.py does: a no-op unless the indexer or the model changed
    finally:
        service.close()
    return path


def extra_projects(work: Path, structure: bool = True) -> list[Project]:
    """``EXTRA_BUSINESS``'s questions per database, as projects written and indexed under ``work/tuning`` (two
    runs on one work folder at once would wait on each other's index lock, as quality.py's do), or without types
    and foreign keys under ``work/bare``."""
    by_db: dict[str, list[JudgedQuery]] = defaultdict(list)
    for q in load_judged(EXTRA_BUSINESS).queries:
        by_db[q.tags[0]].append(q)
    all_schemas, out = schemas(), []
    for db, queries in sorted(by_db.items()):
        path = indexed(write_project(work / "tuning", db, all_schemas[db])) if structure else bare(work, db)
        out.append((f"more-business/{db}", TUNING_FAMILY, path, queries))
    return out


def tuning_cases(work: Path, names: list[str], structure: bool = True) -> list[Case]:
    """Every answerable judged discover_data question of the tuning families that has an index under ``work``,
    and those of ``EXTRA_BUSINESS`` (not ``scored``); the training databases without types and foreign keys if not
    ``structure``."""
    extra = [replace(c, scored=False) for c in indexed_cases(extra_projects(work, structure), names)]
    return indexed_cases(tuning_projects(work, structure), names) + extra


def curated_projects(work: Path) -> list[Project]:
    """The projects with a hand-written semantic layer the curated model trains on, as quality.py indexes them under
    ``work``: the judged ones (``snapshot.curated`` says which) and those of ``CURATED_FAMILIES``."""
    judged = [p for p in tuning_projects(work) if p[1] == "judged" and is_curated(p[2])]
    helpers = [
        (name, "curated-written", work / name, queries)
        for family in CURATED_FAMILIES
        for name, _path, queries, _family in warehouse_corpora(family)
    ]
    return [(name, "curated-judged", path, queries) for name, _family, path, queries in judged] + helpers


def is_curated(path: Path) -> bool:
    """Whether an indexed project has a hand-written semantic layer, as the server decides it (snapshot.curated)."""
    if not (path / ".ktx").is_dir():
        return False
    service = KtxIndex(path)
    try:
        return curated(service.ensure_index().snapshot)
    finally:
        service.close()


def curated_cases(work: Path, names: list[str]) -> list[Case]:
    """The curated model's questions: bird-dev's and tuning-business's (with ``EXTRA_BUSINESS``), and every answerable
    discover_data question of ``curated_projects``. The training databases are read bare (text columns, no foreign
    keys): with their structure the join and value steps fire on questions graded from SQL, whose gold lists every
    join key, and the model lost held out (ktx-style-2 −0.008; docs/benchmarks.md, forty-third session)."""
    scan = [c for c in tuning_cases(work, names, structure=False) if c.family in CURATED_TUNING]
    return scan + indexed_cases(curated_projects(work), names)


def indexed_cases(projects: list[Project], names: list[str]) -> list[Case]:
    """The answerable discover_data questions of every (name, family, index folder, questions) indexed there."""
    out = []
    for name, family, path, queries in projects:
        if not (path / ".ktx").is_dir():
            continue
        service = KtxIndex(path)
        try:
            for q in queries:
                if q.tool == "discover_data" and q.relevant:
                    found = case(service, family, group_of(name, q), q, names)
                    if found is not None:
                        out.append(found)
        finally:
            service.close()
    return out


def family_weights(cases: list[Case]) -> dict[str, float]:
    counts: dict[str, int] = defaultdict(int)
    for c in cases:
        counts[c.family] += 1
    return {family: 1.0 / n for family, n in counts.items()}


def train_ranker(cases: list[Case], names: list[str], seed: int) -> lightgbm.Booster:
    weights = family_weights(cases)
    data = lightgbm.Dataset(
        np.vstack([c.x for c in cases]),
        label=np.concatenate([c.y for c in cases]),
        group=[len(c.y) for c in cases],
        weight=np.concatenate([np.full(len(c.y), weights[c.family]) for c in cases]),
        feature_name=names,
    )
    params = {
        "objective": "lambdarank",
        "learning_rate": 0.1,
        "num_leaves": 15,
        "min_data_in_leaf": 50,
        "feature_fraction": 0.8,
        "bagging_fraction": 0.8,
        "bagging_freq": 1,
        "lambdarank_truncation_level": 20,
        "seed": seed,
        "deterministic": True,
        "num_threads": 1,
        "verbose": -1,
    }
    return lightgbm.train(params, data, num_boost_round=100)


def trained_trees(cases: list[Case], names: list[str], seed: int) -> Trees:
    """The ranker trained on ``cases``, as the server runs it (search/trees.py)."""
    return Trees.from_lightgbm(train_ranker(cases, names, seed).dump_model())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/ktx-index-quality"), help="quality.py's work folder")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--curated", action="store_true", help="the model of curated projects (Params.curated_ranker)")
    args = parser.parse_args()
    names = feature_names()
    cases = (curated_cases if args.curated else tuning_cases)(args.work, names)
    wanted = CURATED_TUNING if args.curated else TUNING
    missing = sorted(set(wanted) - {c.family for c in cases})
    if missing:
        raise SystemExit(f"no index for {', '.join(missing)} under {args.work}: run quality.py first (see above)")
    target = learned.WEIGHTS / (PARAMS.curated_ranker if args.curated else PARAMS.ranker)
    learned.WEIGHTS.mkdir(exist_ok=True)
    trained_trees(cases, names, args.seed).save(target)
    print(f"{len(cases)} questions → {target.name} in {learned.WEIGHTS}")


if __name__ == "__main__":
    main()
