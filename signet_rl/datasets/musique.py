"""MuSiQue multi-hop questions over a passage pool with HippoRAG's OpenIE triples, as one graph.

Files are found by pattern under ``<root>/hipporag``: questions in ``musique_*.json`` (not
``*_corpus.json``), passages in ``*_corpus.json`` (a list of ``{title, text}``) and OpenIE output in
``openie_*.json`` (``docs[i] = {title, text, extracted_entities, extracted_triples}``). Several
files of a kind are pooled; nothing assumes which files exist.

* **Memories** — one per pooled passage (unique by ``(title, text)``), id ``p<i>``, content
  ``"<title>\\n<text>"``, ``source_type`` ``musique_passage``, ``source_id`` the title.
* **Entities** — every OpenIE entity and triple argument, normalised (Unicode NFKC, lower case,
  whitespace collapsed and stripped); one entity per normalised string, ``entity_type``
  ``extracted``.
* **Dependencies** — one per well-formed triple, ``subject -[predicate]-> object``, reason
  ``pattern-matched`` (confidence 0.5, which the default traversal threshold admits) and strength
  0.5. Dependencies have no memory column, so the passage each came from is kept twice: the passage
  mentions both arguments, and ``graph.meta["dependency_memory"]`` lists the memory id of each
  dependency in row order.
* **Mentions** — a passage mentions its extracted entities and its triples' arguments.
* **The extracted graph** (the default, issue 24; ``extract=False`` leaves it out) —
  :mod:`signet_rl.datasets.extract` on the passages (title, then text; no speaker, no session), laid over
  the OpenIE graph by :func:`~signet_rl.datasets.extract.merge_graphs`: an extracted entity whose normalised
  name is an OpenIE entity's *is* that entity; the others, the co-mention and verb-typed dependencies
  (after the OpenIE rows), topic aspects and attributes (each passage's whole text, provenance
  ``memory_id``) are added.

Queries: one per question, id = MuSiQue's id, split ``test`` (a 100-question tuning set: use
:meth:`~signet_rl.datasets.base.Dataset.kfold` to learn on it). Their truth needs the memories of
the supporting paragraphs, matched by ``(title, text)``; ``answers`` are the answer and its aliases,
``category`` the id prefix (``2hop``, ``3hop1``, ...) and ``hops`` its leading digit.

Malformed input is counted in the :class:`~signet_rl.datasets.base.LoadReport`: triples of the wrong
arity, with NaN, empty or non-string parts, empty entity strings, OpenIE documents or supporting
paragraphs that match no passage, and bare ``NaN`` values in the OpenIE file (HippoRAG writes
``"avg_ent_chars": NaN``, which is not strict JSON).
"""

from __future__ import annotations

import json
import math
import re
import time
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from signet_rl.core.paths import DATA_ENV
from signet_rl.core.types import Query
from signet_rl.datasets.base import Dataset, DatasetNotFoundError, GroundTruth, LoadReport, Truth
from signet_rl.datasets.extract import ExtractConfig, MemoryText, extract_graph, merge_graphs
from signet_rl.graph.confidence import Reason
from signet_rl.graph.model import EPOCH, EntityType, KnowledgeGraph

__all__ = ["load_musique", "normalise_entity"]

_SPACE = re.compile(r"\s+")
_HOPS = re.compile(r"^(\d+)hop")


def normalise_entity(text: str) -> str:
    """The key an entity string is merged under: NFKC, lower case, whitespace collapsed, stripped.

        >>> normalise_entity("  American  Institute of Physics ")
        'american institute of physics'
    """
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip().lower()


def _is_bad(value: object) -> str | None:
    """Why ``value`` cannot be a triple part or entity string, or None if it can."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if not isinstance(value, str):
        return f"non-string ({type(value).__name__})"
    if not normalise_entity(value):
        return "empty"
    return None


def _find_nan(value: object, path: str) -> list[str]:
    """JSON paths of bare NaN / Infinity numbers in a parsed JSON value (``docs`` not searched)."""
    if isinstance(value, float) and not math.isfinite(value):
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() if k != "docs" for p in _find_nan(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _find_nan(v, f"{path}[{i}]")]
    return []


def _read_json(path: Path, report: LoadReport) -> Any:
    report.files.append(str(path))
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)  # Python's json accepts the bare NaN HippoRAG writes


def _not_found(path: Path, why: str) -> DatasetNotFoundError:
    return DatasetNotFoundError(
        f"musique: {why} at {path}; set {DATA_ENV} to the folder holding hipporag/ "
        "(musique_*.json, *_corpus.json, openie_*.json)")


def load_musique(root: Path, extract: bool = True, extract_encoder: str = "minilm") -> Dataset:
    """Load the MuSiQue questions, their passage pool and its OpenIE triples as one graph.

    Args:
        root: the data root (see :func:`~signet_rl.core.paths.data_root`).
        extract: lay the graph :mod:`signet_rl.datasets.extract` builds from the passages over the OpenIE
            graph (default): its entities merge with OpenIE's by normalised name, its co-mention
            dependencies, aspects and attributes are added (``graph.meta["dependency_memory"]`` still lists
            the OpenIE dependencies, which come first). ``False`` gives the OpenIE graph alone.
        extract_encoder: the encoder the extractor compares names with (``minilm``, else ``hashing``).

    Returns:
        A :class:`Dataset` named ``musique`` with one graph keyed ``"main"`` and one ``test`` query
        per question.

    Raises:
        DatasetNotFoundError: the ``hipporag`` folder, its question files or its corpus are missing.
    """
    t0 = time.perf_counter()
    folder = Path(root) / "hipporag"
    if not folder.is_dir():
        raise _not_found(folder, "no HippoRAG/MuSiQue folder")
    corpus_files = sorted(folder.glob("*_corpus.json"))
    question_files = [p for p in sorted(folder.glob("musique_*.json")) if p not in corpus_files]
    openie_files = sorted(folder.glob("openie_*.json"))
    if not question_files:
        raise _not_found(folder, "no musique_*.json question file")
    if not corpus_files:
        raise _not_found(folder, "no *_corpus.json passage file")
    report = LoadReport()

    # -- passages -> memories -------------------------------------------------------------------
    passage_of: dict[tuple[str, str], str] = {}
    memories: list[dict[str, Any]] = []
    for path in corpus_files:
        for k, doc in enumerate(_read_json(path, report)):
            title, text = doc.get("title"), doc.get("text")
            if not isinstance(title, str) or not isinstance(text, str):
                report.add(path, f"[{k}]", "passage without string title and text")
                continue
            if (title, text) in passage_of:
                continue  # the same passage pooled from another file
            mid = f"p{len(memories)}"
            passage_of[(title, text)] = mid
            memories.append({"id": mid, "content": f"{title}\n{text}", "source_id": title,
                             "source_type": "musique_passage"})

    # -- OpenIE -> entities, dependencies, mentions ---------------------------------------------
    surface: dict[str, Counter[str]] = {}
    mention_rows: dict[tuple[str, str], str] = {}
    dep_src: list[str] = []
    dep_dst: list[str] = []
    dep_type: list[str] = []
    dep_memory: list[str] = []
    for path in openie_files:
        data = _read_json(path, report)
        for where in _find_nan(data, "$"):
            report.add(path, where, "bare NaN (not strict JSON)", action="ignored")
        docs = data.get("docs", []) if isinstance(data, dict) else data
        for i, doc in enumerate(docs):
            found = passage_of.get((doc.get("title"), doc.get("text")))
            if found is None:
                report.add(path, f"docs[{i}] {doc.get('title')!r}",
                           "OpenIE document matches no corpus passage")
                continue
            mid = found
            for k, ent in enumerate(doc.get("extracted_entities") or []):
                bad = _is_bad(ent)
                if bad:
                    report.add(path, f"docs[{i}] entity {k}: {ent!r}", f"entity is {bad}")
                    continue
                key = normalise_entity(ent)
                surface.setdefault(key, Counter())[ent.strip()] += 1
                mention_rows.setdefault((mid, key), ent.strip())
            for k, triple in enumerate(doc.get("extracted_triples") or []):
                row = f"docs[{i}] triple {k}: {triple!r}"
                if not isinstance(triple, list | tuple) or len(triple) != 3:
                    n = len(triple) if isinstance(triple, list | tuple) else "not a list"
                    report.add(path, row, f"triple of arity {n}")
                    continue
                bad = next((b for b in map(_is_bad, triple) if b), None)
                if bad:
                    report.add(path, row, f"triple part is {bad}")
                    continue
                subj, pred, obj = (str(x).strip() for x in triple)
                for arg in (subj, obj):
                    key = normalise_entity(arg)
                    surface.setdefault(key, Counter())[arg] += 1
                    mention_rows.setdefault((mid, key), arg)
                dep_src.append(normalise_entity(subj))
                dep_dst.append(normalise_entity(obj))
                dep_type.append(_SPACE.sub(" ", pred))
                dep_memory.append(mid)

    keys = sorted(surface)
    ent_id = {key: f"e{i}" for i, key in enumerate(keys)}
    mention_count = Counter(key for _, key in mention_rows)
    entities = pd.DataFrame({
        "id": [ent_id[k] for k in keys], "name": keys, "canonical_name": keys,
        "entity_type": EntityType.EXTRACTED,
        "description": [surface[k].most_common(1)[0][0] for k in keys],
        "mentions": [mention_count[k] for k in keys]})
    n_dep = len(dep_src)
    dependencies = pd.DataFrame({
        "id": [f"d{j}" for j in range(n_dep)],
        "source_entity_id": [ent_id[k] for k in dep_src],
        "target_entity_id": [ent_id[k] for k in dep_dst],
        "dependency_type": dep_type,
        "strength": np.full(n_dep, 0.5), "confidence": np.full(n_dep, Reason.PATTERN_MATCHED.prior),
        "reason": Reason.PATTERN_MATCHED.value,
        "created_at": np.full(n_dep, EPOCH.to_datetime64()).astype("datetime64[ms]")})
    mentions = pd.DataFrame({
        "memory_id": [m for m, _ in mention_rows], "entity_id": [ent_id[k] for _, k in
        mention_rows], "mention_text": list(mention_rows.values()), "confidence": 0.5})

    # -- questions -> queries ---------------------------------------------------------------------
    queries: list[Query] = []
    truths: list[Truth] = []
    for path in question_files:
        for k, q in enumerate(_read_json(path, report)):
            qid = str(q.get("id", f"{path.stem}:{k}"))
            if any(x.id == qid for x in queries):
                report.add(path, f"[{k}] {qid}", "duplicate question id")
                continue
            needed: list[str] = []
            for para in q.get("paragraphs") or []:
                if not para.get("is_supporting"):
                    continue
                support = passage_of.get((para.get("title"), para.get("paragraph_text")))
                if support is None:
                    report.add(path, f"[{k}] {qid} paragraph {para.get('idx')}",
                               "supporting paragraph matches no corpus passage", action="dropped")
                elif support not in needed:
                    needed.append(support)
            prefix = qid.split("__", 1)[0]
            hops_match = _HOPS.match(prefix)
            answers = [str(a) for a in [q.get("answer"), *(q.get("answer_aliases") or [])]
                       if a is not None and str(a).strip()]
            queries.append(Query(id=qid, text=str(q.get("question", "")), graph_id="main",
                                 split="test"))
            truths.append(Truth(query_id=qid, needed=tuple(needed), needed_kind="memory",
                                category=prefix if hops_match else None,
                                hops=int(hops_match.group(1)) if hops_match else None,
                                answers=tuple(dict.fromkeys(answers))))

    meta: dict[str, Any] = {
        "dataset": "musique", "folder": str(folder),
        "files": {"questions": [str(p) for p in question_files],
                  "corpus": [str(p) for p in corpus_files],
                  "openie": [str(p) for p in openie_files]},
        "dependency_memory": dep_memory,
    }
    graph = KnowledgeGraph.from_frames(memories=pd.DataFrame(memories), entities=entities,
                                       dependencies=dependencies, mentions=mentions, meta=meta)
    if extract:
        texts = [MemoryText(id=m["id"], text=m["content"].replace("\n", ". ", 1), content=m["content"])
                 for m in memories]
        source_of = dict(zip(graph.dependencies["id"].astype(str), dep_memory, strict=True))
        graph = merge_graphs(graph, extract_graph(texts, ExtractConfig(encoder=extract_encoder)))
        # an OpenIE triple keeps its source passage; an extracted co-mention edge has none of its own
        graph.meta["dependency_memory"] = [source_of.get(d) for d in graph.dependencies["id"].astype(str)]
        meta = graph.meta
    ds_meta = {k: v for k, v in meta.items() if k != "dependency_memory"}
    ds_meta["counts"] = {"memories": len(memories), "entities": graph.num_entities,
                         "openie_entities": len(entities), "dependencies": len(graph.dependencies),
                         "openie_dependencies": n_dep, "mentions": len(graph.mentions),
                         "queries": len(queries),
                         "malformed": len(report.malformed)}
    ds_meta["options"] = {"extract": extract, "extract_encoder": extract_encoder}
    ds_meta["load_seconds"] = round(time.perf_counter() - t0, 3)
    return Dataset(name="musique", graphs={"main": graph}, queries=queries,
                   truth=GroundTruth(truths), report=report, meta=ds_meta)
