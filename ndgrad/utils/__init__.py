"""Utilities: ``ndgrad.utils.checkpoint``."""
