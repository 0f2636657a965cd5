"""Tests of rwtool.data (the folder is data_ because tests/data holds fixture files)."""
