"""Importers: turn other tools' result files into perfci results."""
