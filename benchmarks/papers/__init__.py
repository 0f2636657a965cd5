"""Reproductions of the papers' tables and figures (seeds 000-004) on our data."""
