"""KG-embedding anchors: ComplEx and DistMult (PyG's :mod:`torch_geometric.nn.kge`), trained 1-N, ranked by
the same filtered evaluator as every path-reasoning model.

The anchors are the reference point of the path-reasoning results (MultiHopKG, Lin et al. 2018, Table 2
reports ComplEx filtered MRR about 0.88 on Kinship and 0.93 on UMLS). :class:`KGEAnchor` wraps a PyG model and
scores **all** tails of a ``(head, relation)`` query at once from the embedding tables:

.. math::

    \\text{ComplEx:}\\quad s(h, r, \\cdot) = \\mathrm{Re}\\big(\\langle e_h, w_r, \\overline{E}\\rangle\\big)
        = (\\mathrm{Re}(e_h w_r))\\,\\mathrm{Re}(E)^\\top + (\\mathrm{Im}(e_h w_r))\\,\\mathrm{Im}(E)^\\top

    \\text{DistMult:}\\quad s(h, r, \\cdot) = (e_h \\odot w_r)\\,E^\\top

(equal, entity by entity, to PyG's ``model(h, r, t)``), so training and evaluation are matrix products.

Training objectives (``loss=``):

* ``"ce"`` (default): 1-vs-all softmax cross-entropy over every entity per training triple (Lacroix et al.
  2018), label-smoothed, with the N3 penalty (``reg=0.01``). Measured best here: ComplEx reaches filtered
  test MRR 0.89 on Kinship and 0.95 on UMLS in 1.5-3 minutes of one CPU thread (``docs/kg_protocol.md``).
* ``"bce"``: 1-N scoring as in ConvE and MultiHopKG. Each training ``(h, r)`` pair is scored against every
  entity; the target is the multi-hot vector of its known training tails, label-smoothed
  (``(1 - eps) * y + eps / N``), with binary cross-entropy. Without strong regularisation it overfits
  Kinship after ~20 epochs (validation MRR 0.81, then falling).
* ``"pyg"``: PyG's own ``KGEModel.loss`` (one corrupted head or tail per triple; BCE for ComplEx, margin
  ranking for DistMult). Much weaker on these graphs; kept for comparison.

``reg`` adds the N3 penalty (Lacroix et al. 2018) on the embeddings a batch touches; ``dropout`` drops
entries of the query vector ``e_h * w_r`` while training.

Training data (:func:`train_anchor`): the train split's triples plus, as in MultiHopKG, one reciprocal triple
``(t, r⁻¹, h)`` per triple, where ``r⁻¹`` is the dataset's own inverse relation name (``_rel`` on Kinship and
UMLS, ``rel_inv`` on NELL, from ``ds.meta["inverse_convention"]``) when the :class:`KGIndex` holds it, else a
new relation appended after the index's relations. Queries only ever use index relations.

    >>> from signet_rl.datasets.registry import load_dataset
    >>> ds = load_dataset("kg:kinship")  # doctest: +SKIP
    >>> anchor, report = train_anchor(ds, "complex", time_budget_s=60)  # doctest: +SKIP
    >>> report["test"]["mrr"]  # doctest: +SKIP
    0.9...
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from os import PathLike
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn.kge import ComplEx, DistMult, KGEModel
from tqdm.auto import tqdm

from signet_rl.kg.ranking import KGIndex, QueryBatch, evaluate_scores

if TYPE_CHECKING:
    from signet_rl.datasets.base import Dataset

__all__ = [
    "LOSSES",
    "MODELS",
    "TRAIN_ON",
    "KGEAnchor",
    "inverse_relation_names",
    "reciprocal",
    "train_anchor",
]

IntArray = npt.NDArray[np.int64]

#: Model name -> PyG class.
MODELS: Mapping[str, type[KGEModel]] = {"complex": ComplEx, "distmult": DistMult}
#: Training objectives (see the module docstring).
LOSSES: tuple[str, ...] = ("ce", "bce", "pyg")
#: What :func:`train_anchor` trains on.
TRAIN_ON: tuple[str, ...] = ("train", "graph", "train+graph")
_FORMAT = "signet_rl.kge/1"


class KGEAnchor(nn.Module):
    """A ComplEx or DistMult model that scores every tail of ``(head, relation, ?)`` queries.

    Args:
        model: ``"complex"`` or ``"distmult"``.
        num_entities: ``N``.
        num_relations: ``R`` (including any reciprocal relations the training triples use).
        dim: embedding size; for ComplEx, the size of each of the real and imaginary parts (PyG's
            ``hidden_channels``).
        seed: seeds the initial embeddings and every random draw of :meth:`fit`.
        loss: ``"ce"`` (1-vs-all softmax), ``"bce"`` (1-N, label-smoothed) or ``"pyg"`` (PyG's negative
            sampling loss).
        label_smoothing: ``eps`` of the 1-N targets (``"bce"``) or of the softmax targets (``"ce"``).
        dropout: dropout rate on the query vector while training, in ``[0, 1)``.
        reg: weight of the N3 penalty, ``>= 0``.

    Shapes:
        - :meth:`score_tails`: heads ``[B]``, relations ``[B]`` -> scores ``[B, N]``.

    Raises:
        ValueError: an unknown model or loss, or a size or rate outside its range (naming it).
    """

    def __init__(
        self,
        model: str,
        num_entities: int,
        num_relations: int,
        dim: int = 200,
        seed: int = 0,
        *,
        loss: str = "ce",
        label_smoothing: float = 0.1,
        dropout: float = 0.0,
        reg: float = 0.01,
    ) -> None:
        super().__init__()
        if model not in MODELS:
            raise ValueError(f"unknown KGE model {model!r}; expected one of: {', '.join(MODELS)}")
        if loss not in LOSSES:
            raise ValueError(f"unknown KGE loss {loss!r}; expected one of: {', '.join(LOSSES)}")
        for name, value in (("num_entities", num_entities), ("num_relations", num_relations), ("dim", dim)):
            if int(value) < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        if reg < 0:
            raise ValueError(f"reg must be >= 0, got {reg}")
        self.config: dict[str, Any] = {
            "model": model,
            "num_entities": int(num_entities),
            "num_relations": int(num_relations),
            "dim": int(dim),
            "seed": int(seed),
            "loss": loss,
            "label_smoothing": float(label_smoothing),
            "dropout": float(dropout),
            "reg": float(reg),
        }
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.kge: KGEModel = MODELS[model](int(num_entities), int(num_relations), int(dim))

    @property
    def num_entities(self) -> int:
        return int(self.config["num_entities"])

    @property
    def device(self) -> torch.device:
        return self.kge.node_emb.weight.device

    # -- scoring -----------------------------------------------------------------------------------

    def _query(self, heads: Tensor, relations: Tensor) -> tuple[Tensor, ...]:
        """The query vector(s) ``e_h * w_r`` (real and imaginary parts for ComplEx)."""
        m = self.kge
        if isinstance(m, ComplEx):
            h_re, h_im = m.node_emb(heads), m.node_emb_im(heads)
            r_re, r_im = m.rel_emb(relations), m.rel_emb_im(relations)
            return h_re * r_re - h_im * r_im, h_re * r_im + h_im * r_re
        return (m.node_emb(heads) * m.rel_emb(relations),)

    def _entity_tables(self) -> tuple[Tensor, ...]:
        m = self.kge
        if isinstance(m, ComplEx):
            return m.node_emb.weight, m.node_emb_im.weight
        return (m.node_emb.weight,)

    def _logits(self, heads: Tensor, relations: Tensor, drop: float = 0.0) -> Tensor:
        query = self._query(heads, relations)
        if drop > 0:
            query = tuple(F.dropout(q, p=drop, training=True) for q in query)
        tables = self._entity_tables()
        out = query[0] @ tables[0].T
        for q, e in zip(query[1:], tables[1:], strict=True):
            out = out + q @ e.T
        return out

    @torch.no_grad()
    def vectors(self) -> tuple[Tensor, Tensor]:
        """Entity vectors ``[N, D]`` and relation vectors ``[R, D]`` as plain real rows (ComplEx: real and
        imaginary parts side by side, ``D = 2 * dim``; DistMult: ``D = dim``), detached copies."""
        m = self.kge
        if isinstance(m, ComplEx):
            ent = torch.cat([m.node_emb.weight, m.node_emb_im.weight], dim=1)
            rel = torch.cat([m.rel_emb.weight, m.rel_emb_im.weight], dim=1)
        else:
            ent, rel = m.node_emb.weight, m.rel_emb.weight
        return ent.detach().clone(), rel.detach().clone()

    @torch.no_grad()
    def score_tails(self, heads: npt.ArrayLike | Tensor, relations: npt.ArrayLike | Tensor) -> Tensor:
        """Scores of every entity as the tail of each ``(head, relation)`` query.

        Args:
            heads: entity indices. Shape ``[B]``.
            relations: relation indices. Shape ``[B]``.

        Returns:
            Scores, higher is better. Shape ``[B, N]``, float32, on the model's device.
        """
        h = torch.as_tensor(np.asarray(heads) if not isinstance(heads, Tensor) else heads, device=self.device)
        r = torch.as_tensor(
            np.asarray(relations) if not isinstance(relations, Tensor) else relations, device=self.device
        )
        was_training = self.training
        self.eval()
        try:
            return self._logits(h.long(), r.long())
        finally:
            self.train(was_training)

    # -- training ----------------------------------------------------------------------------------

    def _n3(self, heads: Tensor, relations: Tensor, tails: Tensor | None) -> Tensor:
        """N3 penalty: mean over the batch of ``sum |x|^3`` of the touched embeddings (complex modulus for
        ComplEx)."""
        m = self.kge

        def cube(re: Tensor, im: Tensor | None) -> Tensor:
            mod = re.abs() if im is None else torch.sqrt(re**2 + im**2 + 1e-12)
            return (mod**3).sum(dim=-1).mean()

        im_n = m.node_emb_im if isinstance(m, ComplEx) else None
        im_r = m.rel_emb_im if isinstance(m, ComplEx) else None
        total = cube(m.node_emb(heads), im_n(heads) if im_n else None)
        total = total + cube(m.rel_emb(relations), im_r(relations) if im_r else None)
        if tails is not None:
            total = total + cube(m.node_emb(tails), im_n(tails) if im_n else None)
        return total

    def fit(
        self,
        train: npt.ArrayLike,
        epochs: int = 200,
        lr: float = 0.003,
        batch_size: int = 256,
        *,
        eval_fn: Callable[[KGEAnchor], float] | None = None,
        eval_every: int = 10,
        patience: int | None = None,
        progress: bool = True,
        time_budget_s: float | None = None,
    ) -> dict[str, Any]:
        """Train on ``(head, relation, tail)`` triples with Adam.

        Args:
            train: training triples. Shape ``[T, 3]``, int.
            epochs: passes over the data (over the distinct ``(h, r)`` pairs for ``"bce"``).
            lr: Adam learning rate.
            batch_size: pairs (``"bce"``) or triples (``"ce"``, ``"pyg"``) per step.
            eval_fn: model-selection score, higher is better (e.g. filtered validation MRR), called every
                ``eval_every`` epochs and at the end; the best-scoring weights are restored at the end.
            eval_every: epochs between ``eval_fn`` calls.
            patience: stop after this many ``eval_fn`` calls without improvement (``None``: never).
            progress: show a progress bar.
            time_budget_s: stop (after the current step) once training has run this long; ``eval_fn`` time
                counts.

        Returns:
            The training log: ``epochs`` run, ``steps``, ``loss`` (mean per epoch), ``evals``
            (``[epoch, score]`` pairs), ``best_epoch``, ``best_score``, ``seconds`` and ``stopped``
            (``"epochs"``, ``"time_budget"`` or ``"patience"``).

        Raises:
            ValueError: triples that are not ``[T, 3]`` integers within the model's entities and relations,
                or a bad epoch, batch or rate setting.
        """
        triples = _check_triples(train, self.num_entities, int(self.config["num_relations"]))
        for name, value in (("epochs", epochs), ("batch_size", batch_size), ("eval_every", eval_every)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if lr <= 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        cfg = self.config
        dev = self.device
        t0 = time.perf_counter()
        log: dict[str, Any] = {
            "epochs": 0,
            "steps": 0,
            "loss": [],
            "evals": [],
            "best_epoch": None,
            "best_score": None,
            "seconds": 0.0,
            "stopped": "epochs",
        }
        best_state: dict[str, Tensor] | None = None
        since_best = 0
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        if cfg["loss"] == "bce":
            pairs, indptr, tails_sorted = _group_pairs(triples)
            units = len(pairs)
        else:
            units = len(triples)
        y_triples = torch.from_numpy(triples).to(dev)

        def over_budget() -> bool:
            return time_budget_s is not None and time.perf_counter() - t0 >= time_budget_s

        def evaluate(epoch: int) -> None:
            nonlocal best_state, since_best
            if eval_fn is None:
                return
            score = float(eval_fn(self))
            log["evals"].append([epoch, score])
            if log["best_score"] is None or score > log["best_score"]:
                log["best_score"], log["best_epoch"] = score, epoch
                best_state = copy.deepcopy(self.state_dict())
                since_best = 0
            else:
                since_best += 1

        bar = tqdm(total=epochs, desc=f"{cfg['model']}/{cfg['loss']}", disable=not progress, leave=False)
        with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []):
            torch.manual_seed(cfg["seed"] + 1)
            self.train()
            for epoch in range(1, epochs + 1):
                order = torch.randperm(units).numpy()
                total, count = 0.0, 0
                for start in range(0, units, batch_size):
                    idx = order[start : start + batch_size]
                    if cfg["loss"] == "bce":
                        loss = self._bce_step(pairs[idx], indptr, tails_sorted, idx)
                    else:
                        batch = y_triples[torch.from_numpy(idx).to(dev)]
                        loss = self._triple_step(batch)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    total += float(loss.detach()) * len(idx)
                    count += len(idx)
                    log["steps"] += 1
                    if over_budget():
                        break
                log["epochs"] = epoch
                log["loss"].append(total / max(count, 1))
                bar.update(1)
                bar.set_postfix(loss=f"{log['loss'][-1]:.4f}", best=log["best_score"])
                if over_budget():
                    log["stopped"] = "time_budget"
                    break
                if epoch % eval_every == 0:
                    self.eval()
                    evaluate(epoch)
                    self.train()
                    if patience is not None and since_best >= patience:
                        log["stopped"] = "patience"
                        break
            self.eval()
        bar.close()
        if eval_fn is not None and (not log["evals"] or log["evals"][-1][0] != log["epochs"]):
            evaluate(log["epochs"])
        if best_state is not None:
            self.load_state_dict(best_state)
        log["seconds"] = round(time.perf_counter() - t0, 3)
        return log

    def _bce_step(self, pairs: IntArray, indptr: IntArray, tails_sorted: IntArray, idx: IntArray) -> Tensor:
        cfg = self.config
        dev = self.device
        h = torch.from_numpy(pairs[:, 0]).to(dev)
        r = torch.from_numpy(pairs[:, 1]).to(dev)
        logits = self._logits(h, r, cfg["dropout"])
        lengths = indptr[idx + 1] - indptr[idx]
        rows = np.repeat(np.arange(len(idx)), lengths)
        starts = np.repeat(indptr[idx] - np.cumsum(lengths) + lengths, lengths)
        cols = tails_sorted[starts + np.arange(int(lengths.sum()))]
        target = torch.zeros_like(logits)
        target[torch.from_numpy(rows).to(dev), torch.from_numpy(cols).to(dev)] = 1.0
        eps = cfg["label_smoothing"]
        if eps > 0:
            target = (1.0 - eps) * target + eps / logits.shape[1]
        loss = F.binary_cross_entropy_with_logits(logits, target)
        if cfg["reg"] > 0:
            loss = loss + cfg["reg"] * self._n3(h, r, None)
        return loss

    def _triple_step(self, batch: Tensor) -> Tensor:
        cfg = self.config
        h, r, t = batch[:, 0], batch[:, 1], batch[:, 2]
        if cfg["loss"] == "pyg":
            loss = self.kge.loss(h, r, t)
        else:
            logits = self._logits(h, r, cfg["dropout"])
            loss = F.cross_entropy(logits, t, label_smoothing=cfg["label_smoothing"])
        if cfg["reg"] > 0:
            loss = loss + cfg["reg"] * self._n3(h, r, t)
        return loss

    # -- persistence -------------------------------------------------------------------------------

    def save(self, path: str | PathLike[str]) -> None:
        """Write the constructor arguments and weights to ``path`` (a ``torch.save`` file)."""
        state = {k: v.detach().cpu() for k, v in self.state_dict().items()}
        torch.save({"format": _FORMAT, "config": dict(self.config), "state_dict": state}, path)

    @classmethod
    def load(cls, path: str | PathLike[str], map_location: str | torch.device = "cpu") -> KGEAnchor:
        """Rebuild an anchor written by :meth:`save`.

        Raises:
            ValueError: the file is not a saved :class:`KGEAnchor`.
        """
        blob = torch.load(path, map_location=map_location, weights_only=True)
        if not isinstance(blob, dict) or blob.get("format") != _FORMAT:
            raise ValueError(f"{path} is not a saved KGEAnchor (expected format {_FORMAT!r})")
        cfg = dict(blob["config"])
        anchor = cls(
            cfg.pop("model"),
            cfg.pop("num_entities"),
            cfg.pop("num_relations"),
            cfg.pop("dim"),
            cfg.pop("seed"),
            **cfg,
        )
        anchor.load_state_dict(blob["state_dict"])
        return anchor.to(map_location).eval()

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.config.items())


def _check_triples(train: npt.ArrayLike, num_entities: int, num_relations: int) -> IntArray:
    arr = np.asarray(train)
    if arr.ndim != 2 or arr.shape[1] != 3 or arr.shape[0] == 0:
        raise ValueError(f"training triples must have shape [T, 3] with T >= 1, got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"training triples must be integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.min() < 0:
        raise ValueError(f"training triples hold a negative index {int(arr.min())}")
    if max(arr[:, 0].max(), arr[:, 2].max()) >= num_entities:
        raise ValueError(
            f"training triples name entity {int(max(arr[:, 0].max(), arr[:, 2].max()))}; the "
            f"model has {num_entities} entities"
        )
    if arr[:, 1].max() >= num_relations:
        raise ValueError(
            f"training triples name relation {int(arr[:, 1].max())}; the model has {num_relations} relations"
        )
    return arr


def _group_pairs(triples: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """Distinct ``(h, r)`` pairs ``[P, 2]``, and a CSR (``indptr [P + 1]``, ``tails``) of their tails."""
    order = np.lexsort((triples[:, 2], triples[:, 1], triples[:, 0]))
    t = triples[order]
    new = np.ones(len(t), dtype=bool)
    new[1:] = (t[1:, 0] != t[:-1, 0]) | (t[1:, 1] != t[:-1, 1])
    starts = np.flatnonzero(new)
    indptr = np.append(starts, len(t)).astype(np.int64)
    return t[starts, :2].copy(), indptr, t[:, 2].copy()


# -- training on a dataset -------------------------------------------------------------------------


def inverse_relation_names(relations: tuple[str, ...], convention: str) -> list[str]:
    """The inverse name of each relation: ``_rel`` <-> ``rel`` (convention ``"_"``) or ``rel_inv`` <->
    ``rel`` (``"_inv"``). A name already marked as an inverse of a listed relation maps back to it."""
    names = set(relations)
    out = []
    for r in relations:
        if convention == "_":
            out.append(r[1:] if r.startswith("_") and r[1:] in names else "_" + r)
        else:
            out.append(r[:-4] if r.endswith("_inv") and r[:-4] in names else r + "_inv")
    return out


def reciprocal(index: KGIndex, triples: IntArray) -> tuple[IntArray, tuple[str, ...]]:
    """``triples`` plus ``(t, r⁻¹, h)`` for each, deduplicated and sorted.

    ``r⁻¹`` is the index's own inverse relation where it holds one; inverse names it lacks are appended after
    its relations, so the returned relation names extend ``index.relations`` (queries keep their ids).

    Returns:
        The triples ``[T', 3]`` and every relation name they use an index of.
    """
    inv_names = inverse_relation_names(index.relations, index.inverse_convention)
    relations = list(index.relations)
    position = dict(index.relation_index)
    inv_id = np.empty(len(relations), dtype=np.int64)
    for i, name in enumerate(inv_names):
        if name not in position:
            position[name] = len(relations)
            relations.append(name)
        inv_id[i] = position[name]
    inverse = np.stack([triples[:, 2], inv_id[triples[:, 1]], triples[:, 0]], axis=1)
    both = np.unique(np.concatenate([triples, inverse]), axis=0)
    return both, tuple(relations)


def _triples_of(batch: QueryBatch) -> IntArray:
    return np.stack([batch.heads, batch.relations, batch.tails], axis=1)


def train_anchor(
    ds: Dataset,
    model: str = "complex",
    seed: int = 0,
    *,
    dim: int = 200,
    epochs: int = 500,
    lr: float = 0.003,
    batch_size: int = 128,
    loss: str = "ce",
    label_smoothing: float = 0.1,
    dropout: float = 0.0,
    reg: float = 0.01,
    train_on: str = "train",
    eval_every: int = 3,
    patience: int | None = 5,
    time_budget_s: float | None = None,
    progress: bool = False,
    device: str | torch.device = "cpu",
    index: KGIndex | None = None,
    rank_test: bool = True,
) -> tuple[KGEAnchor, dict[str, Any]]:
    """Train a KGE anchor on a KG dataset, select it on filtered validation MRR, and rank the test split.

    Args:
        ds: a KG dataset (``load_dataset("kg:kinship")``).
        model: ``"complex"`` or ``"distmult"``.
        seed: seeds the anchor's initialisation and training.
        dim, loss, label_smoothing, dropout, reg: see :class:`KGEAnchor`.
        epochs, lr, batch_size, eval_every, patience, time_budget_s, progress: see :meth:`KGEAnchor.fit`;
            ``time_budget_s`` bounds training (validation checks included), not the final evaluation.
        train_on: ``"train"`` (the train split's query triples, the default), ``"graph"`` (the walkable
            graph's edges) or ``"train+graph"``. Graph edges that are a validation or test triple (or its
            reciprocal) are dropped and counted (``leaked_dropped``). Reciprocal triples are always added
            (see :func:`reciprocal`).
        device: where to train and score.
        index: a prebuilt :class:`KGIndex` of ``ds`` (built when ``None``).
        rank_test: False ranks validation only (a probe: the report's ``test`` is then empty and the test
            queries are never scored).

    Returns:
        The trained anchor (best validation weights) and a report: ``model``, ``dataset``, ``train_on``,
        ``train_triples`` (with reciprocals), ``leaked_dropped``, ``relations`` (the anchor's relation
        names), ``config``, ``fit`` (the training log), ``validation`` and ``test`` (filtered
        ``hits@1/3/10``, ``mrr``, ``n``, ``misses``), ``metrics`` (the same, flat, prefixed
        ``kge_<model>/<split>/``) and ``seconds``.

    Raises:
        ValueError: an unknown ``train_on``, model or loss, or a split without queries.
    """
    t0 = time.perf_counter()
    if train_on not in TRAIN_ON:
        raise ValueError(f"unknown train_on {train_on!r}; expected one of: {', '.join(TRAIN_ON)}")
    if model not in MODELS:
        raise ValueError(f"unknown KGE model {model!r}; expected one of: {', '.join(MODELS)}")
    index = index if index is not None else KGIndex.from_dataset(ds)
    valid = index.queries(ds, "validation")
    parts: list[IntArray] = []
    if "train" in train_on.split("+"):
        parts.append(_triples_of(index.queries(ds, "train")))
    leaked = 0
    if "graph" in train_on.split("+"):
        graph = index.graph_triples
        held_out = [valid, index.queries(ds, "test")]  # filtered out of training, never ranked
        held, _ = reciprocal(index, np.concatenate([_triples_of(b) for b in held_out]))
        keep = ~_rows_in(graph, held)
        leaked = int((~keep).sum())
        parts.append(graph[keep])
    triples, relations = reciprocal(index, np.concatenate(parts))
    anchor = KGEAnchor(
        model,
        index.num_entities,
        len(relations),
        dim,
        seed,
        loss=loss,
        label_smoothing=label_smoothing,
        dropout=dropout,
        reg=reg,
    ).to(device)

    def valid_mrr(a: KGEAnchor) -> float:
        return evaluate_scores(a.score_tails, valid)["mrr"]

    fit_log = anchor.fit(
        triples,
        epochs,
        lr,
        batch_size,
        eval_fn=valid_mrr,
        eval_every=eval_every,
        patience=patience,
        progress=progress,
        time_budget_s=time_budget_s,
    )
    ranked = [("validation", valid)] + ([("test", index.queries(ds, "test"))] if rank_test else [])
    results: dict[str, Any] = {split: evaluate_scores(anchor.score_tails, b) for split, b in ranked}
    results.setdefault("test", {})
    metrics = {f"kge_{model}/{split}/{k}": float(v) for split, m in results.items() for k, v in m.items()}
    report: dict[str, Any] = {
        "model": model,
        "dataset": ds.name,
        "train_on": train_on,
        "train_triples": len(triples),
        "leaked_dropped": leaked,
        "relations": list(relations),
        "config": dict(anchor.config),
        "fit": fit_log,
        **results,
        "metrics": metrics,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return anchor, report


def _rows_in(rows: IntArray, table: IntArray) -> npt.NDArray[np.bool_]:
    """Whether each ``[h, r, t]`` row of ``rows`` is a row of ``table``."""
    if len(table) == 0:
        return np.zeros(len(rows), dtype=bool)
    base = np.maximum(rows.max(initial=0), table.max(initial=0)) + 1
    key = (rows[:, 0] * base + rows[:, 1]) * base + rows[:, 2]
    table_key = (table[:, 0] * base + table[:, 1]) * base + table[:, 2]
    return np.isin(key, table_key)
