"""The numerical core: numpy/scipy/numba functions on arrays, no workflow, I/O or spec."""
