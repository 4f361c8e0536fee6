"""Local suppression of categorical keys (see :mod:`sdcflow.tasks.suppression.local`)."""
