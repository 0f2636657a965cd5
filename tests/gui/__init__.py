"""Tests of the desktop app (gui/), offscreen through pytest-qt."""
