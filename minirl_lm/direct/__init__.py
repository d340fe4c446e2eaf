"""direct"""
