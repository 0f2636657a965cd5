"""rwtool's and the app's tests, one folder per package of rwtool/ (data_ for rwtool.data:
tests/data holds the fixture files) and gui/; rwtool's top-level modules are tested here."""
