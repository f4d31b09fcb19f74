"""Renderings of runs and comparisons: terminal tables, HTML, and (later) Markdown, JUnit, JSON."""
