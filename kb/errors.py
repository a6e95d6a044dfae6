"""The one exception type for bad input.

Everything a user can get wrong (a flag, a job file, a rule file, a config.json) ends in an
``InputError`` whose message is one line: what is wrong, and what is allowed. The command
line prints it on stderr and exits with status 2 (cli/main.py).
"""


class InputError(ValueError):
    """Bad input: the message names the problem and what is allowed, on one line."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


def read_input_file(path: str, flag: str) -> str:
    """The text of a file the user named, or an InputError saying why it cannot be read."""
    from pathlib import Path
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{flag}: no such file '{path}'")
    except UnicodeDecodeError:
        raise InputError(f"{flag}: '{path}' is not UTF-8 text")
    except OSError as e:
        raise InputError(f"{flag}: cannot read '{path}': {e.strerror or e.__class__.__name__}")
