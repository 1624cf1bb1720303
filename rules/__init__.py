"""Operator catalogue (catalogue/*.toml) and rule docs (docs/SPXnnn.md), shipped as package data."""
