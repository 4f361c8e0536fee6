"""Linear edit rules: their matrix form, the projection onto them, minimal-adjustment repair."""
