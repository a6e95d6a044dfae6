"""The one exception type for bad input.

Everything a user can get wrong (a flag, a job file, a rule file, a config.json) ends in an
``InputError`` whose message is one line: what is wrong, and what is allowed. The command
line prints it on stderr and exits with status 2 (cli/main.py).
"""
import sys


class _OneLine(Exception):
    """A message the command line prints as one line on stderr: its whitespace folded."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


class NoLayout(_OneLine):
    """A valid job whose answer is NO LAYOUT, asked for what only a layout has (explain, report,
    export): one line on stderr, exit status 3 -- not bad input (2), not a bug (1). `recommend`
    answers NO LAYOUT itself, with status 0."""


class InputError(_OneLine, ValueError):
    """Bad input: the message names the problem and what is allowed, on one line."""


# The most a file the user names may hold. A real config.json is a few kB, a job file or a rule
# file well under 1 MB (rules/loader.py's MAX_FILE_BYTES); the margin is for generated files.
# Reading stops here, so /dev/zero or an endless pipe is refused instead of filling memory.
INPUT_MAX_BYTES = 16 * 2 ** 20


def refuse_empty_path(path, flag: str, want: str) -> None:
    """An empty path argument names no file: ``Path('')`` is the current folder (``--rules ''``
    would load every *.yaml there) and ``if path:`` reads it as not given (``-f ''`` would drop
    the job file, ``--playbook ''`` run the shipped playbook). Refused, as an empty --model is
    (kb/build.resolve_model), with what to give instead."""
    if path is not None and str(path) == "":
        raise InputError(f"{flag}: an empty path; give {want}")


def read_input_file(path: str, flag: str, limit: int = INPUT_MAX_BYTES) -> str:
    """The text of a file the user named, or an InputError saying why it cannot be read."""
    try:
        with open(path, "rb") as f:
            raw = f.read(limit + 1)         # one byte past the limit tells "too large" from "exactly full"
    except FileNotFoundError:
        raise InputError(f"{flag}: no such file '{path}'")
    except OSError as e:
        raise InputError(f"{flag}: cannot read '{path}': {e.strerror or e.__class__.__name__}")
    if len(raw) > limit:
        raise InputError(f"{flag}: '{path}' is larger than {_size(limit)}; input files may hold at most "
                         f"{_size(limit)}")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{flag}: '{path}' is not UTF-8 text")


def _size(n: int) -> str:
    return f"{n // 2 ** 20} MiB" if n % 2 ** 20 == 0 else f"{n:,} bytes"


def too_long_number(name: str, where: str = "") -> InputError:
    """The refusal of an integer longer than Python converts from text (sys.int_info's
    str_digits_check_threshold: 4300 digits by default, CVE-2020-10735): JSON and YAML
    parsers raise a bare ValueError for it, which would otherwise read as an internal error."""
    return InputError(f"{name}{where}: a number is too long; numbers may have at most "
                      f"{sys.get_int_max_str_digits()} digits")
