"""transform assets."""
