"""Reward models: Bradley-Terry (tabular, linear, margin), outcome and process reward models."""
