"""Fuzzy c-means (plain, entropy, linearly constrained) and fuzzy microaggregation."""
