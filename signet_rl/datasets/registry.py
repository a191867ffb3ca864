"""One dataset spec grammar for every entry point (``describe``, Hydra's ``dataset=``, ``gymnasium.make``).

synthetic:<preset>[:seed]   the generated benchmark (presets: tiny, small, medium, xl)
kg:<folder>                 a MINERVA-layout KG folder under <data root>/kg (``kg:umls/umls_inv`` works)
locomo                      every LoCoMo JSON file under <data root>/locomo
musique                     the MuSiQue set with OpenIE triples under <data root>/hipporag
signet:<path to .db>        a real Signet store (read-only), graph only, no queries

>>> parse_spec("synthetic:small:7")
DatasetSpec(kind='synthetic', arg='small', seed=7)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from signet_rl.core.paths import data_root
from signet_rl.datasets.base import Dataset

__all__ = [
    "KINDS",
    "OPTIONS",
    "REPORT_SYNTHETIC_VERSION",
    "DatasetSpec",
    "configured_learning_split",
    "load_dataset",
    "load_test_data",
    "parse_spec",
]

KINDS: tuple[str, ...] = ("synthetic", "kg", "locomo", "musique", "signet")
#: The synthetic generator version the report scripts under ``experiments/`` use unless told otherwise
#: (v1 stays selectable and loadable under its config hash; a plain ``load_dataset`` still builds v1).
REPORT_SYNTHETIC_VERSION = 2
#: The dataset configs (``conf/dataset/<kind>.yaml``) of a checkout (:func:`configured_learning_split`).
DATASET_CONF = Path(__file__).resolve().parents[2] / "conf" / "dataset"
#: The options each kind's loader takes (``dataset.options``); ``synthetic`` takes any
#: :class:`~signet_rl.datasets.synthetic.SyntheticConfig` field, and kinds not listed take none.
OPTIONS: dict[str, tuple[str, ...]] = {
    "signet": ("timeout", "extract", "extract_encoder"),
    "locomo": ("extract", "observations", "extract_encoder", "max_sessions"),
    "musique": ("extract", "extract_encoder"),
}


@dataclass(frozen=True)
class DatasetSpec:
    kind: str
    arg: str | None = None
    seed: int | None = None

    def __str__(self) -> str:
        parts = [self.kind] + ([self.arg] if self.arg is not None else [])
        parts += [str(self.seed)] if self.seed is not None else []
        return ":".join(parts)


def parse_spec(spec: str) -> DatasetSpec:
    """Parse a dataset spec string.

    Raises:
        ValueError: an unknown kind, a missing argument or a bad seed, naming the spec.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"empty dataset spec {spec!r}; expected one of: {', '.join(KINDS)}")
    kind, _, rest = spec.strip().partition(":")
    if kind not in KINDS:
        raise ValueError(
            f"unknown dataset {spec!r}; expected synthetic:<preset>[:seed], kg:<folder>, "
            "locomo, musique or signet:<path>"
        )
    if kind == "synthetic":
        preset, _, seed = rest.partition(":")
        if not preset:
            raise ValueError(f"dataset spec {spec!r} names no preset, e.g. synthetic:small")
        if seed and not seed.lstrip("-").isdigit():
            raise ValueError(f"dataset spec {spec!r}: seed {seed!r} is not an integer")
        if seed.startswith("-"):
            raise ValueError(
                f"dataset spec {spec!r}: seed {seed} is negative; seeds are integers >= 0, "
                f"e.g. synthetic:{preset}:0"
            )
        return DatasetSpec("synthetic", preset, int(seed) if seed else None)
    if kind in ("kg", "signet"):
        if not rest:
            raise ValueError(
                f"dataset spec {spec!r} needs an argument, e.g. {kind}:"
                + ("kinship" if kind == "kg" else "/path/to/memories.db")
            )
        return DatasetSpec(kind, rest)
    if rest:
        raise ValueError(f"dataset spec {spec!r}: {kind} takes no argument")
    return DatasetSpec(kind)


def load_dataset(
    spec: str | DatasetSpec,
    root: str | os.PathLike[str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> Dataset:
    """Load or generate the dataset a spec names; real data is read from ``root`` (see ``data_root``).

    Args:
        spec: the dataset spec (module docstring).
        root: the data root.
        options: generator overrides for ``synthetic`` specs (``{"drift": True}`` for the drift scenario; any
            :class:`~signet_rl.datasets.synthetic.SyntheticConfig` field); ``{"timeout": seconds}`` for
            ``signet`` specs (how long to wait for a store another process is writing); ``extract``,
            ``observations``, ``extract_encoder`` and ``max_sessions`` (sessions 1 to n of each conversation
            only) for ``locomo``, ``extract`` and ``extract_encoder`` for ``musique`` and ``signet``
            (:mod:`signet_rl.datasets.extract`); see :data:`OPTIONS`.

    Raises:
        ValueError: an option the kind does not take (naming it, what the kind takes, and the config to
            select on the command line: options usually come from another dataset's config).
    """
    s = parse_spec(spec) if isinstance(spec, str) else spec
    opts = dict(options or {})
    if s.kind == "synthetic":
        from signet_rl.datasets.synthetic import generate

        return generate(s.arg or "small", seed=0 if s.seed is None else s.seed, **opts)
    allowed = OPTIONS.get(s.kind, ())
    unknown = sorted(set(opts) - set(allowed))
    if unknown:
        takes = f"the options {sorted(allowed)}" if allowed else "no options"
        raise ValueError(
            f"dataset {str(s)!r} takes {takes}, not {unknown}; those come from another dataset's config: on "
            f"the command line pass the dataset's own config with its spec, dataset={s.kind} dataset.spec={s}"
        )
    if s.kind == "kg":
        from signet_rl.datasets.kg import load_kg

        return load_kg(s.arg or "", root=data_root(root))
    if s.kind == "locomo":
        from signet_rl.datasets.locomo import load_locomo

        return load_locomo(root=data_root(root), **opts)
    if s.kind == "musique":
        from signet_rl.datasets.musique import load_musique

        return load_musique(root=data_root(root), **opts)
    from signet_rl.datasets.signet import load_signet_dataset

    return load_signet_dataset(Path(s.arg or ""), **opts)


def configured_learning_split(
    kind: str, conf_dir: str | os.PathLike[str] | None = None
) -> dict[str, Any] | None:
    """The ``learning_split`` block of ``conf/dataset/<kind>.yaml`` (``k``, ``fold``, ``seed``, ``group``):
    the folds ``python -m signet_rl.train`` learns on and ``python -m signet_rl.evaluate`` tests on, and whose
    validation fold ``best_flat`` was chosen on. ``None``: the kind has no such block (its queries carry
    their own splits, as the synthetic benchmark's do) or no config file.

    Raises:
        ValueError: a block that is not a mapping with an integer ``k`` (naming the file).
    """
    import yaml

    file = Path(conf_dir if conf_dir is not None else DATASET_CONF) / f"{kind}.yaml"
    if not file.is_file():
        return None
    block = (yaml.safe_load(file.read_text()) or {}).get("learning_split")
    if not block:
        return None
    if not isinstance(block, Mapping) or not isinstance(block.get("k"), int):
        raise ValueError(
            f"{file}: learning_split must be a mapping with an integer k (and fold, seed, group)"
        )
    return {"k": int(block["k"]), "fold": int(block.get("fold", 0)), "seed": int(block.get("seed", 0)),
            "group": block.get("group")}  # fmt: skip


def load_test_data(
    spec: str, synthetic_version: int = REPORT_SYNTHETIC_VERSION, root: str | os.PathLike[str] | None = None
) -> Dataset:
    """The dataset ``spec`` names, split as ``python -m signet_rl.evaluate`` scores it: a synthetic spec is
    built by generator ``synthetic_version`` (its own test split); a dataset whose config has a
    ``learning_split`` (LoCoMo, MuSiQue ship every query as test) is cut into those folds, so that its
    ``test`` split is the test fold alone, never the validation fold ``best_flat`` was chosen on."""
    kind = parse_spec(spec).kind
    options = {"version": synthetic_version} if kind == "synthetic" else None
    dataset = load_dataset(spec, root=root, options=options)
    split = configured_learning_split(kind)
    return dataset.learning_split(**split) if split is not None else dataset
