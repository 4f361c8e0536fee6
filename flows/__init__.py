"""See sdcflow/__init__.py for the map of subpackages."""
