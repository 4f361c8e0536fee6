"""The measures of the numerical core, one module per family: ``anonymity``, ``risk``
(per-record re-identification risk), ``information_loss``, ``disclosure_risk``,
``cluster_loss``, and ``complete`` (the records a loss or linkage measure is taken on).

:mod:`sdcflow.measures` re-exports those a notebook uses, on DataFrames.
"""
