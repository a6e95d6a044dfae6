"""The one exception type for bad input.

Everything a user can get wrong (a flag, a job file, a rule file, a config.json) ends in an
``InputError`` whose message is one line: what is wrong, and what is allowed. The command
line prints it on stderr and exits with status 2 (cli/main.py).
"""


class InputError(ValueError):
    """Bad input: the message names the problem and what is allowed, on one line."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))
