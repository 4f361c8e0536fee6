"""The temporary API's start-up failure line (``sdcflow.flows.server._startup_failure``):
true of the database actually configured, and never quoting a password from the log."""

from __future__ import annotations

from prefect.settings import (
    PREFECT_HOME,
    PREFECT_SERVER_DATABASE_CONNECTION_URL,
    temporary_settings,
)

from sdcflow.flows.server import _startup_failure

UPGRADED = b"alembic.util.exc.CommandError: Can't locate revision identified by 'ffffffffffff'\n"


def test_a_database_configured_by_url_is_named_not_the_prefect_home(tmp_path):
    """A database set by URL and upgraded by a newer Prefect: the line named PREFECT_HOME (not
    where it is) and advised a home of its own (which does not change it); now it names the
    database, its password hidden, and the setting to change."""
    url = "postgresql+asyncpg://prefect:hunter2@db.example:5432/prefect"
    with temporary_settings(
        updates={PREFECT_HOME: str(tmp_path), PREFECT_SERVER_DATABASE_CONNECTION_URL: url}
    ):
        line = _startup_failure(3, UPGRADED)
    assert "hunter2" not in line and "db.example:5432/prefect" in line
    assert "PREFECT_SERVER_DATABASE_CONNECTION_URL" in line and str(tmp_path) not in line
    # the home's own database: no URL configured (the session's test API sets one)
    with temporary_settings(
        updates={PREFECT_HOME: str(tmp_path)},
        restore_defaults={PREFECT_SERVER_DATABASE_CONNECTION_URL},
    ):
        line = _startup_failure(3, UPGRADED)
    assert f"PREFECT_HOME={tmp_path}" in line


def test_a_password_in_the_servers_exception_line_is_not_printed():
    log = (
        b"Traceback (most recent call last):\n"
        b"sqlalchemy.exc.ArgumentError: Could not parse URL "
        b"'postgresql+asyncpg://prefect:hu:n@ter2@db:5432/p?sslmode=x&password=s3cr3t'\n"
        b"ERROR:    Application startup failed. Exiting.\n"
    )
    line = _startup_failure(1, log)
    assert "ArgumentError" in line and "db:5432/p" in line
    assert not any(s in line for s in ("hu:n", "ter2", "s3cr3t"))
    line = _startup_failure(1, b"connecting to postgresql://u:hunter2@db/p failed\n")
    assert "hunter2" not in line and "db/p" in line


def test_prefect_defaults_are_settings_the_user_may_override_and_leave_the_environment():
    """No analytics and 180 s for a temporary server to start, through Prefect's settings
    context for the block: what the user set wins, and ``os.environ`` is never written."""
    import os

    import pytest
    from prefect.settings import (
        PREFECT_SERVER_ANALYTICS_ENABLED,
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
    )

    from sdcflow.flows.server import prefect_defaults

    if "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS" in os.environ:
        pytest.skip("the start-up timeout is set in this environment")
    before = dict(os.environ)
    with prefect_defaults():
        assert PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value() == 180
        assert PREFECT_SERVER_ANALYTICS_ENABLED.value() is False
    updates = {PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS: 33}
    with temporary_settings(updates=updates | {PREFECT_SERVER_ANALYTICS_ENABLED: True}):
        with prefect_defaults():  # set by the user: kept
            assert PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value() == 33
            assert PREFECT_SERVER_ANALYTICS_ENABLED.value() is True
    assert dict(os.environ) == before
