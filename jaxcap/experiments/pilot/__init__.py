"""pilot."""
