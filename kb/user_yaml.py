"""YAML the user wrote (job files, rule files, policy tests), read safely.

Safe loading already refuses Python objects; this also refuses aliases (``*name``): nothing a
user writes needs them, and nine nested aliases of nine references expand to hundreds of
millions of values the moment anything walks or prints the result (a "billion laughs"); and
a key given twice in one mapping, which PyYAML would settle silently by keeping the last; and
an integer longer than Python converts (its ValueError would read as an internal error). Job
files also refuse YAML 1.1's other ways of writing a number (JobYamlLoader).
"""
from __future__ import annotations

import re

import yaml
from yaml.composer import ComposerError
from yaml.events import AliasEvent

from .counts import exponent_refusal
from .errors import InputError, too_long_number

INT_TAG, FLOAT_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"


class Refused(yaml.MarkedYAMLError):
    """YAML that parses but that a user's file may not hold: reported as its problem and line,
    without yaml_error's "not valid YAML"."""


class TooLong(yaml.MarkedYAMLError):
    """An integer past Python's digit limit (kb/errors.too_long_number), at its line."""


class UserYamlLoader(yaml.SafeLoader):
    def compose_node(self, parent, index):
        if self.check_event(AliasEvent):
            raise ComposerError(None, None, "aliases (*name) are not allowed", self.peek_event().start_mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        # PyYAML keeps the last of two equal keys; a job file with `gpus: 8` and later `gpus: 64`
        # would silently run the second -- refuse it, naming the line of the repeat
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                # '<<:' merges a mapping in after these checks; without aliases it only rewrites
                # keys a file can write out, and could hide a repeat or a bad key
                raise Refused(problem="merge keys ('<<:') are not allowed; write the keys out",
                              problem_mark=key_node.start_mark)
            if not isinstance(key_node, yaml.ScalarNode):        # '? [a]' or '? {a: 1}': no name a user means
                raise Refused(problem="a key must be a plain name, not a list or a mapping",
                              problem_mark=key_node.start_mark)
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (str, int, float, bool)) and (type(key), key) in seen:   # 1 and true differ
                raise yaml.constructor.ConstructorError(None, None, f"key {key!r} given twice",
                                                        key_node.start_mark)
            seen.add((type(key), key))
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node):
        try:
            return super().construct_yaml_int(node)
        except ValueError:      # int() of more digits than sys.get_int_max_str_digits()
            raise TooLong(problem_mark=node.start_mark)


# PyYAML looks constructors up in a per-class table, not by method name
UserYamlLoader.add_constructor(INT_TAG, UserYamlLoader.construct_yaml_int)


# YAML 1.1 reads 010 as octal 8, 0x10 as 16, 0b10 as 2, 1_6 as 16 and 1:30 as 90 (base 60);
# written in a job file, each is almost surely a mistyped decimal, so it is refused
_DECIMAL_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)")


class JobYamlLoader(UserYamlLoader):
    """A job file: numbers only as plain decimals (``gpus: 8``, ``gpu_memory: 80.5``; no exponent)."""

    def construct_mapping(self, node, deep=False):
        for key_node, value_node in node.value:
            if _unusual_number(value_node):
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "a value"
                raise Refused(problem=f"{key}: write the number in decimal (e.g. 8 or 80.5: no leading zero, "
                                      f"0x, 0b, '_' or ':'), got '{_clip(value_node.value)}'",
                              problem_mark=value_node.start_mark)
            refusal = _exponent(value_node) and exponent_refusal(
                key_node.value if isinstance(key_node, yaml.ScalarNode) else "a value", value_node.value)
            if refusal:
                raise Refused(problem=str(refusal), problem_mark=value_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def _unusual_number(node) -> bool:
    if not isinstance(node, yaml.ScalarNode):
        return False
    if node.tag == INT_TAG:
        return not _DECIMAL_INT.fullmatch(node.value)
    return node.tag == FLOAT_TAG and ("_" in node.value or ":" in node.value)


def _exponent(node) -> bool:
    """A float YAML 1.1 reads with an exponent (1.0e+2; it reads 1e2 as text, which
    cli/options.load_job_file refuses as the flags do)."""
    return isinstance(node, yaml.ScalarNode) and node.tag == FLOAT_TAG and "e" in node.value.lower() \
        and not node.value.lower().lstrip("+-.").startswith(("inf", "nan"))


def _clip(text: str, n: int = 40) -> str:
    return text if len(text) <= n else text[:n] + "..."


def yaml_error(name: str, e: yaml.YAMLError) -> InputError:
    """One line naming the file, the line and the problem."""
    mark = getattr(e, "context_mark", None) or getattr(e, "problem_mark", None)   # where the broken part began
    where = f":{mark.line + 1}" if mark else ""
    return InputError(f"{name}{where}: not valid YAML ({getattr(e, 'problem', None) or 'syntax error'})")


def load_user_yaml(text: str, name: str, loader=UserYamlLoader):
    try:
        return yaml.load(text, Loader=loader)
    except TooLong as e:
        raise too_long_number(name, f":{e.problem_mark.line + 1}")
    except Refused as e:
        raise InputError(f"{name}:{e.problem_mark.line + 1}: {e.problem}")
    except yaml.YAMLError as e:
        raise yaml_error(name, e)
    except RecursionError:
        raise InputError(f"{name}: YAML nests too deeply")
    except InputError:
        raise
    except ValueError as e:     # a value PyYAML matched but Python refuses, e.g. the date 2024-02-30
        raise InputError(f"{name}: a value cannot be read ({e})")
