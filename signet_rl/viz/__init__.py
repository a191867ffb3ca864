"""Pictures a researcher opens first: the constellation of a graph and its learned desire paths.

``python -m signet_rl.viz constellation <run | spec | store.db> --out constellation.{png,html}``
(:mod:`signet_rl.viz.constellation`).
"""

from signet_rl.viz.constellation import (
    Constellation,
    RunView,
    build_constellation,
    desire_weights,
    draw_html,
    draw_png,
    open_source,
    strongest_paths,
)

__all__ = [
    "Constellation",
    "RunView",
    "build_constellation",
    "desire_weights",
    "draw_html",
    "draw_png",
    "open_source",
    "strongest_paths",
]
