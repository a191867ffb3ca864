"""Bounded traversal of the knowledge graph: paths, strategies and constructed memories."""
