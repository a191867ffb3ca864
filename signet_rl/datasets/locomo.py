"""LoCoMo long conversations as agent-memory graphs, one per conversation, with their QA as queries.

Every ``*.json`` file under ``<root>/locomo`` is read; each holds a list of samples in the upstream
``data/locomo10.json`` layout (``sample_id``, ``conversation``, ``observation``,
``session_summary``, ``event_summary``, ``qa``). Nothing assumes which or how many conversations
exist. Each sample becomes one :class:`~signet_rl.graph.model.KnowledgeGraph` keyed by its
``sample_id``:

* **Memories** — one per turn, id ``<sample_id>:<dia_id>`` (``source_id`` = ``dia_id``,
  ``source_type`` = ``locomo_turn``, ``who`` = the speaker, ``tags`` = ``session_<n>``). The content
  is ``"<speaker>: <text>"``, followed by ``[shares an image: <blip_caption>]`` when the turn shares
  an image. ``created_at`` is the session's date-time ("1:56 pm on 8 May, 2023") plus one second per
  turn index, so turns keep their order.
* **The extracted graph** (the default, issue 24) — :mod:`signet_rl.datasets.extract` on the turns (text
  plus image caption, speaker, session number, time): the speakers (``person:<name>``), named entities and
  salient noun phrases resolved into entities, co-mention and verb-typed dependencies, topic aspects whose
  attributes carry each turn's whole content (provenance ``memory_id``), and the session DAG (session
  entities ``session:<n>`` with ``next_session`` dependencies and one ``turns`` attribute per turn). Every
  turn mentions its speaker (confidence 1.0) and its session. ``extract=False`` gives the loader before
  issue 24 instead: the speakers and the capitalised-name heuristic below (``extracted``, confidence 0.5),
  nothing else.
* **LoCoMo's own observations and summaries** (``observations=True``, off by default) — one entity for the
  conversation itself (``concept``, owner of the session summaries) and attributes under aspects keyed
  ``<entity id>/<aspect name>``:
  ``observations`` of a speaker (LoCoMo's per-session observations; ``memory_id`` = the first
  evidence turn, the provenance), ``events`` of a speaker (the per-session event summaries;
  ``memory_id`` = the session's last turn, since an event summarises the session) and
  ``session_summaries`` of the conversation entity (``memory_id`` = the session's last turn). Their
  ``created_at`` is the time of the turn they cite. Observations citing several turns keep the first
  as provenance. Then ``meta["pool_attribute_aspects"]`` is ``["observations"]`` (flat retrieval pools them)
and ``meta["evidence_attribute_aspects"]`` every aspect but the summaries; without them nothing is pooled
and every attribute (each carries a turn's whole text) is evidence for its turn (``None``).

Queries: one per QA item, id ``<sample_id>:q<i>``, split ``test``, asked one hour after the
conversation's last turn. Their :class:`~signet_rl.datasets.base.Truth` needs the evidence turns'
memories; ``category`` is LoCoMo's code as a name (1 multi-hop, 2 temporal, 3 open-domain, 4
single-hop, 5 adversarial); ``answers`` holds ``answer`` (or ``adversarial_answer``) as a string.

Evidence ids are parsed leniently: ``"D8:6; D9:17"`` gives two ids, ``"D:11:26"`` gives ``D11:26``,
a missing ``D`` or leading zeros are tolerated. Every id that had to be repaired, that points at no
turn, or that cannot be read at all (``"D"``) is recorded in the
:class:`~signet_rl.datasets.base.LoadReport` with the file, ``sample_id``, question index and the
bad id.

**The old entity heuristic** (``extract=False``) is dependency-free, not NER: within each sentence, runs of
capitalised words (joined across ``of``/``the``/``de``/``&``) are candidate names; a run's first
word is dropped when it opens the sentence (capitalised only by position), possessive ``'s`` is
stripped, and stop words (pronouns, greetings, interjections, weekdays and months, common sentence
openers) break a run and are never part of a name. Names are matched case-insensitively; a name
equal to a speaker's full or first name, or a one-word prefix of exactly one speaker's first name
("Mel", "Caro"), is a mention of that speaker, not a new entity. What it misses: names that open a
sentence and are one word long ("Paris is lovely"), lower-case names (``blip_caption`` text, "mom's
cooking"), nicknames that are not prefixes ("Jo" vs "Joanna" works, "Bob" for Robert does not),
pronoun references ("she", "my sister"), and it keeps capitalised non-names inside sentences
(emphasised words, song and book titles, "Pride").
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from signet_rl.core.paths import DATA_ENV
from signet_rl.core.types import Query
from signet_rl.datasets.base import Dataset, DatasetNotFoundError, GroundTruth, LoadReport, Truth
from signet_rl.datasets.extract import ExtractConfig, MemoryText, extract_graph, merge_graphs
from signet_rl.graph.model import EntityType, KnowledgeGraph

__all__ = [
    "CATEGORIES",
    "extract_names",
    "first_sessions",
    "load_locomo",
    "parse_evidence",
    "parse_session_time",
]

#: LoCoMo's QA category codes (as in the upstream evaluation code and the paper's Table 5).
CATEGORIES: dict[int, str] = {
    1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial",
}

_SESSION = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"^D(\d+):(\d+)$")
_EVIDENCE = re.compile(r"D?\s*:?\s*(\d+)\s*:\s*(\d+)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[A-Za-z0-9][\w'’&.\-]*")
_CONNECTORS = frozenset({"of", "the", "de", "&", "van", "von", "la", "del"})
_STOP_WORDS = """
i i'm i've i'll i'd im ive ill id me my mine you your yours he she it we they them his her its
our their hey hi hello yes yeah yep no nope oh ooh wow ok okay thanks thank sure well so but and
or if when what why how who where which that this these those there here hmm haha lol omg aw aww
awesome great cool nice good love congrats congratulations sorry please absolutely definitely
totally really just also monday tuesday wednesday thursday friday saturday sunday mon tue tues
wed thu thur thurs fri sat sun january february march april may june july august september
october november december mom dad mum mama papa bro dude guys folks god a an the as at by for
from in on to with after before during since until not all any some every each
"""
_STOP = frozenset(_STOP_WORDS.split())


def parse_session_time(text: str) -> pd.Timestamp | None:
    """Parse a LoCoMo session date-time such as ``"1:56 pm on 8 May, 2023"`` (UTC), or None."""
    try:
        return pd.Timestamp(pd.to_datetime(text, format="%I:%M %p on %d %B, %Y", utc=True))
    except (ValueError, TypeError):
        pass
    try:
        return pd.Timestamp(pd.to_datetime(str(text).replace(" on ", " "), utc=True))
    except (ValueError, TypeError):
        return None


def parse_evidence(raw: object) -> tuple[list[str], bool]:
    """Turn ids in one evidence string: ``("D8:6; D9:17")`` -> ``(["D8:6", "D9:17"], True)``.

    Returns:
        The canonical ``D<session>:<turn>`` ids found, and whether the string had to be repaired (it
        was not exactly one canonical id).
    """
    text = str(raw).strip()
    found = [f"D{int(s)}:{int(t)}" for s, t in _EVIDENCE.findall(text)]
    return found, not (len(found) == 1 and found[0] == text)


def extract_names(text: str) -> list[str]:
    """Capitalised name spans in ``text``, by the heuristic the module docstring describes.

        >>> extract_names("Yesterday I went to the Museum of Modern Art with John. Paris is far.")
        ['Museum of Modern Art', 'John']
    """
    out: list[str] = []
    for sentence in _SENTENCE.split(text):
        words = _WORD.findall(sentence)
        run: list[str] = []
        for pos, raw in enumerate([*words, ""]):
            w = raw.rstrip(".-'’")
            if w.endswith(("'s", "’s")):
                w, end_after = w[:-2], True
            else:
                end_after = False
            capital = (bool(w) and w[0].isupper() and pos > 0
                       and w.lower().replace("’", "'") not in _STOP)
            if capital:
                run.append(w)
            elif run and w.lower() in _CONNECTORS and not end_after:
                run.append(w)
                continue
            if run and (not capital or end_after):
                while run and run[-1].lower() in _CONNECTORS:
                    run.pop()
                if run and not all(r.lower() in _STOP for r in run):
                    out.append(" ".join(run))
                run = []
    return out


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "x"


def _not_found(path: Path, why: str) -> DatasetNotFoundError:
    return DatasetNotFoundError(
        f"locomo: {why} at {path}; set {DATA_ENV} to the folder holding locomo/*.json "
        "(the upstream data/locomo10.json layout)")


class _ConversationBuilder:
    """Builds one conversation's tables; collects problems in the shared report."""

    def __init__(self, sample: dict[str, Any], file: Path, report: LoadReport, heuristic: bool = False,
                 observations: bool = True) -> None:
        self.sample, self.file, self.report = sample, file, report
        self.heuristic, self.observations = heuristic, observations
        self.texts: list[MemoryText] = []
        self.sid = str(sample["sample_id"])
        self.memories: list[dict[str, Any]] = []
        self.entities: dict[str, dict[str, Any]] = {}
        self.aspects: dict[str, dict[str, Any]] = {}
        self.attributes: list[dict[str, Any]] = []
        self.mentions: dict[tuple[str, str], dict[str, Any]] = {}
        self.turn_time: dict[str, pd.Timestamp] = {}
        self.session_last: dict[int, str] = {}
        self.session_time: dict[int, pd.Timestamp] = {}

    def mid(self, dia_id: str) -> str:
        return f"{self.sid}:{dia_id}"

    def entity(self, eid: str, name: str, etype: str, when: pd.Timestamp) -> str:
        if eid not in self.entities:
            self.entities[eid] = {"id": eid, "name": name, "entity_type": etype, "created_at": when,
                                  "canonical_name": name.lower()}
        return eid

    def mention(self, memory_id: str, entity_id: str, text: str, conf: float,
                when: pd.Timestamp) -> None:
        key = (memory_id, entity_id)
        if key not in self.mentions:
            self.mentions[key] = {"memory_id": memory_id, "entity_id": entity_id,
                                  "mention_text": text, "confidence": conf, "created_at": when}

    def aspect(self, entity_id: str, name: str, when: pd.Timestamp) -> str:
        aid = f"{entity_id}/{name}"
        if aid not in self.aspects:
            self.aspects[aid] = {"id": aid, "entity_id": entity_id, "name": name,
                                 "canonical_name": name, "created_at": when}
        return aid

    def where(self, what: str) -> str:
        return f"{self.sid} {what}"

    # -- turns

    def build_turns(self) -> None:
        conv = self.sample.get("conversation", {})
        speakers = [str(conv[k]) for k in ("speaker_a", "speaker_b") if conv.get(k)]
        sessions = sorted((int(m.group(1)), k) for k in conv if (m := _SESSION.match(k)))
        first = None
        for _, key in sessions:
            t0 = parse_session_time(conv.get(f"{key}_date_time", ""))
            if t0 is not None:
                first = t0
                break
        if first is None:
            first = pd.Timestamp("1970-01-01", tz="UTC")
        self.speaker_ids = {s: f"person:{_slug(s)}" for s in speakers}
        for s, eid in self.speaker_ids.items():
            self.entity(eid, s, EntityType.PERSON, first)
        if self.observations:  # the owner of the session summaries
            self.entity("conversation", f"conversation {self.sid} ({' & '.join(speakers)})",
                        EntityType.CONCEPT, first)
        # Name (lower case) -> speaker entity, full and first names.
        self.name_to_speaker = {s.lower(): eid for s, eid in self.speaker_ids.items()}
        for s, eid in self.speaker_ids.items():
            self.name_to_speaker.setdefault(s.split()[0].lower(), eid)
        firsts = {s.split()[0].lower(): eid for s, eid in self.speaker_ids.items()}
        surface: dict[str, Counter[str]] = {}
        extracted: list[tuple[str, str, pd.Timestamp]] = []
        prev = first
        for n, key in sessions:
            raw_time = conv.get(f"{key}_date_time")
            t0 = parse_session_time(raw_time) if raw_time is not None else None
            if t0 is None:
                t0 = prev + pd.Timedelta(days=1)
                self.report.add(self.file, self.where(f"{key}_date_time {raw_time!r}"),
                                "session date-time missing or unreadable",
                                action="kept, timed one day after the previous session")
            self.session_time[n] = t0
            turns = conv[key] if isinstance(conv[key], list) else []
            for i, turn in enumerate(turns):
                dia = str(turn.get("dia_id", ""))
                m = _DIA_ID.match(dia)
                if not m:
                    self.report.add(self.file, self.where(f"{key}[{i}] dia_id {dia!r}"),
                                    "turn id not of the form D<session>:<turn>", action="skipped")
                    continue
                if self.mid(dia) in self.turn_time:
                    self.report.add(self.file, self.where(f"{key}[{i}] dia_id {dia!r}"),
                                    "duplicate turn id", action="skipped")
                    continue
                speaker = str(turn.get("speaker", ""))
                text = str(turn.get("text", ""))
                when = t0 + pd.Timedelta(seconds=i)
                content = f"{speaker}: {text}"
                if turn.get("blip_caption"):
                    content += f" [shares an image: {turn['blip_caption']}]"
                memory_id = self.mid(dia)
                self.memories.append({
                    "id": memory_id, "content": content, "who": speaker or None,
                    "project": self.sid, "source_id": dia, "source_type": "locomo_turn",
                    "tags": f"session_{n}", "created_at": when})
                self.turn_time[memory_id] = when
                self.session_last[n] = memory_id
                sp = self.speaker_ids.get(speaker)
                if sp is None and speaker:
                    sp = self.speaker_ids[speaker] = self.entity(
                        f"person:{_slug(speaker)}", speaker, EntityType.PERSON, when)
                    self.report.add(self.file, self.where(f"{key}[{i}] speaker {speaker!r}"),
                                    "turn speaker is neither speaker_a nor speaker_b",
                                    action="kept")
                if sp is not None:
                    self.mention(memory_id, sp, speaker, 1.0, when)
                analysed = text + (f" {turn['blip_caption']}." if turn.get("blip_caption") else "")
                self.texts.append(MemoryText(id=memory_id, text=analysed, time=when, speaker=speaker or None,
                                             session=n, content=content))
                if not self.heuristic:
                    continue
                for name in extract_names(text):
                    extracted.append((memory_id, name, when))
                    surface.setdefault(name.lower(), Counter())[name] += 1
            prev = t0
        for memory_id, name, when in extracted:
            key = name.lower()
            sp = self.name_to_speaker.get(key)
            if sp is None and len(key) >= 3 and " " not in key:
                # A short form of one speaker's first name ("Mel" for Melanie) is that speaker.
                hits = {eid for first, eid in firsts.items() if first.startswith(key)}
                sp = hits.pop() if len(hits) == 1 else None
            if sp is not None:
                self.mention(memory_id, sp, name, 1.0, when)
                continue
            display = surface[key].most_common(1)[0][0]
            eid = self.entity(f"name:{_slug(key)}", display, EntityType.EXTRACTED, when)
            self.mention(memory_id, eid, name, 0.5, when)

    # -- observations, events, summaries

    def _speaker_entity(self, name: str, where: str) -> str:
        eid = self.speaker_ids.get(name) or self.name_to_speaker.get(name.lower())
        if eid is None:
            when = next(iter(self.session_time.values()), pd.Timestamp("1970-01-01", tz="UTC"))
            eid = self.speaker_ids[name] = self.entity(f"person:{_slug(name)}", name,
                                                       EntityType.PERSON, when)
            self.report.add(self.file, self.where(where), f"unknown speaker {name!r}",
                            action="kept as a new person entity")
        return eid

    def _evidence_memory(self, raw: object, where: str) -> str | None:
        items = raw if isinstance(raw, list) else [raw]
        ids: list[str] = []
        for item in items:
            found, _ = parse_evidence(item)  # "D26:14, D26:34" (several ids) is read as a list
            if not found:
                self.report.add(self.file, self.where(f"{where} evidence {item!r}"),
                                "unreadable evidence id", action="kept without provenance")
            ids.extend(found)
        for dia in ids:
            if self.mid(dia) in self.turn_time:
                return self.mid(dia)
            self.report.add(self.file, self.where(f"{where} evidence {dia!r}"),
                            "evidence id points at no turn", action="next evidence id used")
        return None

    def build_facts(self) -> None:
        for skey, per_speaker in (self.sample.get("observation") or {}).items():
            n = _session_number(skey)
            for speaker, facts in (per_speaker or {}).items():
                eid = self._speaker_entity(speaker, skey)
                for k, fact in enumerate(facts or []):
                    where = f"observation {skey} {speaker}[{k}]"
                    if isinstance(fact, str):
                        text, ev = fact, None
                    elif isinstance(fact, list | tuple) and len(fact) >= 1:
                        text, ev = str(fact[0]), (fact[1] if len(fact) > 1 else None)
                    else:
                        self.report.add(self.file, self.where(where), "unreadable observation")
                        continue
                    memory_id = self._evidence_memory(ev, where) if ev is not None else None
                    if ev is None:
                        self.report.add(self.file, self.where(where), "observation cites no turn",
                                        action="kept without provenance")
                    when = (self.turn_time[memory_id] if memory_id
                            else self.session_time.get(n or -1, _EPOCH))
                    self._fact(eid, "observations", f"{self.sid}:obs:{skey}:{_slug(speaker)}:{k}",
                               text, memory_id, when)
        for skey, events in (self.sample.get("event_summary") or {}).items():
            n = _session_number(skey)
            memory_id = self.session_last.get(n) if n is not None else None
            when = self.turn_time[memory_id] if memory_id else self.session_time.get(n or -1, _EPOCH)
            for speaker, items in (events or {}).items():
                if speaker == "date" or not isinstance(items, list):
                    continue
                eid = self._speaker_entity(speaker, skey)
                for k, text in enumerate(items):
                    self._fact(eid, "events", f"{self.sid}:event:{skey}:{_slug(speaker)}:{k}",
                               str(text), memory_id, when)
        for skey, text in (self.sample.get("session_summary") or {}).items():
            n = _session_number(skey)
            memory_id = self.session_last.get(n) if n is not None else None
            when = self.turn_time[memory_id] if memory_id else self.session_time.get(n or -1, _EPOCH)
            self._fact("conversation", "session_summaries", f"{self.sid}:summary:{skey}",
                       str(text), memory_id, when)

    def _fact(self, entity_id: str, aspect: str, aid: str, text: str, memory_id: str | None,
              when: pd.Timestamp) -> None:
        asp = self.aspect(entity_id, aspect, when)
        self.attributes.append({
            "id": aid, "aspect_id": asp, "memory_id": memory_id, "kind": "attribute",
            "content": text, "normalized_content": text.lower().strip(), "confidence": 0.7,
            "created_at": when})

    # -- queries

    def build_queries(self) -> tuple[list[Query], list[Truth]]:
        last = max(self.turn_time.values(), default=_EPOCH)
        asked = last + pd.Timedelta(hours=1)
        queries, truths = [], []
        for i, qa in enumerate(self.sample.get("qa") or []):
            qid = f"{self.sid}:q{i}"
            if not isinstance(qa, dict):
                self.report.add(self.file, self.where(f"qa[{i}] {_short(qa)}"),
                                f"QA item is {_kind(qa)}, not an object")
                continue
            needed: list[str] = []
            evidence = qa.get("evidence") or []
            if isinstance(evidence, str):  # one id, not a sequence of one-character ids
                self.report.add(self.file, self.where(f"qa[{i}] evidence {evidence!r}"),
                                "evidence is a string, not a list", action="read as one evidence entry")
                evidence = [evidence]
            elif not isinstance(evidence, list):
                self.report.add(self.file, self.where(f"qa[{i}] evidence {_short(evidence)}"),
                                f"evidence is {_kind(evidence)}, not a list", action="dropped")
                evidence = []
            for raw in evidence:
                found, repaired = parse_evidence(raw)
                where = self.where(f"qa[{i}] evidence {raw!r}")
                if not found:
                    self.report.add(self.file, where, "unreadable evidence id", action="dropped")
                    continue
                if repaired:
                    self.report.add(self.file, where, "evidence id written oddly",
                                    action=f"parsed as {', '.join(found)}")
                for dia in found:
                    if self.mid(dia) not in self.turn_time:
                        self.report.add(self.file, self.where(f"qa[{i}] evidence {dia!r}"),
                                        "evidence id points at no turn", action="dropped")
                    elif self.mid(dia) not in needed:
                        needed.append(self.mid(dia))
            code = qa.get("category")
            category = CATEGORIES.get(code) if isinstance(code, int) else None
            if category is None:
                self.report.add(self.file, self.where(f"qa[{i}] category {code!r}"),
                                "unknown QA category", action="kept without category")
            answer = qa.get("answer", qa.get("adversarial_answer"))
            if answer is None:
                self.report.add(self.file, self.where(f"qa[{i}]"), "QA item has no answer",
                                action="kept without answers")
            queries.append(Query(id=qid, text=str(qa.get("question", "")), graph_id=self.sid,
                                 split="test", timestamp=asked,
                                 meta={"sample_id": self.sid, "qa_index": i}))
            truths.append(Truth(query_id=qid, needed=tuple(needed), needed_kind="memory",
                                category=category,
                                answers=() if answer is None else (str(answer),)))
        return queries, truths

    def graph(self, extract: ExtractConfig | None = None) -> KnowledgeGraph:
        """The conversation's graph; with ``extract``, the extracted graph laid over the loader's rows."""
        counts = Counter(m["entity_id"] for m in self.mentions.values())
        entities = pd.DataFrame(list(self.entities.values()))
        entities["mentions"] = entities["id"].map(counts).fillna(0).astype(int)
        meta = {"dataset": "locomo", "sample_id": self.sid, "file": str(self.file),
                "speakers": list(self.speaker_ids)}
        base = KnowledgeGraph.from_frames(
            memories=pd.DataFrame(self.memories), entities=entities,
            aspects=pd.DataFrame(list(self.aspects.values())),
            attributes=pd.DataFrame(self.attributes),
            mentions=pd.DataFrame(list(self.mentions.values())), meta=meta)
        if extract is None:
            return base
        return merge_graphs(base, extract_graph(self.texts, extract))


_EPOCH = pd.Timestamp("1970-01-01", tz="UTC")


def _session_number(key: str) -> int | None:
    m = re.search(r"session_(\d+)", key)
    return int(m.group(1)) if m else None


def first_sessions(sample: dict[str, Any], n: int) -> dict[str, Any]:
    """``sample`` cut to its sessions 1 to ``n``: their turns and date-times, the observations, event and
    session summaries of those sessions, and the QA items whose evidence lies in them alone (an item citing
    no turn is kept). Used by ``max_sessions`` (:func:`load_locomo`); the sample itself is not changed."""
    conv = sample.get("conversation")
    out = dict(sample)
    if isinstance(conv, dict):
        out["conversation"] = {
            k: v for k, v in conv.items() if (m := _session_number(k)) is None or m <= n
        }
    for key in ("observation", "session_summary", "event_summary"):
        block = sample.get(key)
        if isinstance(block, dict):
            out[key] = {k: v for k, v in block.items() if (m := _session_number(k)) is None or m <= n}
    qa = sample.get("qa")
    if isinstance(qa, list):
        kept = []
        for item in qa:
            raw = item.get("evidence") if isinstance(item, dict) else None
            entries = raw if isinstance(raw, list) else [] if raw is None else [raw]
            cited = [int(e.split(":")[0][1:]) for entry in entries for e in parse_evidence(entry)[0]]
            if all(c <= n for c in cited):
                kept.append(item)
        out["qa"] = kept
    return out


def _kind(value: object) -> str:
    """``null``, ``a str``, ``a list``, ... for messages about a JSON value of the wrong type."""
    return "null" if value is None else f"a {type(value).__name__}"


def _short(value: object, n: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."


def _read_json(file: Path) -> Any:
    """The JSON in ``file``; a file that is not UTF-8 or not JSON (a truncated download) is a ValueError
    naming the file, where it breaks, and the way out."""
    try:
        return json.loads(file.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(
            f"locomo: {file} is not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset {err.start}); "
            "re-save it as UTF-8, or move it out of the folder") from None
    except json.JSONDecodeError as err:
        raise ValueError(
            f"locomo: {file} is not valid JSON ({err}); a truncated or partial copy? Replace it, or move it "
            f"out of {file.parent}") from None


def load_locomo(root: Path, extract: bool = True, observations: bool = False,
                extract_encoder: str = "minilm", max_sessions: int | None = None) -> Dataset:
    """Load every LoCoMo JSON file under ``<root>/locomo``: one graph per conversation.

    Args:
        root: the data root (see :func:`~signet_rl.core.paths.data_root`).
        extract: build entities, dependencies, aspects, attributes and the session DAG with
            :mod:`signet_rl.datasets.extract` (the default); ``False`` gives the old capitalised-name
            heuristic (:func:`extract_names`) and nothing else.
        observations: also load LoCoMo's own observations, event summaries and session summaries as
            attributes (and the conversation entity that owns the summaries); off by default.
        extract_encoder: the encoder the extractor compares names with (``minilm``, falling back to
            ``hashing`` when absent; ``describe`` names the fallback).
        max_sessions: keep only sessions 1 to ``max_sessions`` of every conversation and the questions
            whose evidence lies in them (:func:`first_sessions`; dataset option ``max_sessions``, which the
            README's smoke runs use to stay fast); ``None``: every session.

    Returns:
        A :class:`Dataset` named ``locomo`` with graphs keyed by ``sample_id`` and one ``test``
        query per QA item.

    Malformed rows are reported (``dataset.report``) and skipped or repaired: a sample whose
    ``conversation`` is not an object is skipped, one whose ``qa`` is not a list is kept without queries, a QA
    item that is not an object is skipped, an ``evidence`` written as one string is read as one entry.

    Raises:
        DatasetNotFoundError: no ``locomo`` folder or no JSON file in it.
        ValueError: a file that is not UTF-8 or not valid JSON (naming it), no usable conversation at all, or
            a ``max_sessions`` that is not a positive integer.
    """
    if max_sessions is not None and (
        isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1
    ):
        raise ValueError(
            f"locomo: max_sessions={max_sessions!r} must be a positive integer (or null for every session)"
        )
    t0 = time.perf_counter()
    folder = Path(root) / "locomo"
    if not folder.is_dir():
        raise _not_found(folder, "no LoCoMo folder")
    files = sorted(folder.glob("*.json"))
    if not files:
        raise _not_found(folder, "no *.json file")
    report = LoadReport()
    graphs: dict[str, KnowledgeGraph] = {}
    queries: list[Query] = []
    truths: list[Truth] = []
    samples_per_file: dict[str, int] = {}
    for file in files:
        report.files.append(str(file))
        data = _read_json(file)
        samples = data if isinstance(data, list) else [data]
        samples_per_file[file.name] = len(samples)
        for k, sample in enumerate(samples):
            if not isinstance(sample, dict) or "sample_id" not in sample:
                report.add(file, f"sample[{k}]", "not a LoCoMo sample (no sample_id)")
                continue
            sid = str(sample["sample_id"])
            if sid in graphs:
                report.add(file, f"sample[{k}] {sid}", "duplicate sample_id")
                continue
            conv = sample.get("conversation")
            if not isinstance(conv, dict):
                report.add(file, f"sample[{k}] {sid} conversation {_short(conv)}",
                           f"conversation is {_kind(conv)}, not an object of sessions")
                continue
            qa = sample.get("qa")
            if qa is not None and not isinstance(qa, list):
                report.add(file, f"sample[{k}] {sid} qa {_short(qa)}",
                           f"qa is {_kind(qa)}, not a list of QA items", action="kept without queries")
                sample = {**sample, "qa": []}
            if max_sessions is not None:
                sample = first_sessions(sample, max_sessions)
            b = _ConversationBuilder(sample, file, report, heuristic=not extract, observations=observations)
            b.build_turns()
            if observations:
                b.build_facts()
            qs, ts = b.build_queries()
            graphs[sid] = b.graph(ExtractConfig(encoder=extract_encoder) if extract else None)
            queries.extend(qs)
            truths.extend(ts)
    if not graphs:
        problems = "; ".join(f"{m.file}: {m.row}: {m.problem}" for m in report.malformed[:3])
        raise ValueError(f"locomo: no usable conversation in {folder} ({len(files)} file"
                         f"{'s' if len(files) != 1 else ''}); {problems or 'the files hold no samples'}")
    meta: dict[str, Any] = {
        "dataset": "locomo", "folder": str(folder), "samples_per_file": samples_per_file,
        **({"max_sessions": max_sessions} if max_sessions is not None else {}),
        "conversations": list(graphs),
        "counts": {"conversations": len(graphs), "queries": len(queries),
                   "memories": sum(g.num_memories for g in graphs.values()),
                   "entities": sum(g.num_entities for g in graphs.values()),
                   "attributes": sum(len(g.attributes) for g in graphs.values()),
                   "categories": dict(Counter(t.category for t in truths)),
                   "malformed": len(report.malformed)},
        "load_seconds": round(time.perf_counter() - t0, 3),
        # Retrieval searches turns and observations alike; an observation is evidence for the turn it
        # cites, a session summary is not (the LoCoMo paper reports summaries separately).
        "pool_attribute_aspects": ["observations"] if observations else [],
        # Extracted attributes carry their turn's whole content, so they are evidence for it; LoCoMo's
        # session summaries and event summaries are not (they cite the session's last turn).
        "evidence_attribute_aspects": (
            sorted({str(n) for g in graphs.values() for n in g.aspects["name"]}
                   - {"session_summaries", "events"})
            if observations else None),
        "options": {"extract": extract, "observations": observations, "extract_encoder": extract_encoder},
    }
    if extract:
        meta["extract"] = next(iter(graphs.values())).meta.get("extract", {})
    return Dataset(name="locomo", graphs=graphs, queries=queries, truth=GroundTruth(truths),
                   report=report, meta=meta)
