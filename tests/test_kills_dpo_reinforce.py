"""Exact answers of dpo and reinforce: filled in below."""
