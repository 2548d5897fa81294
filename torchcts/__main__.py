"""`python -m torchcts`: the same CLI as the `torchcts` command."""

from torchcts.cli.main import main

if __name__ == "__main__":
    main()
