"""The rules (rules/): catalogue invariants, YAML cases, generated docs, and rules on real data."""
