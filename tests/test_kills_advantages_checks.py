"""Exact answers of advantages and checks: filled in below."""
