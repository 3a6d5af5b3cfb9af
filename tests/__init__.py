"""wastewatch tests, by layer (docs/architecture.md); packages, so same-named modules in two folders do not clash."""
