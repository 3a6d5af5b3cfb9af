"""reports assets."""
