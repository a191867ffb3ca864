"""Emergent behaviours: the cold tier, entity health, bridges, principles (all off by default)."""
