"""`python -m vlogscope` is the `vlogscope` command."""

from vlogscope.cli import main

if __name__ == "__main__":
    main()
