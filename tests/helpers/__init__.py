"""Plain modules the tests share, imported as `tests.helpers.<module>`.

Pytest fixtures live in the `conftest.py` files (the root one and one per folder); a test module imports
helpers from here and never from another test module or from a conftest.
"""
