"""The catalogues shipped as data (the CSV files here, README.md says where each comes from) and the billing
mapping tables read from them (mappings.py)."""
