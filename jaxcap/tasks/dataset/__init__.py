"""dataset: a task read from the user's own files (reading, encoding, checks, examples, task, export)."""
