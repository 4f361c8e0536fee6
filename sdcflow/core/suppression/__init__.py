"""Local suppression of categorical keys (see :mod:`sdcflow.core.suppression.local`)."""
