"""Tests of rwtool.persist: model files, hostile files and atomic writes."""
