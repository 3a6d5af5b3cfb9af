"""Building the intermediate objects and the marts (pipelines/marts/registry.py says how each is kept up to date).

build.py builds a mart in full or dispatches to its rebuild mode: days.py (by day), months.py (by billing month),
files.py (by bill file); spark/ builds the heavy marts on Spark; fingerprints.py says what each build read;
retention.py drops old raw samples; nothing_new.py lets a run with nothing new stop before Dagster.
"""
