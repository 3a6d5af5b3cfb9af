"""What the warehouse says about its own inputs: sources that stopped delivering (freshness.py) and the weeks
it holds data for (coverage.py)."""
