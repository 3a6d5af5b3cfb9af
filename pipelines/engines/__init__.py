"""The engines the heavy marts can run on besides the embedded DuckDB (`engine:` in wastewatch.yaml).

Each engine is a package of its own that only `pipelines.transform` imports, and only when the config
names it: the default install runs without any of them.
"""
