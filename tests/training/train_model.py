"""Fine-tune all-MiniLM-L6-v2 on public questions over databases and wikis, reproducibly, into
ktx_index/embedding/weights/.

    python tests/training/train_model.py [--out ktx_index/embedding/weights/minilm-sql.safetensors] [--seed 13] [--epochs 1]
        [--extra tests/training/business/pairs.jsonl] [--wiki tests/training/wikis] [--extra-repeat 2] [--sql-only]

With no option it writes the shipped model, byte for byte (sha256 57353bb2…, ~27 min on two cores).

The databases listed in text-to-sql/heldout.json are left out (``--include-heldout`` puts them back): they
are the held-out projects the ranking is judged on, so neither the model nor any tuning may see them.

Each training question is paired with a table or column its gold SQL uses (the positive) and a
table or column of the same database it does not use (a hard negative: the base model's
closest wrong item more often than not); batches hold a few questions of each database, so the
other questions' items are hard negatives too (masked where they are relevant). The databases are
disjoint from every evaluation database
(tests/training/text-to-sql/README.md). Documents are written as a scan snapshot and read by the
project's own indexer, so what the model learns to match is exactly the text the index embeds.
``--extra`` adds pairs of the same shape (by default the business-language questions of ``business/``), ``--wiki``
questions over written wikis (by default ``wikis/``), each paired with the nearest section of its answering page,
each of them ``--extra-repeat`` times; ``--sql-only`` trains without them, as the model shipped until the
twenty-ninth session was (docs/benchmarks.md, twenty-eighth and twenty-ninth sessions). Word embeddings stay frozen: the shipped
artefact is the rest of the transformer in float16 (~22 MB), loaded over the packaged base model by
ktx_index/embedding/embedder.py. Fixed seed, one process. torch and numpy are imported where they are used, so
tests/benchmarks/heldout.py and its test read the schemas and pairs without loading them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from projects import scan_files, write_files  # noqa: E402

from indexers import load_project, read_project  # noqa: E402
from ktx_index.embedding.finetuned import ARTEFACT, FROZEN_PREFIXES, save_delta  # noqa: E402
from ktx_index.index.texts import embedding_texts, wiki_chunks  # noqa: E402

DATA = HERE / "text-to-sql"
BUSINESS = HERE / "business" / "pairs.jsonl"
WIKIS = HERE / "wikis"
SYNC = "2026-01-01-000000-local-train"
#: A schema's column type → (nativeType, normalizedType, dimensionType), as `ktx scan` writes a SQLite database's
#: columns (read off the bird-dev snapshots: DATE is text of dimension time). BIRD's schemas give SQLite's types;
#: Spider's only "number", "text", "time", "boolean" and "others".
TYPES = {
    "integer": ("INTEGER", "integer", "number"),
    "real": ("REAL", "real", "number"),
    "number": ("NUMERIC", "real", "number"),
    "text": ("TEXT", "text", "string"),
    "date": ("DATE", "text", "time"),
    "datetime": ("DATETIME", "text", "time"),
    "time": ("DATETIME", "text", "time"),
    "boolean": ("BOOLEAN", "integer", "boolean"),
    "blob": ("BLOB", "blob", "string"),
}
OTHER_TYPE = ("TEXT", "text", "string")


def schemas() -> dict[str, dict]:
    out = {}
    for name in ("bird_train_tables.json", "spider_tables.json"):
        for schema in json.loads((DATA / name).read_text()):
            out[schema["db_id"]] = schema
    return out


def scan_tables(schema: dict, structure: bool = True) -> list[dict]:
    """A Spider-format schema as the scan table objects `ktx scan` writes: columns with their types and primary
    keys, tables with their foreign keys (with ``structure`` False, every column text and no foreign key); a
    natural-language column name that says more than the identifier becomes the column comment (as database
    descriptions do in real scans). Types and foreign keys reach no embedded text (index/texts.py): they feed
    joins, value shapes and the ranking steps that read them."""
    names = schema["table_names_original"]
    tables = [
        {
            "catalog": None,
            "db": "main",
            "name": name,
            "kind": "table",
            "comment": None,
            "columns": [],
            "foreignKeys": [],
        }
        for name in names
    ]
    columns = schema["column_names_original"]
    primary = {i for key in schema.get("primary_keys") or [] for i in (key if isinstance(key, list) else [key])}
    for i, ((table, original), (_, natural), kind) in enumerate(
        zip(columns, schema["column_names"], schema["column_types"], strict=True)
    ):
        if table < 0:
            continue
        native, normalized, dimension = TYPES.get(kind, OTHER_TYPE) if structure else OTHER_TYPE
        plain = original.replace("_", " ").casefold()
        tables[table]["columns"].append(
            {
                "name": original,
                "nativeType": native,
                "normalizedType": normalized,
                "dimensionType": dimension,
                "nullable": i not in primary,
                "primaryKey": i in primary,
                "comment": natural if natural.casefold() != plain else None,
            }
        )
    for source, target in dict.fromkeys(tuple(key) for key in (schema.get("foreign_keys") or []) if structure):
        (from_table, from_column), (to_table, to_column) = columns[source], columns[target]
        tables[from_table]["foreignKeys"].append(
            {
                "fromColumn": from_column,
                "toCatalog": None,
                "toDb": "main",
                "toTable": names[to_table],
                "toColumn": to_column,
                "constraintName": f"{names[from_table]}_{from_column}_fkey",
            }
        )
    return tables


def document_texts(databases: set[str]) -> dict[str, str]:
    """'<db>/main.<table>[.<column>]' → the text the index embeds for it, via the real scan indexer."""
    all_schemas = schemas()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files: dict = {"ktx.yaml": "connections:\n" + "".join(f"  {db}:\n    driver: sqlite\n" for db in databases)}
        for db in sorted(databases):
            files.update(scan_files(db, SYNC, scan_tables(all_schemas[db])))
        write_files(root, files)
        docs = read_project(load_project(root)).documents
    out = {}
    for doc in docs:
        if doc.kind in ("table", "column"):
            out[f"{doc.connection_id}/{doc.id}"] = embedding_texts(doc)[0]
    return out


def heldout_databases() -> set[str]:
    """The training databases kept out of training (``text-to-sql/heldout.json``): they are the held-out projects
    the ranking is validated on (tests/benchmarks/heldout.py), so the model must never have seen them."""
    chosen = json.loads((DATA / "heldout.json").read_text())
    return {db for source in chosen["counts"] for db in chosen[source]}


def load_pairs(include_heldout: bool = False) -> list[dict]:
    """The training questions; by default without the held-out databases' (the shipped model is trained so)."""
    pairs = [json.loads(line) for line in (DATA / "train_pairs.jsonl").read_text().splitlines() if line.strip()]
    if include_heldout:
        return pairs
    heldout = heldout_databases()
    return [p for p in pairs if p["db_id"] not in heldout]


def load_extra(path: Path, include_heldout: bool = False) -> list[dict]:
    """More pairs in train_pairs.jsonl's shape (business-language questions, say); a held-out database's would
    leak into the held-out families, so it is refused unless they are trained on too."""
    pairs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    leaked = sorted({p["db_id"] for p in pairs} & heldout_databases())
    if leaked and not include_heldout:
        raise SystemExit(f"{path}: held-out databases {', '.join(leaked)} (text-to-sql/heldout.json); remove them")
    return pairs


def wiki_pairs(root: Path) -> tuple[list[dict], dict[str, str]]:
    """Questions over wiki projects (``root/<wiki>/wiki/global/*.md`` and ``root/<wiki>/questions.jsonl``: query,
    relevant {page key: grade}) as pairs over the pages' chunks, read by the project's own indexer: the items are
    '<wiki>/<page>#<n>' (the n-th chunk ``texts.wiki_chunks`` embeds), the grade-2 page's chunks listed first."""
    pairs, texts = [], {}
    for project in sorted(d for d in root.iterdir() if (d / "questions.jsonl").is_file()):
        chunks: dict[str, list[str]] = {}
        for doc in read_project(load_project(project)).documents:
            if doc.kind == "wiki":
                sections = wiki_chunks(doc)
                chunks[doc.id] = [f"{project.name}/{doc.id}#{n}" for n in range(len(sections))]
                texts.update(zip(chunks[doc.id], sections, strict=True))
        for line in (project / "questions.jsonl").read_text().splitlines():
            if line.strip():
                q = json.loads(line)
                pages = sorted((page for page in q["relevant"] if page in chunks), key=lambda k: -q["relevant"][k])
                relevant = [item for page in pages for item in chunks[page]]
                pairs.append({"source": "wiki", "db_id": project.name, "query": q["query"], "relevant": relevant})
    return pairs, texts


def best_chunk_first(model, pairs: list[dict], texts: dict[str, str]) -> None:
    """Per wiki question, the chunk of its answering page nearest the question (base model) becomes its
    positive: a page's other sections are about other things, so they are only masked, not pulled closer."""
    import numpy as np

    for pair in {id(pair): pair for pair in pairs}.values():  # a pair repeated (--extra-repeat) is one object
        if pair.get("source") != "wiki" or not pair["relevant"]:
            continue
        page = pair["relevant"][0].split("#", 1)[0]
        own = [item for item in pair["relevant"] if item.split("#", 1)[0] == page]
        vecs = model.encode([pair["query"], *(texts[i] for i in own)], normalize_embeddings=True)
        best = own[int(np.argmax(vecs[1:] @ vecs[0]))]
        pair["relevant"] = [best, *(i for i in pair["relevant"] if i != best)]


def kind_of(item: str) -> str:
    return "column" if item.count(".") >= 2 else "table"


def mine_negatives(model, pairs: list[dict], texts: dict[str, str], rnd: random.Random) -> list[dict[str, list[str]]]:
    """Per question and kind, the base model's five closest same-database items the gold SQL does not use."""
    import numpy as np

    ids = sorted(texts)
    by_db: dict[str, list[int]] = defaultdict(list)
    for i, item in enumerate(ids):
        by_db[item.split("/", 1)[0]].append(i)
    doc_vecs = model.encode([texts[i] for i in ids], batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    q_vecs = model.encode([p["query"] for p in pairs], batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    out = []
    for pair, q in zip(pairs, q_vecs, strict=True):
        rows = by_db[pair["db_id"]]
        order = np.argsort(-(doc_vecs[rows] @ q))
        relevant = set(pair["relevant"])
        close: dict[str, list[str]] = {"table": [], "column": []}
        for j in order:
            item = ids[rows[j]]
            if item not in relevant and len(close[kind_of(item)]) < 5:
                close[kind_of(item)].append(item)
        out.append(close)
    return out


def examples(pairs: list[dict], texts: dict[str, str], negatives: list[dict], rnd: random.Random) -> list[tuple]:
    """(db, question, positive id, negative id, relevant ids): one per question, a table or a column in turn."""
    by_db_kind: dict[tuple[str, str], list[str]] = defaultdict(list)
    for item in texts:
        by_db_kind[(item.split("/", 1)[0], kind_of(item))].append(item)
    out = []
    for n, (pair, close) in enumerate(zip(pairs, negatives, strict=True)):
        relevant = [r for r in pair["relevant"] if r in texts]
        kinds = ("table", "column") if n % 2 == 0 else ("column", "table")
        for kind in kinds:
            positives = [r for r in relevant if kind_of(r) == kind]
            pool = close[kind] if close[kind] and rnd.random() < 0.7 else None
            if pool is None:
                pool = [i for i in by_db_kind[(pair["db_id"], kind)] if i not in relevant]
            if positives and pool:
                positive = positives[0] if kind == "table" else rnd.choice(positives)
                out.append((pair["db_id"], pair["query"], positive, rnd.choice(pool), frozenset(relevant)))
                break
    return out


def batches(items: list[tuple], size: int, per_db: int, rnd: random.Random) -> list[list[tuple]]:
    """Batches of ``per_db`` questions from each of several databases: in-batch negatives from the same
    database are the hard ones (what is relevant to another question of the batch is masked in the loss)."""
    pools: dict[str, list[tuple]] = defaultdict(list)
    for item in items:
        pools[item[0]].append(item)
    groups = []
    for pool in pools.values():
        rnd.shuffle(pool)
        groups.extend(pool[i : i + per_db] for i in range(0, len(pool), per_db))
    rnd.shuffle(groups)
    out, current = [], []
    for group in groups:
        current.extend(group)
        if len(current) >= size:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def masked_ranking_loss(queries, docs, batch: list[tuple], scale: float = 20.0):
    """Multiple-negatives ranking loss (softmax over every positive and hard negative of the batch) with the
    documents that are relevant to a question, other than its own positive, removed from its negatives."""
    import torch

    ids = [item[2] for item in batch] + [item[3] for item in batch]
    scores = scale * queries @ docs.T
    mask = torch.tensor([[j != i and ids[j] in item[4] for j in range(len(ids))] for i, item in enumerate(batch)])
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.nn.functional.cross_entropy(scores, torch.arange(len(batch)))


def encode(model, texts: list[str]):
    """Normalised sentence embeddings with gradients (SentenceTransformer.encode has none)."""
    import torch

    features = model.preprocess(texts)
    return torch.nn.functional.normalize(model(features)["sentence_embedding"], dim=-1)


def training_sources(
    extra: list[Path] | None, wiki: list[Path] | None, sql_only: bool = False
) -> tuple[list[Path], list[Path]]:
    """The pair files and wiki folders trained on beside the public pairs: those named, else the shipped model's
    (the business pairs and the written wikis), none with ``sql_only``."""
    if sql_only:
        return [], []
    return extra or [BUSINESS], wiki or [WIKIS]


def build_parser() -> argparse.ArgumentParser:
    """The command line; its defaults are the shipped model's recipe."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ARTEFACT)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--per-db", type=int, default=4, help="questions of one database next to each other in a batch")
    parser.add_argument("--max-tokens", type=int, default=128, help="training sequence length (serving keeps 256)")
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument(
        "--limit", type=int, default=0, help="train on the first N text-to-SQL questions alone (smoke runs)"
    )
    parser.add_argument(
        "--extra",
        type=Path,
        action="append",
        help=f"question pairs in train_pairs.jsonl's shape (repeatable; default {BUSINESS.relative_to(REPO)});"
        " held-out databases' are refused",
    )
    parser.add_argument(
        "--wiki",
        type=Path,
        action="append",
        help=f"a folder of wiki projects with questions.jsonl (repeatable; default {WIKIS.relative_to(REPO)})",
    )
    parser.add_argument("--extra-repeat", type=int, default=2, help="times each --extra or --wiki pair is trained on")
    parser.add_argument(
        "--sql-only",
        action="store_true",
        help="train on the text-to-SQL pairs alone, without --extra and --wiki (the model shipped until the "
        "twenty-ninth session)",
    )
    parser.add_argument(
        "--include-heldout",
        action="store_true",
        help="also train on the held-out databases of text-to-sql/heldout.json (the shipped model does not)",
    )
    return parser


def main() -> None:
    parser = build_parser()
    args = parser.parse_args()
    if args.sql_only and (args.extra or args.wiki):
        parser.error("--sql-only trains without --extra and --wiki: drop one or the other")
    args.extra, args.wiki = training_sources(args.extra, args.wiki, args.sql_only or bool(args.limit))

    import torch
    from sentence_transformers import SentenceTransformer

    from ktx_index.embedding.embedder import MiniLMEmbedder

    rnd = random.Random(args.seed)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    started = time.monotonic()
    pairs = load_pairs(args.include_heldout)
    if args.limit:
        pairs = pairs[: args.limit]
    pairs += [pair for path in args.extra for pair in load_extra(path, args.include_heldout)] * args.extra_repeat
    texts = document_texts({p["db_id"] for p in pairs})
    for root in args.wiki:
        more, chunk_texts = wiki_pairs(root)
        pairs += more * args.extra_repeat
        texts.update(chunk_texts)
    model = SentenceTransformer(str(MiniLMEmbedder.base_model_dir()), device="cpu")
    best_chunk_first(model, pairs, texts)
    negatives = mine_negatives(model, pairs, texts, rnd)
    print(f"{len(pairs)} questions, {len(texts)} documents, negatives mined in {time.monotonic() - started:.0f} s")

    transformer = model[0].auto_model
    for name, param in transformer.named_parameters():
        param.requires_grad = not name.startswith(FROZEN_PREFIXES)
    model.max_seq_length = args.max_tokens
    trainable = [p for p in transformer.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=args.lr, weight_decay=0.01)
    plan = [
        b
        for _ in range(args.epochs)
        for b in batches(examples(pairs, texts, negatives, rnd), args.batch, args.per_db, rnd)
    ]
    warmup = max(1, len(plan) // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup, max(0.0, (len(plan) - step) / (len(plan) - warmup)))
    )
    model.train()
    for step, batch in enumerate(plan):
        queries = encode(model, [item[1] for item in batch])
        docs = encode(model, [texts[item[2]] for item in batch] + [texts[item[3]] for item in batch])
        value = masked_ranking_loss(queries, docs, batch)
        value.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if step % 50 == 0 or step == len(plan) - 1:
            print(f"step {step + 1}/{len(plan)} loss {value.item():.4f} ({time.monotonic() - started:.0f} s)")
    model.eval()
    save_delta(transformer, args.out)
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()[:16]
    size = args.out.stat().st_size / 1e6
    print(f"wrote {args.out} ({size:.1f} MB, sha256 {digest}) in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
