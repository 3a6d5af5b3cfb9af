"""The warehouse file (pipelines.warehouse): creation, upgrades, publishing, the schema reference."""
