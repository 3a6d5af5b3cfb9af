"""One reader per source kind."""
