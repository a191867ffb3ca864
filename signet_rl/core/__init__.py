"""The bottom layer: small shared types and checks that every other package may use."""
