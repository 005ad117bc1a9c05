"""vader."""
