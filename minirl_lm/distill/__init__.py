"""distill"""
