"""``python -m sdcflow.cli``: the ``sdcflow`` command (:func:`sdcflow.cli.main.main` ends
the process with the command's exit code)."""

from sdcflow.cli.main import main

main()
