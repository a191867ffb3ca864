"""Shared fixtures of the serving tests: one real (smoke-sized) training run per scorer, its export, and a
Signet store written from a synthetic graph."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir

from signet_rl import smoke

CONF = Path(__file__).resolve().parents[2] / "conf"


def train_run(folder: Path, *overrides: str) -> Path:
    """A real ``python -m signet_rl.train`` run (in-process, shrunk as ``SIGNET_RL_SMOKE=1`` shrinks it)."""
    from signet_rl.train import train

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("train", overrides=[
            f"run_dir={folder}", "mlflow.enabled=false", "progress=false", *overrides])  # fmt: skip
    smoke.shrink_train(cfg)
    train(cfg)
    return folder


@pytest.fixture(scope="session")
def gnn_run(tmp_path_factory) -> Path:
    # the default GNN: a residual over the base scores, with the intent x aspect bias
    return train_run(tmp_path_factory.mktemp("runs") / "gnn")


@pytest.fixture(scope="session")
def gnn_artifact(gnn_run, tmp_path_factory) -> Path:
    from signet_rl.export import export_run

    return export_run(gnn_run, tmp_path_factory.mktemp("artifacts") / "gnn")


@pytest.fixture(scope="session")
def small_store(tmp_path_factory) -> Path:
    """A Signet v30 store written from the synthetic:small graph (not the graph the policy trained on)."""
    from signet_rl.datasets.registry import load_dataset
    from signet_rl.graph.store import write_graph

    ds = load_dataset("synthetic:small:0")
    return write_graph(next(iter(ds.graphs.values())), tmp_path_factory.mktemp("store") / "memories.db")


@pytest.fixture(scope="session")
def linucb_run(tmp_path_factory) -> Path:
    return train_run(tmp_path_factory.mktemp("runs") / "linucb", "scorer=linucb")


@pytest.fixture(scope="session")
def served(linucb_run, tmp_path_factory) -> dict[str, Path]:
    """The HTTP service's fixture: the LinUCB run exported, and a store of the synthetic:tiny graph."""
    from signet_rl.datasets.registry import load_dataset
    from signet_rl.export import export_run
    from signet_rl.graph.store import write_graph

    base = tmp_path_factory.mktemp("served")
    artifact = export_run(linucb_run, base / "artifact")
    ds = load_dataset("synthetic:tiny:0")
    store = write_graph(next(iter(ds.graphs.values())), base / "memories.db")
    return {"artifact": artifact, "store": store, "base": base}


@contextmanager
def live_server(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port, on a thread of this process, for the length of
    the ``with`` block; yields its base URL. Real HTTP over loopback, without a subprocess's start-up."""
    import socket
    import threading
    import time

    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise AssertionError(f"uvicorn did not start on 127.0.0.1:{port}")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
