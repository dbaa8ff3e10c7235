"""Engines over the families: local, model sources, shard merge, Spark."""
