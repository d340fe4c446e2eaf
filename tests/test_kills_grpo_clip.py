"""Exact answers of grpo and clip: filled in below."""
