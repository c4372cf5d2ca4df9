"""The version of verirag (read by the package and by what records provenance)."""

__version__ = "0.1.0"
