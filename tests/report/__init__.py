"""Tests of rwtool.report, the layer the command line and the app share."""
