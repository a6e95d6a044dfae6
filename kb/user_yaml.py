"""YAML the user wrote (job files, rule files, policy tests), read safely.

Safe loading already refuses Python objects; this also refuses aliases (``*name``): nothing a
user writes needs them, and nine nested aliases of nine references expand to hundreds of
millions of values the moment anything walks or prints the result (a "billion laughs"); and
a key given twice in one mapping, which PyYAML would settle silently by keeping the last.
"""
from __future__ import annotations

import yaml
from yaml.composer import ComposerError
from yaml.events import AliasEvent

from .errors import InputError


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
            if key_node.tag == "tag:yaml.org,2002:merge":       # '<<:' merges a mapping: not a key
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (str, int, float, bool)) and (type(key), key) in seen:   # 1 and true differ
                raise yaml.constructor.ConstructorError(None, None, f"key {key!r} given twice",
                                                        key_node.start_mark)
            seen.add((type(key), key))
        return super().construct_mapping(node, deep=deep)


def yaml_error(name: str, e: yaml.YAMLError) -> InputError:
    """One line naming the file, the line and the problem."""
    mark = getattr(e, "context_mark", None) or getattr(e, "problem_mark", None)   # where the broken part began
    where = f":{mark.line + 1}" if mark else ""
    return InputError(f"{name}{where}: not valid YAML ({getattr(e, 'problem', None) or 'syntax error'})")


def load_user_yaml(text: str, name: str, loader=UserYamlLoader):
    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as e:
        raise yaml_error(name, e)
    except RecursionError:
        raise InputError(f"{name}: YAML nests too deeply")
