"""The kinds of source wastewatch reads: one registry line and one options model each."""
