"""The Prefect ``@task`` layer of a release: one thin task per step, over the preflight, the
methods and gates, the numerical core (``sdcflow.core``), the warehouse and the edit-rule
expectations.

Every task disables caching and result persistence: the data they pass are confidential and
must not be pickled into Prefect's result storage, and a release is never "cached". Logs and
artifacts carry figures and decisions only, never a record value.
"""

from prefect.cache_policies import NO_CACHE

STEP = {"cache_policy": NO_CACHE, "persist_result": False}


def artifact_key(release: str) -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only."""
    key = "".join(ch if ch.isalnum() else "-" for ch in release.lower()).strip("-")
    return key or "release"
