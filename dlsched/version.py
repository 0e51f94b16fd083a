"""The package version, on the bottom floor so that every layer can record it (dlsched.provenance)."""

__version__ = "0.1.0"
