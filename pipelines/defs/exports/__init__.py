"""Exports of the warehouse for other tools."""
