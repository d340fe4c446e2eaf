"""multiturn"""
