"""The numerical core of sdcflow: numpy/scipy functions with no workflow dependencies."""
