"""The `torchcts` command: click commands that parse arguments, call one function of the library and
print. `main` holds the group and the entry point, `options` the parameter types and options several
commands share, `selection` the --level/--dtype/--ops/--property selection and its plan, `completion`
the names a Tab completes, `run_commands` and `inspect_commands` the commands;
`hash_seed` and `project_venv` prepare the process. Nothing else imports this package.
"""

from torchcts.cli.main import cli, main  # noqa: F401 - the entry point `torchcts.cli:main`
