"""The `torchcts` command: click commands that parse arguments, call one function of the library and
print. Nothing else imports this package.
"""

from torchcts.cli.main import cli, main  # noqa: E402,F401 - the entry point `torchcts.cli:main`
