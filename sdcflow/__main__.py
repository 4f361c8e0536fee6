"""``python -m sdcflow``: the ``sdcflow`` command, for an environment whose scripts folder
is not on ``PATH``."""

from sdcflow.cli.main import main

if __name__ == "__main__":
    main()
