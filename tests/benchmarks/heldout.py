"""Held-out projects: the training databases no model or tuning has seen, each as its own KTX project.

    python tests/benchmarks/heldout.py [--root /tmp/ktx-index-heldout]   # write the projects, list them

The ranking was tuned on a few KTX projects and on bird-dev; how it does on a project nobody tuned on
is the figure that says what a new user gets. ``tests/training/text-to-sql/heldout.json`` names 40
training databases (10 BIRD, 30 Spider) that ``train_model.py`` leaves out of training; this module
writes each as a scan-snapshot project (connection id = db_id, the same scan objects and indexer
``train_model.py`` trains on) and loads two families of judged questions over them:

* ``heldout-sql``: up to ``SQL_PER_DB`` of each database's training questions (chosen by sha256 of the
  question, not by file order), graded as bird-dev is (``ktx_index.evaluation.judged.bird_query``: tables 2,
  columns 1), asked of the database's own project;
* ``heldout-business``: the business-language questions of ``tests/benchmarks/judged/heldout/*.yaml``,
  written blind (from the schema JSON alone, before any index was built on these projects).

Projects are written only where a file differs, so a rerun leaves the indexes under them fresh.
Nothing held out here may be used to choose a constant: these figures are reported, never tuned on.

Two more families are written the same way over *training* databases (``training_corpora``), business-language
questions over scan-only projects other than the held-out ones:

* ``tuning-business`` (``tests/benchmarks/judged/tuning-business/*.yaml``, 24 databases) is for tuning: the
  learned order trains on it, and a choice made for business questions is made on it;
* ``validation-business`` (``tests/benchmarks/judged/validation-business/*.yaml``, 47 more: 24 written on
  2026-12-04, 23 on 2026-12-06) is trained and tuned on by nothing: it checks a choice made on the tuning
  families before the held-out figures are looked at, and may be read question by question (it is no
  acceptance set). A training database that is a judged project under another name (``movie_3`` is sakila)
  is not among them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for extra in (REPO, REPO / "tests", REPO / "tests" / "training"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from projects import scan_files, write_files  # noqa: E402
from train_model import DATA, SYNC, heldout_databases, load_pairs, scan_tables, schemas  # noqa: E402

from ktx_index.evaluation.judged import JudgedQuery, bird_query, load_judged  # noqa: E402

HELDOUT_FILE = DATA / "heldout.json"
BUSINESS = HERE / "judged" / "heldout"
DEFAULT_ROOT = Path("/tmp/ktx-index-heldout")
SQL_PER_DB = 10
FAMILIES = ("heldout-sql", "heldout-business")
TUNING_FAMILY = "tuning-business"
VALIDATION_FAMILY = "validation-business"
#: The business-question families over training databases, and the folder of each.
TRAINING_FAMILIES = {family: HERE / "judged" / family for family in (TUNING_FAMILY, VALIDATION_FAMILY)}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def choose_heldout(pairs: list[dict[str, Any]], counts: dict[str, int]) -> dict[str, list[str]]:
    """The rule heldout.json records: per source, the databases with questions, sorted by sha256 of the db_id,
    the first ``counts[source]``. Recomputed by the test, so the file cannot drift from its rule."""
    by_source: dict[str, set[str]] = {}
    for pair in pairs:
        by_source.setdefault(pair["source"], set()).add(pair["db_id"])
    return {source: sorted(sorted(by_source[source], key=_digest)[:n]) for source, n in counts.items()}


def project_files(db: str, schema: dict[str, Any], structure: bool = True) -> dict[str, Any]:
    """ktx.yaml and one complete scan snapshot of ``db``, as train_model.py writes them for training (every column
    text and no foreign key when ``structure`` is False)."""
    tables = scan_tables(schema, structure)
    return {"ktx.yaml": f"connections:\n  {db}:\n    driver: sqlite\n", **scan_files(db, SYNC, tables)}


def write_project(root: Path, db: str, schema: dict[str, Any], structure: bool = True) -> Path:
    """``root/<db>``, rewriting only the files whose content differs (deterministic: same input, same bytes)."""
    path = root / db
    changed = {}
    for rel, content in project_files(db, schema, structure).items():
        text = content if isinstance(content, str) else json.dumps(content, indent=2) + "\n"
        target = path / rel
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            changed[rel] = text
    write_files(path, changed)
    return path


def sql_questions(db: str, pairs: list[dict[str, Any]], per_db: int = SQL_PER_DB) -> list[JudgedQuery]:
    """Up to ``per_db`` training questions of ``db``, the first by sha256 of the question, graded as bird-dev;
    the type is the source (bird, spider), so the report splits the family by it."""
    mine = sorted((p for p in pairs if p["db_id"] == db), key=lambda p: _digest(p["query"]))[:per_db]
    out = []
    for n, pair in enumerate(mine, 1):
        item = bird_query({"query": pair["query"], "relevant": pair["relevant"], "kind": pair["source"]}, n)
        item["id"] = f"hs-{db}-{n:02d}"
        item["tags"] = []  # one project per database: the benchmark's own "@<name>" tag already says which
        out.append(JudgedQuery.model_validate(item))
    return out


def business_files(folder: Path = BUSINESS) -> dict[str, Path]:
    """db_id → its blind business-question file (held out by default, or a folder of TRAINING_FAMILIES)."""
    return {load_judged(path).project or path.stem: path for path in sorted(folder.glob("*.yaml"))}


def heldout_corpora(root: Path = DEFAULT_ROOT) -> list[tuple[str, Path, list[JudgedQuery], str]]:
    """(name, project path, judged questions, family) for every held-out project and family, projects written
    under ``root``. The name is ``<family>/<db_id>``: unique, so a benchmark's work folder and figures per name
    keep the two families of one database apart."""
    all_schemas = schemas()
    pairs = load_pairs(include_heldout=True)
    business = business_files()
    out = []
    for db in sorted(heldout_databases()):
        path = write_project(root, db, all_schemas[db])
        out.append((f"heldout-sql/{db}", path, sql_questions(db, pairs), "heldout-sql"))
        if db in business:
            out.append((f"heldout-business/{db}", path, load_judged(business[db]).queries, "heldout-business"))
    return out


def training_corpora(root: Path, family: str = TUNING_FAMILY) -> list[tuple[str, Path, list[JudgedQuery], str]]:
    """(name, project path, questions, family) for one of ``TRAINING_FAMILIES``: training databases only (a
    held-out one here would leak into tuning, so it is refused), projects written under ``root``."""
    all_schemas, heldout = schemas(), heldout_databases()
    out = []
    for db, file in business_files(TRAINING_FAMILIES[family]).items():
        if db in heldout:
            raise ValueError(f"{file}: {db} is a held-out database (heldout.json); use training databases only")
        path = write_project(root, db, all_schemas[db])
        out.append((f"{family}/{db}", path, load_judged(file).queries, family))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="where the projects are written")
    args = parser.parse_args()
    for name, path, queries, family in heldout_corpora(args.root):
        print(f"{family:<17} {name:<30} {len(queries):>3} questions  {path}")


if __name__ == "__main__":
    main()
