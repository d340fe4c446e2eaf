"""Exact answers of critic: filled in below."""
