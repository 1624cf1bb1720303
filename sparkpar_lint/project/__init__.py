"""The project around a file: its own modules, found on disk, and what their functions do."""
