"""Datasets: the synthetic benchmark and loaders for real data, behind one spec grammar."""

from signet_rl.core.paths import data_root
from signet_rl.core.types import Query
from signet_rl.datasets.base import Dataset, GroundTruth, LoadReport, Truth
from signet_rl.datasets.registry import DatasetSpec, load_dataset, parse_spec

__all__ = [
    "Dataset",
    "DatasetSpec",
    "GroundTruth",
    "LoadReport",
    "Query",
    "Truth",
    "data_root",
    "load_dataset",
    "parse_spec",
]
