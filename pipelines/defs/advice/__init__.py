"""advice assets."""
