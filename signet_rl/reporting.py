"""Writing report sections into ``docs/results.md`` without silently replacing committed results.

Every report script under ``experiments/`` writes its tables between markers (``<!-- <name>:start -->`` …
``<!-- <name>:end -->``) and goes through :func:`publish`, which:

* splices a section between its markers, adding it (under a heading, or inside a parent section) when it is
  not there yet (:func:`splice`);
* leaves the file untouched when the new section differs from the committed one only in its volatile parts
  (the date of the stamp line, timings a script names), so a rerun of the same protocol changes nothing;
* refuses to replace a committed section written under another protocol (other seeds, budgets, datasets,
  fewer finished runs: each script says what its protocol is, recorded in the section as
  ``<!-- protocol: {...} -->``), naming both, unless ``replace`` is given;
* sends refused and ``scratch`` runs to a scratch copy of the results file under ``runs/scratch/``
  (ignored by git), so short or exploratory runs never touch tracked files.

This module imports nothing from the rest of ``signet_rl``.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "DATE",
    "Outcome",
    "Section",
    "describe",
    "markers",
    "protocol_of",
    "publish",
    "read_section",
    "refusal",
    "splice",
]

#: The date in a section's stamp line (``_Written by ... on 2026-12-02``): never a reason to rewrite.
DATE = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)")
_PROTOCOL = re.compile(r"<!-- protocol: (\{.*?\}) -->")
#: Where refused and exploratory runs write, under the repository root (``runs/`` is ignored).
SCRATCH = Path("runs") / "scratch"


def markers(name: str) -> tuple[str, str]:
    """The start and end markers of section ``name``."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def read_section(text: str, name: str) -> str | None:
    """The body between ``name``'s markers in ``text`` (without the markers), or None when absent."""
    start, end = markers(name)
    if start not in text:
        return None
    body = text.split(start, 1)[1]
    if end not in body:
        raise ValueError(f"section {name!r} has its start marker {start!r} but no end marker {end!r}")
    return body.split(end, 1)[0].strip("\n")


def splice(text: str, name: str, body: str, heading: str | None = None, parent: str | None = None) -> str:
    """``text`` with the part between ``name``'s markers replaced by ``body``. A section not there yet goes
    at the end of section ``parent`` (before its end marker) when given, else at the end of the text under
    ``heading`` (a Markdown heading line) when given. Everything else is left as it is."""
    start, end = markers(name)
    block = f"{start}\n{body}\n{end}"
    if start in text:
        head, rest = text.split(start, 1)
        if end not in rest:
            raise ValueError(f"section {name!r} has its start marker {start!r} but no end marker {end!r}")
        return head + block + rest.split(end, 1)[1]
    if parent is not None:
        pstart, pend = markers(parent)
        if pstart not in text:
            text = splice(text, parent, "", heading=heading)
        head, rest = text.split(pend, 1)
        return f"{head.rstrip(chr(10))}\n{block}\n{pend}{rest}"
    lead = f"{heading}\n\n" if heading else ""
    return text.rstrip() + f"\n\n{lead}{block}\n"


def protocol_of(body: str) -> dict[str, Any] | None:
    """The protocol recorded in a section body (``<!-- protocol: {...} -->``), or None."""
    found = _PROTOCOL.search(body)
    return json.loads(found.group(1)) if found else None


def _value(v: Any) -> str:
    if isinstance(v, list | tuple):
        return ",".join(str(x) for x in v) if v else "(none)"
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


def describe(protocol: Mapping[str, Any] | None) -> str:
    """``{"seeds": [0, 1, 2], "budget": "1200 s"}`` as ``seeds 0,1,2 budget 1200 s``; None as
    ``unrecorded``."""
    if protocol is None:
        return "unrecorded"
    return " ".join(f"{k} {_value(v)}" for k, v in protocol.items())


def refusal(script: str, what: str, committed: Mapping[str, Any] | None, this: Mapping[str, Any] | None,
            scratch: Path | str) -> str:  # fmt: skip
    """The message a script prints when it will not replace a committed result."""
    return (
        f"{script}: not replacing the committed {what} (committed: {describe(committed)}; "
        f"this run: {describe(this)}); its results go to {scratch} instead. Pass --replace to replace it."
    )


@dataclass
class Section:
    """One section a report script writes.

    Args:
        name: the marker name.
        body: the Markdown between the markers (the protocol line is added by :func:`publish`).
        protocol: what makes two runs comparable (seeds, budgets, datasets, ...); None: no protocol check.
        heading: the heading a new section goes under (when not there yet and no ``parent``).
        parent: the section a new one is added into.
        volatile: patterns whose matches may differ without the figures differing (the date is always).
    """

    name: str
    body: str
    protocol: dict[str, Any] | None = None
    heading: str | None = None
    parent: str | None = None
    volatile: Sequence[re.Pattern[str]] = field(default_factory=tuple)

    def text(self) -> str:
        if self.protocol is None:
            return self.body
        return f"<!-- protocol: {json.dumps(self.protocol, sort_keys=False)} -->\n{self.body}"

    def same_figures(self, committed: str) -> bool:
        def norm(s: str) -> str:
            for pattern in (DATE, *self.volatile):
                s = pattern.sub("", s)
            return s.strip()

        return norm(committed) == norm(self.text())


@dataclass
class Outcome:
    """What :func:`publish` did: sections written, left unchanged, refused; the file written."""

    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    path: Path | None = None
    messages: list[str] = field(default_factory=list)


def publish(
    output: str | Path,
    sections: Iterable[Section],
    script: str,
    replace: bool = False,
    scratch: bool = False,
    scratch_dir: str | Path | None = None,
) -> Outcome:
    """Write ``sections`` into ``output`` (see the module docstring) and print what was done.

    Args:
        output: the results file (``docs/results.md``).
        sections: the sections to write.
        script: the script's name, for messages.
        replace: replace committed sections of another protocol.
        scratch: an exploratory run: write every section to the scratch copy, never to ``output``.
        scratch_dir: where the scratch copy goes (default ``<output's repository>/runs/scratch``).

    Returns:
        An :class:`Outcome`. Nothing is written to ``output`` when no section changed figures.
    """
    output = Path(output)
    scratch_root = Path(scratch_dir) if scratch_dir is not None else _repo_of(output) / SCRATCH
    scratch_file = scratch_root / output.name
    text = output.read_text() if output.exists() else "# Results\n"
    new_text = text
    spare: list[Section] = []
    out = Outcome()
    for section in sections:
        if scratch:
            spare.append(section)
            continue
        committed = read_section(text, section.name)
        if committed is None:
            new_text = splice(new_text, section.name, section.text(), section.heading, section.parent)
            out.written.append(section.name)
        elif section.same_figures(committed):
            out.unchanged.append(section.name)
        elif section.protocol is not None and protocol_of(committed) != section.protocol and not replace:
            out.refused.append(section.name)
            out.messages.append(
                refusal(
                    script,
                    f"section {section.name!r} of {_shown(output)}",
                    protocol_of(committed),
                    section.protocol,
                    _shown(scratch_file),
                )
            )
            spare.append(section)
        else:
            new_text = splice(new_text, section.name, section.text(), section.heading, section.parent)
            out.written.append(section.name)
    if new_text != text:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(new_text)
        out.path = output
        out.messages.append(f"wrote {', '.join(out.written)} into {output}")
    if out.unchanged:
        out.messages.append(f"figures unchanged, left as committed: {', '.join(out.unchanged)} in {output}")
    if spare:
        scratch_root.mkdir(parents=True, exist_ok=True)
        stext = scratch_file.read_text() if scratch_file.exists() else "# Scratch results (not committed)\n"
        for section in spare:
            stext = splice(stext, section.name, section.text(), section.heading, section.parent)
        scratch_file.write_text(stext)
        if scratch:
            out.messages.append(f"{script}: scratch run: wrote {scratch_file}; {output} left as it is")
        out.path = out.path or scratch_file
    for message in out.messages:
        print(message, file=sys.stderr if message.startswith(f"{script}: not replacing") else sys.stdout)
    return out


def _shown(path: Path) -> str:
    """``path`` relative to its repository (for messages), else as given."""
    repo = _repo_of(path)
    if not (repo / "pyproject.toml").exists():
        return str(path)
    return str(path.resolve().relative_to(repo))


def _repo_of(path: Path) -> Path:
    """The repository holding ``path`` (the nearest parent with ``pyproject.toml``), else its folder."""
    for parent in path.resolve().parents:
        if (parent / "pyproject.toml").exists():
            return parent
    return path.resolve().parent
