"""The knowledge graph: domain model, confidence ladder, SQLite store, Signet import, array view."""

from signet_rl.graph.confidence import Reason
from signet_rl.graph.model import (
    Aspect,
    Attribute,
    Dependency,
    Entity,
    GraphValidationError,
    KnowledgeGraph,
    Memory,
    Mention,
)

__all__ = [
    "Aspect",
    "Attribute",
    "Dependency",
    "Entity",
    "GraphValidationError",
    "KnowledgeGraph",
    "Memory",
    "Mention",
    "Reason",
]
