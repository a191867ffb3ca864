"""Knowledge-graph path-reasoning benchmarks in the MINERVA file layout, as one :class:`Dataset`.

A folder ``<root>/kg/<folder>`` holds tab-separated ``head<TAB>relation<TAB>tail`` files:

* ``train.txt``, ``dev.txt`` (or ``valid.txt``), ``test.txt``: the query triples of each split. A
  split file missing from a folder is taken from its parent folder (``umls/umls_inv`` holds only
  ``graph.txt`` and ``vocab/``; its splits are those of ``umls``), up to the ``kg`` folder itself.
* ``graph.txt``: the edges a walker may walk, read from the folder itself; when absent ``train.txt``
  is the graph (ConvE-style folders such as ``countries_S1/conve``).
* ``full_graph.txt``: every known triple, used only to filter other correct answers at ranking time.
* ``vocab/entity_vocab.json``, ``vocab/relation_vocab.json``: MINERVA's id maps; ``PAD``, ``UNK``,
  ``NO_OP`` and ``DUMMY_START_RELATION`` are dropped.

NELL-995 follows MINERVA's ``nell`` setting, recognised from the layout rather than the name: a
folder with ``full_kb/`` and ``nell/`` subfolders and no ``graph.txt``. Its queries come from
``nell/{train,dev,test}.txt``, the walking graph is ``full_kb/train.txt + full_kb/valid.txt`` plus
an inverse ``<rel>_inv`` edge for every triple (150,221 -> 300,442 edges), and answers are filtered
against all of ``full_kb``.

The graph: every entity of the vocabulary and of the triples is an entity whose id and name are the
entity string itself (so query heads, answers and entity ids are the same strings). ``entity_type``
is ``unknown`` unless the id carries a category (NELL ``concept_<category>_<name>``). Every graph
edge is a dependency typed by its relation, reason ``user-asserted`` (a curated KB), confidence and
strength 1.0.

    >>> ds = load_kg("kinship", root=data_root())  # doctest: +SKIP
    >>> len(ds.split("test")), ds.graph.num_entities  # doctest: +SKIP
    (1074, 104)
"""

from __future__ import annotations

import csv
import io
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from signet_rl.core.paths import DATA_ENV
from signet_rl.core.types import Query
from signet_rl.datasets.base import Dataset, DatasetNotFoundError, GroundTruth, LoadReport, Truth
from signet_rl.graph.confidence import Reason
from signet_rl.graph.model import EPOCH, EntityType, KnowledgeGraph

__all__ = ["SPECIAL_TOKENS", "load_kg", "split_triples_in_graph"]

log = logging.getLogger(__name__)

#: MINERVA vocabulary entries that are not entities or relations.
SPECIAL_TOKENS: frozenset[str] = frozenset({"PAD", "UNK", "NO_OP", "DUMMY_START_RELATION"})

_SPLIT_FILES: dict[str, tuple[str, ...]] = {
    "train": ("train.txt",),
    "validation": ("dev.txt", "valid.txt"),
    "test": ("test.txt",),
}
_COLS = ["head", "relation", "tail"]
_NELL_CATEGORY = r"^concept_([^_]+)_."


@dataclass(frozen=True)
class _Layout:
    """Which files one folder loads from."""

    folder: Path
    nell: bool
    splits: dict[str, Path | None]
    graph: list[Path]
    filter_files: list[Path]
    vocab: Path | None


def _empty() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=object) for c in _COLS})


def read_triples(path: Path, report: LoadReport) -> pd.DataFrame:
    """Read a tab-separated triple file into a ``head, relation, tail`` frame.

    Lines with the wrong number of fields or an empty field are recorded in ``report`` (file and
    line number) and skipped; a blank line is recorded too.

    Args:
        path: the file to read.
        report: receives the file name and every malformed line.

    Returns:
        One row per well-formed line, in file order, with a ``line`` column (1-based line number).
    """
    report.files.append(str(path))
    text = _read_utf8(path)
    lines = text.splitlines()
    fast = _read_clean(text, len(lines))
    if fast is not None:
        return fast
    parts = [line.split("\t") for line in lines]
    ok = [len(p) == 3 and bool(p[0].strip()) and bool(p[1].strip()) and bool(p[2].strip())
          for p in parts]
    if not all(ok):
        for i, (good, p) in enumerate(zip(ok, parts, strict=True)):
            if good:
                continue
            problem = (f"expected 3 tab-separated fields, found {len(p)}" if len(p) != 3
                       else "empty field")
            report.add(path, f"line {i + 1}: {lines[i]!r}", problem)
    rows = [[f.strip() for f in p] for p, good in zip(parts, ok, strict=True) if good]
    frame = pd.DataFrame(rows, columns=_COLS, dtype=object) if rows else _empty()
    frame["line"] = np.flatnonzero(np.asarray(ok, dtype=bool)) + 1
    return frame


def _read_utf8(path: Path) -> str:
    """The text of ``path``; a file that is not UTF-8 is an error naming the file, the line and the byte."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ValueError(
            f"{path}: line {line} is not UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start}: "
            f"{err.reason}); KG files are read as UTF-8: re-encode it (e.g. iconv -f latin1 -t utf-8)"
        ) from None


def _drop_duplicate_edges(graph: pd.DataFrame, files: Sequence[Path], report: LoadReport) -> pd.DataFrame:
    """``graph`` with each repeated ``head, relation, tail`` kept once (a repeat would be a parallel edge
    that weighs the triple twice wherever edges are counted); each repeat is reported with its line and
    the line it repeats."""
    dup = graph.duplicated(_COLS, keep="first").to_numpy()
    if not dup.any():
        return graph
    first_line = graph.groupby(_COLS, sort=False)["line"].transform("first")
    source = graph["_file"] if "_file" in graph else pd.Series([str(files[0])] * len(graph))
    for i in np.flatnonzero(dup):
        row = graph.iloc[i]
        report.add(source.iloc[i], f"line {row['line']}: {row['head']}\t{row['relation']}\t{row['tail']}",
                   f"duplicate triple (first on line {first_line.iloc[i]})", action="dropped")
    return graph[~dup].reset_index(drop=True)


def _read_clean(text: str, n_lines: int) -> pd.DataFrame | None:
    """Parse ``text`` with pandas' C reader when every line is a clean triple, else None (the caller
    then reads line by line to report what is wrong)."""
    if n_lines == 0:
        return None
    try:
        frame = pd.read_csv(io.StringIO(text), sep="\t", header=None, names=_COLS, dtype=object,
                            na_filter=False, quoting=csv.QUOTE_NONE, skip_blank_lines=False,
                            engine="c")
    except (pd.errors.ParserError, ValueError):
        return None
    if len(frame) != n_lines:
        return None
    for col in _COLS:
        values = frame[col]
        if values.isna().any():
            return None
        stripped = values.str.strip()
        if (stripped == "").any():
            return None
        frame[col] = stripped.astype(object)
    frame["line"] = np.arange(1, n_lines + 1)
    return frame


def _read_vocab(path: Path) -> list[str]:
    with path.open(encoding="utf-8") as fh:
        vocab: dict[str, int] = json.load(fh)
    return [k for k, _ in sorted(vocab.items(), key=lambda kv: kv[1]) if k not in SPECIAL_TOKENS]


def _available(kg_root: Path) -> list[str]:
    """Folders under ``kg_root`` that look loadable (triples or a NELL layout), relative paths."""
    out = []
    for p in sorted(kg_root.rglob("*")):
        if not p.is_dir() or len(p.relative_to(kg_root).parts) > 3:
            continue
        if any((p / f).is_file() for f in ("train.txt", "graph.txt")) or (
                (p / "full_kb").is_dir() and (p / "nell").is_dir()):
            out.append(p.relative_to(kg_root).as_posix())
    return out


def _find_up(folder: Path, names: Sequence[str], stop: Path) -> Path | None:
    """The first of ``names`` in ``folder``, else in its parents up to (not including) ``stop``."""
    current = folder
    while True:
        for name in names:
            if (current / name).is_file():
                return current / name
        if current == stop or current.parent == current or current.parent == stop:
            return None
        current = current.parent


def _layout(folder_path: Path, kg_root: Path) -> _Layout:
    vocab_dir = folder_path / "vocab"
    vocab = vocab_dir if (vocab_dir / "entity_vocab.json").is_file() else None
    nell = ((folder_path / "full_kb").is_dir() and (folder_path / "nell").is_dir()
            and not (folder_path / "graph.txt").is_file())
    if nell:
        q, kb = folder_path / "nell", folder_path / "full_kb"
        splits = {s: next((q / n for n in names if (q / n).is_file()), None)
                  for s, names in _SPLIT_FILES.items()}
        graph = [kb / n for n in ("train.txt", "valid.txt", "dev.txt") if (kb / n).is_file()]
        filt = [kb / n for n in ("test.txt",) if (kb / n).is_file()]
        return _Layout(folder_path, True, splits, graph, filt, vocab)
    splits = {s: _find_up(folder_path, names, kg_root) for s, names in _SPLIT_FILES.items()}
    if (folder_path / "graph.txt").is_file():
        graph = [folder_path / "graph.txt"]
    elif splits["train"] is not None:
        graph = [splits["train"]]
    else:
        graph = []
    full = folder_path / "full_graph.txt"
    return _Layout(folder_path, False, splits, graph, [full] if full.is_file() else [], vocab)


def _inverse_convention(relations: Sequence[str]) -> str:
    """``"_"`` when relation names mark inverses with a leading underscore (``_term6``), else
    ``"_inv"``."""
    rels = set(relations)
    if any(r.startswith("_") and r[1:] in rels for r in rels):
        return "_"
    return "_inv"


def _inverse_name(relation: pd.Series, convention: str) -> pd.Series:
    return ("_" + relation) if convention == "_" else (relation + "_inv")


def _is_inverse(relation: pd.Series, base: set[str], convention: str) -> pd.Series:
    if convention == "_":
        stripped = relation.str.slice(1)
        return relation.str.startswith("_") & stripped.isin(base)
    stripped = relation.str.slice(0, -4)
    return relation.str.endswith("_inv") & stripped.isin(base)


def _add_inverses(graph: pd.DataFrame, convention: str) -> pd.DataFrame:
    """``graph`` plus the inverse of every base edge whose inverse is not there yet."""
    rels = set(graph["relation"])
    is_inv = _is_inverse(graph["relation"], rels, convention)
    base = graph[~is_inv]
    inv = pd.DataFrame({"head": base["tail"].to_numpy(),
                        "relation": _inverse_name(base["relation"], convention).to_numpy(),
                        "tail": base["head"].to_numpy(), "line": base["line"].to_numpy()})
    key = ["head", "relation", "tail"]
    present = inv.merge(graph[key].drop_duplicates(), on=key, how="left", indicator=True)["_merge"]
    inv = inv[(present == "left_only").to_numpy()]
    return pd.concat([graph, inv], ignore_index=True)


def split_triples_in_graph(graph: pd.DataFrame, queries: pd.DataFrame, convention: str) -> dict[str, int]:
    """How many query triples of one split the walking graph holds, as themselves and as their inverse.

    A walker that can take a test query's own edge ``head -relation-> tail`` (or the inverse edge
    ``tail -relation^-1-> head``) answers it by reading the answer off the graph; MINERVA-layout graphs
    must hold neither. (Walkers may mask the query's own edge at evaluation time; this counts what the
    graph file itself leaks.)

    Args:
        graph: the walking graph's ``head, relation, tail`` rows (after inverses were added or dropped).
        queries: one split's ``head, relation, tail`` rows.
        convention: how the folder names inverse relations (``"_"`` or ``"_inv"``).

    Returns:
        ``{"triples": n, "inverse": m, "queries": len(queries)}``: ``n`` query triples present as edges,
        ``m`` present as their inverse edge.
    """
    key = ["head", "relation", "tail"]
    if len(queries) == 0 or len(graph) == 0:
        return {"triples": 0, "inverse": 0, "queries": len(queries)}
    edges = graph[key].drop_duplicates()
    q = queries[key]
    direct = q.merge(edges, on=key, how="left", indicator=True)["_merge"].eq("both")
    inv = pd.DataFrame({"head": q["tail"].to_numpy(),
                        "relation": _inverse_name(q["relation"], convention).to_numpy(),
                        "tail": q["head"].to_numpy()})
    inverse = inv.merge(edges, on=key, how="left", indicator=True)["_merge"].eq("both")
    return {"triples": int(direct.sum()), "inverse": int(inverse.sum()), "queries": len(queries)}


def _entity_types(ids: pd.Series) -> np.ndarray:
    category = ids.str.extract(_NELL_CATEGORY, expand=False)
    return category.fillna(EntityType.UNKNOWN).to_numpy(dtype=object)


def _not_found(kg_root: Path, folder: str, path: Path) -> DatasetNotFoundError:
    if not kg_root.is_dir():
        return DatasetNotFoundError(
            f"kg:{folder}: no KG data folder at {path} (the data root has no kg/ folder at "
            f"{kg_root}); set {DATA_ENV} to the folder holding kg/, locomo/, hipporag/")
    there = _available(kg_root)
    return DatasetNotFoundError(
        f"kg:{folder}: no MINERVA-layout folder at {path}; folders that exist under {kg_root}: "
        f"{', '.join(there) if there else '(none)'} (set {DATA_ENV} to use another data root)")


def load_kg(folder: str, root: Path, inverse: bool | None = None) -> Dataset:
    """Load one MINERVA-layout KG folder as a single-graph dataset with (e1, r, ?) queries.

    Args:
        folder: path under ``<root>/kg`` (``kinship``, ``countries_S1/conve``, ``umls/umls_inv``).
        root: the data root (see :func:`~signet_rl.core.paths.data_root`).
        inverse: ``None`` keeps the graph file as it is (the NELL layout adds ``<rel>_inv``
            edges, as MINERVA does); ``True`` adds the inverse of every edge that lacks one, named
            ``_<rel>`` when the folder's relations use a leading underscore for inverses (kinship,
            umls) and ``<rel>_inv`` otherwise; ``False`` keeps only base edges (drops the inverse
            edges a file already holds).

    Returns:
        A :class:`Dataset` named ``kg:<folder>`` with one graph keyed ``"main"``, one query per
        split triple (``train:<i>``, ``validation:<i>``, ``test:<i>``) and filtered answer sets in
        its truth.

    Raises:
        DatasetNotFoundError: the folder is missing (naming the path and the folders that exist) or
            holds no graph.
    """
    t0 = time.perf_counter()
    root = Path(root)
    kg_root = root / "kg"
    folder = folder.strip().strip("/")
    path = kg_root / folder
    if not folder or ".." in Path(folder).parts or not path.is_dir():
        raise _not_found(kg_root, folder, path)
    layout = _layout(path, kg_root)
    if not layout.graph:
        raise DatasetNotFoundError(
            f"kg:{folder}: {path} holds no graph.txt and no train.txt (nor does any parent under "
            f"{kg_root}); folders that exist: {', '.join(_available(kg_root))}")
    report = LoadReport()
    read: dict[Path, pd.DataFrame] = {}

    def triples_of(p: Path) -> pd.DataFrame:
        """Each file read (and its malformed rows reported) once, though ``train.txt`` may serve as the
        graph too."""
        if p not in read:
            read[p] = read_triples(p, report)
        return read[p].copy()

    graph = pd.concat([triples_of(p).assign(_file=str(p)) for p in layout.graph], ignore_index=True)
    graph = _drop_duplicate_edges(graph, layout.graph, report).drop(columns="_file")
    splits = {s: (triples_of(p) if p is not None else _empty().assign(line=[]))
              for s, p in layout.splits.items()}
    extra = [triples_of(p) for p in layout.filter_files]
    for split, frame in splits.items():  # a repeated query stays (it is asked twice), but is reported
        repeated = frame.duplicated(_COLS, keep="first").to_numpy()
        for line, h, r, t in frame.loc[repeated, ["line", *_COLS]].itertuples(index=False):
            report.add(layout.splits[split] or split, f"line {line}: {h}\t{r}\t{t}", "duplicate triple",
                       action="kept")
    vocab_entities: list[str] = []
    vocab_relations: list[str] = []
    if layout.vocab is not None:
        report.files.append(str(layout.vocab / "entity_vocab.json"))
        vocab_entities = _read_vocab(layout.vocab / "entity_vocab.json")
        rel_vocab = layout.vocab / "relation_vocab.json"
        if layout.nell and not rel_vocab.is_file():
            rel_vocab = path / "nell" / "vocab" / "relation_vocab.json"
        if rel_vocab.is_file():
            report.files.append(str(rel_vocab))
            vocab_relations = _read_vocab(rel_vocab)

    file_edges = len(graph)
    convention = _inverse_convention([*vocab_relations, *graph["relation"].unique()])
    if layout.nell and convention != "_inv":
        convention = "_inv"
    add = inverse if inverse is not None else layout.nell
    if add:
        graph = _add_inverses(graph, convention)
    elif inverse is False:
        inv = _is_inverse(graph["relation"], set(graph["relation"]), convention)
        graph = graph[~inv.to_numpy()].reset_index(drop=True)
    inverses_added = len(graph) - file_edges if add else 0

    # Entities: the vocabulary first (its id order), then any triple entity it lacks.
    triples = [graph, *splits.values(), *extra]
    seen = pd.unique(pd.concat([pd.Series(vocab_entities, dtype=object)]
                               + [t[c] for t in triples for c in ("head", "tail")],
                               ignore_index=True))
    ent_ids = pd.Series(seen, dtype=object)
    n_ent, n_dep = len(ent_ids), len(graph)
    entities = pd.DataFrame({
        "id": ent_ids, "name": ent_ids, "entity_type": _entity_types(ent_ids),
        "created_at": np.full(n_ent, EPOCH.to_datetime64()).astype("datetime64[ms]")})
    dependencies = pd.DataFrame({
        "id": [f"d{i}" for i in range(n_dep)],
        "source_entity_id": graph["head"].to_numpy(),
        "target_entity_id": graph["tail"].to_numpy(),
        "dependency_type": graph["relation"].to_numpy(),
        "strength": np.ones(n_dep), "confidence": np.full(n_dep, Reason.USER_ASSERTED.prior),
        "reason": np.full(n_dep, Reason.USER_ASSERTED.value, dtype=object),
        "created_at": np.full(n_dep, EPOCH.to_datetime64()).astype("datetime64[ms]")})

    # Entities a query names that the walking graph never touches cannot be reached: report them.
    in_graph = set(graph["head"]).union(graph["tail"])
    for split, frame in splits.items():
        file = layout.splits[split]
        for col in ("head", "tail"):
            missing = ~frame[col].isin(in_graph)
            for line, ent in zip(frame["line"][missing], frame[col][missing], strict=True):
                report.add(file or split, f"line {line}: {ent}",
                           f"query {col} entity not in the graph", action="kept")

    # A test triple in the walking graph hands the walker its answer: count it and warn loudly. Validation
    # triples in the graph are counted and reported too (MINERVA's NELL-995 and Countries graphs hold some),
    # at info level: they make validation, not test, easier.
    leaks = {split: split_triples_in_graph(graph, frame, convention)
             for split, frame in splits.items() if split != "train"}
    for split, leak in leaks.items():
        if leak["triples"] or leak["inverse"]:
            problem = (f"{leak['triples']} of {leak['queries']} {split} triples are edges of the walking "
                       f"graph ({leak['inverse']} more as their inverse edge): a walker can read these "
                       "answers off the graph")
            (log.warning if split == "test" else log.info)("kg:%s: %s", folder, problem)

    # Filtered-ranking answers: every known tail of (head, relation) across all files.
    queries_all = pd.concat([f.assign(split=s, index=np.arange(len(f)))
                             for s, f in splits.items()], ignore_index=True)
    pairs = queries_all[["head", "relation"]].drop_duplicates()
    known = pd.concat([t[_COLS] for t in triples], ignore_index=True)
    known = known.merge(pairs, on=["head", "relation"]).drop_duplicates().sort_values(_COLS)
    answer_lists: dict[tuple[str, str], list[str]] = {}
    for h, r, t in zip(known["head"], known["relation"], known["tail"], strict=True):
        answer_lists.setdefault((h, r), []).append(t)
    answer_of = {k: tuple(v) for k, v in answer_lists.items()}

    queries: list[Query] = []
    truths: list[Truth] = []
    for split, i, h, r, t in zip(queries_all["split"], queries_all["index"], queries_all["head"],
                                 queries_all["relation"], queries_all["tail"], strict=True):
        qid = f"{split}:{i}"
        queries.append(Query(id=qid, text=f"{h} {r} ?", graph_id="main", split=split,
                             meta={"head": h, "relation": r}))
        truths.append(Truth(query_id=qid, needed=(t,), needed_kind="entity",
                            answers=answer_of[(h, r)]))

    relations = vocab_relations or sorted(graph["relation"].unique())
    counts: dict[str, Any] = {
        "entities": n_ent, "dependencies": n_dep, "graph_file_edges": file_edges,
        "inverse_edges_added": inverses_added,
        "duplicate_edges": int(graph.duplicated(_COLS).sum()),
        **{f"queries_{s}": len(f) for s, f in splits.items()},
        "malformed": len(report.malformed),
        **{f"{s}_triples_in_graph": leak["triples"] for s, leak in leaks.items()},
        **{f"{s}_inverse_in_graph": leak["inverse"] for s, leak in leaks.items()},
    }
    meta: dict[str, Any] = {
        "dataset": f"kg:{folder}", "folder": str(path),
        "layout": "nell" if layout.nell else "minerva",
        "relations": relations, "graph_relations": sorted(graph["relation"].unique()),
        "inverse": inverse, "inverses_added": bool(add), "inverse_convention": convention,
        "counts": counts,
        "files": {"graph": [str(p) for p in layout.graph],
                  "splits": {s: (str(p) if p else None) for s, p in layout.splits.items()},
                  "filter": [str(p) for p in layout.filter_files],
                  "vocab": str(layout.vocab) if layout.vocab else None},
    }
    kg = KnowledgeGraph.from_frames(entities=entities, dependencies=dependencies, meta=meta)
    meta["load_seconds"] = round(time.perf_counter() - t0, 3)
    return Dataset(name=f"kg:{folder}", graphs={"main": kg}, queries=queries,
                   truth=GroundTruth(truths), report=report, meta=meta)
