"""The objects the transform builds, declared once (registry.py)."""
