"""Exact answers of kl: filled in below."""
