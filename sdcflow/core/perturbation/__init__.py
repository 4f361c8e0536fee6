"""Perturbative masking methods as sdcMicro offers them: PRAM, noise addition, rank swapping,
data shuffling and top/bottom coding. Each takes an explicit random generator ``rng``."""

from .pram import invariant_transition, pram, pram_transition

__all__ = ["invariant_transition", "pram", "pram_transition"]
