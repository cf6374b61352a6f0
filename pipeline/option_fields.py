"""Options declared once, as dataclass fields: the command line and validation are both built from them.

A field made with ``option()`` carries its flag, help text and allowed values;
``add_arguments`` turns the fields into argparse arguments, ``from_args`` turns
parsed arguments back into the dataclass, and ``check`` validates an instance
built either way. argparse only converts text to the field's type, so that
every rejected value, typed or built in Python, is one UserError line.
"""

import argparse
import math
import re
import types
import typing
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass

from ngramflow.errors import UserError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str, what: str) -> int:
    """'2g', '1536m', '64KiB' -> bytes."""
    found = _SIZE.match(str(text))
    if not found:
        raise UserError(f"{what} takes a size such as 2g or 64m, got {text!r}")
    return int(float(found.group(1)) * _UNITS[found.group(2).lower()])


class OneOf(tuple):
    """Allowed values: exactly these."""

    def check(self, flag: str, value) -> None:
        if value not in self:
            raise UserError(f"{flag} is one of {', '.join(self)}, got {value!r}")

    @property
    def metavar(self) -> str:  # argparse's own spelling of choices, which we do not let argparse enforce
        return "{" + ",".join(self) + "}"


@dataclass(frozen=True)
class Within:
    """Allowed values: numbers from ``low`` (exclusive with ``above``) up to ``high``."""

    low: float | None = None
    high: float | None = None
    above: bool = False

    def check(self, flag: str, value) -> None:
        low_ok = self.low is None or (value > self.low if self.above else value >= self.low)
        if low_ok and (self.high is None or value <= self.high):
            return
        if self.high is not None:
            raise UserError(f"{flag} must be within {self.low}-{self.high}, got {value}")
        if self.above:
            raise UserError(f"{flag} must be {'positive' if self.low == 0 else f'above {self.low}'}, got {value}")
        raise UserError(f"{flag} must be at least {self.low}, got {value}")


@dataclass(frozen=True)
class Size:
    """Allowed values: sizes such as 2g or 64m, at least ``minimum``."""

    minimum: str

    def bytes(self, flag: str, text: str) -> int:
        size = parse_size(text, flag)
        if size < parse_size(self.minimum, "minimum"):
            raise UserError(f"{flag} must be at least {self.minimum}, got {text}")
        return size

    def check(self, flag: str, value) -> None:
        self.bytes(flag, value)


@dataclass(frozen=True)
class Matches:
    """Allowed values: text matching ``pattern``, described to the user as ``what``."""

    pattern: str
    what: str

    def check(self, flag: str, value) -> None:
        if not re.fullmatch(self.pattern, value):
            raise UserError(f"{flag} takes {self.what}, got {value!r}")


def option(default=MISSING, help: str = "", *, flags: tuple | None = None, metavar: str | None = None,
           allowed=None, needs: tuple = (), cli: bool = True, recorded: bool = True, resumable: bool = False,
           shown_with: type | None = None, default_factory=MISSING):
    """A declared option.

    flags: its command-line spellings (default ``--field-name``; () for a positional argument, named by metavar)
    allowed: OneOf, Within, Size or Matches
    needs: (field, value[, why]) that must hold when the option is set away from its default
    cli: an option of the command line (else its caller sets it)
    recorded: kept in the manifest's "options"
    resumable: may change between an interrupted checkpointed run and its resumption
    shown_with: the group (a dataclass with HELP) --help lists the flag under, when not its own class's
    """
    meta = {"help": help, "flags": flags, "metavar": metavar, "allowed": allowed, "needs": needs, "cli": cli,
            "recorded": recorded, "resumable": resumable, "shown_with": shown_with}
    return field(default=default, default_factory=default_factory, metadata={"option": meta})


def declared(cls_or_obj) -> list:
    """The fields of a dataclass made with option(), in order."""
    return [f for f in fields(cls_or_obj) if "option" in f.metadata]


def groups(cls_or_obj) -> list:
    """The fields of a dataclass that are dataclasses of options themselves (e.g. the Flink options)."""
    return [f for f in fields(cls_or_obj) if is_dataclass(f.type)]


def flag_of(f) -> str:
    """How messages name the option: its long flag, a positional argument's metavar, or else its field name."""
    meta = f.metadata["option"]
    if not meta["cli"]:
        return f.name
    if meta["flags"] is None:
        return "--" + f.name.replace("_", "-")
    return meta["flags"][-1] if meta["flags"] else meta["metavar"]


def _is_positional(f) -> bool:
    return f.metadata["option"]["flags"] == ()


def _default(f):
    if f.default_factory is not MISSING:
        return f.default_factory()
    return None if f.default is MISSING else f.default


def _base_type(annotation) -> tuple:
    """(type, optional) of an annotation such as ``int | None`` or ``list[str]``."""
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType):
        return next(a for a in args if a is not type(None)), True
    return annotation, False


_TAKES = {int: "a whole number", float: "a number", str: "text", bool: "true or false", list: "a list of text"}


def _type_ok(kind, value) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if typing.get_origin(kind) is list:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, kind)


def typed(kind, flag: str):
    """Text -> the field's type for argparse; a bad text is a UserError, not argparse's usage message."""
    def convert(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not _type_ok(kind, value):
            raise UserError(f"{flag} takes {_TAKES[kind]}, got {text!r}")
        return value
    return convert


def add_arguments(parser, cls, groups_by_class: dict | None = None) -> None:
    """Add the options of dataclass ``cls`` (and of its option groups, in field order) to an argparse parser."""
    groups_by_class = {} if groups_by_class is None else groups_by_class

    def target(group_class):
        if group_class is None:
            return parser
        if group_class not in groups_by_class:
            groups_by_class[group_class] = parser.add_argument_group(*group_class.HELP)
        return groups_by_class[group_class]

    for f in fields(cls):
        if is_dataclass(f.type):
            add_arguments(target(f.type), f.type, groups_by_class)
            continue
        if "option" not in f.metadata or not f.metadata["option"]["cli"]:
            continue
        meta = f.metadata["option"]
        kind, _ = _base_type(f.type)
        flag = flag_of(f)
        kwargs = {"help": meta["help"]}
        metavar = meta["metavar"] or getattr(meta["allowed"], "metavar", None)
        if metavar and not _is_positional(f):
            kwargs["metavar"] = metavar
        if typing.get_origin(kind) is list:
            # A positional list may be empty on the command line (the inputs of an import that reads a queue
            # instead); the class's validation says what is missing.
            kwargs["nargs"] = "*" if _is_positional(f) else "+"
        elif kind is bool:
            kwargs["action"] = "store_true"
        elif kind in (int, float):
            kwargs["type"] = typed(kind, flag)
        if _is_positional(f):
            target(meta["shown_with"]).add_argument(f.name, metavar=metavar, **kwargs)
            continue
        if f.default is MISSING and f.default_factory is MISSING:
            kwargs["required"] = True
        else:
            kwargs["default"] = _default(f)
        target(meta["shown_with"]).add_argument(*(meta["flags"] or (flag,)), dest=f.name, **kwargs)


def from_args(cls, args: argparse.Namespace, **rest):
    """An instance of ``cls`` from parsed arguments; ``rest`` fills the fields that are no command-line option."""
    values = {f.name: getattr(args, f.name) for f in declared(cls) if f.metadata["option"]["cli"]}
    values.update({f.name: from_args(f.type, args) for f in groups(cls)})
    return cls(**values, **rest)


def check(obj, scope: dict) -> None:
    """Validate every declared field of ``obj``: its type, its allowed values, and what it needs.

    ``scope`` maps field names to values for ``needs`` (options of a group may need one of their parent's).
    """
    for f in declared(obj):
        meta, value, flag = f.metadata["option"], getattr(obj, f.name), flag_of(f)
        if value != _default(f):
            for name, wanted, *why in meta["needs"]:
                if scope[name] != wanted:
                    other = "--" + name.replace("_", "-")
                    raise UserError(f"{flag} needs {other} {wanted}" + "".join(f"; {w}" for w in why))
        kind, optional = _base_type(f.type)
        if value is None and optional:
            continue
        if not _type_ok(kind, value):
            raise UserError(f"{flag} takes {_TAKES[typing.get_origin(kind) or kind]}, got {value!r}")
        if meta["allowed"] is not None:
            meta["allowed"].check(flag, value)


def recorded(obj) -> dict:
    """The fields of ``obj`` the manifest records, by name, with its option groups' fields flattened in."""
    out = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        if is_dataclass(f.type):
            out.update(recorded(value))
        elif "option" not in f.metadata or f.metadata["option"]["recorded"]:
            out[f.name] = asdict(value) if is_dataclass(value) else value
    return out


def resumable(cls) -> set:
    """Names of the options (of ``cls`` and its groups) that may change when a checkpointed run resumes."""
    names = {f.name for f in declared(cls) if f.metadata["option"]["resumable"]}
    return names.union(*(resumable(f.type) for f in groups(cls)))
