"""Exact answers of optimum: filled in below."""
