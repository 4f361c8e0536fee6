"""Global recoding of keys (see :mod:`sdcflow.tasks.recoding.recode`)."""
