"""Perturbative masking methods as sdcMicro offers them: PRAM, noise addition, rank swapping,
data shuffling and top/bottom coding. Each takes an explicit random generator ``rng``."""

from .noise import add_noise
from .pram import invariant_transition, pram, pram_transition
from .rankswap import rank_swap
from .shuffle import shuffle
from .topbottom import top_bottom_code

__all__ = [
    "add_noise",
    "invariant_transition",
    "pram",
    "pram_transition",
    "rank_swap",
    "shuffle",
    "top_bottom_code",
]
