"""A small re-implementation of Kafka's ``ConfigDef``: typed keys, parsing, validation.

Values arrive as strings (properties files, ``--override``, AlterConfigs) or as Python
values (the embedded broker's dict); either way they are parsed the way Kafka's
``ConfigDef.parseType`` does and rendered back the way ``ConfigDef.convertToString`` does,
so DescribeConfigs shows what a Java broker would show.
"""

from __future__ import annotations

import builtins
import enum
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kafkars.protocol import Errors

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
DOUBLE_MAX = 1.7976931348623157e308

# Kafka error codes a config failure maps to (from the one table, kafkars.protocol).
INVALID_CONFIG = int(Errors.INVALID_CONFIG)
INVALID_REQUEST = int(Errors.INVALID_REQUEST)


class ConfigException(ValueError):
    """A configuration value (or combination of values) is not acceptable.

    ``name``/``value`` are set when one key is at fault; ``error_code`` is the Kafka error
    code a request handler should answer with (INVALID_CONFIG unless said otherwise).
    """

    def __init__(
        self,
        message: str,
        *,
        name: str | None = None,
        value: object = None,
        error_code: int = INVALID_CONFIG,
    ) -> None:
        super().__init__(message)
        self.name = name
        self.value = value
        self.error_code = error_code

    @classmethod
    def invalid(cls, name: str, value: object, constraint: str) -> ConfigException:
        """Kafka's wording: ``Invalid value <v> for configuration <k>: <why>``."""
        shown = "[hidden]" if isinstance(value, Password) else value
        return cls(
            f"Invalid value {shown} for configuration {name}: {constraint}", name=name, value=value
        )


class ConfigType(enum.IntEnum):
    """Config value types; the numbers are DescribeConfigs v3+ ``ConfigType`` ids."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class Importance(enum.Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class UpdateMode(enum.Enum):
    """How a broker config may change at run time (the docs' "Update Mode")."""

    READ_ONLY = "read-only"
    PER_BROKER = "per-broker"
    CLUSTER_WIDE = "cluster-wide"


class Password:
    """A secret value; never shows itself in repr/str, only through ``.value``."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "[hidden]"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


class _Required:
    """Marker for keys without a default (the user must give a value)."""

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _Required()


# -- validators ------------------------------------------------------------------------------


class Validator:
    """Checks a parsed value; raises ConfigException. ``str()`` describes the rule."""

    def __call__(self, name: str, value: Any) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class Range(Validator):
    """Numeric bounds, inclusive; None means open on that side (``atLeast``/``between``)."""

    def __init__(self, min: float | None = None, max: float | None = None) -> None:
        self.min, self.max = min, max

    def __call__(self, name: str, value: Any) -> None:
        if value is None:
            return  # null is allowed through, as in Kafka's Range
        if self.min is not None and value < self.min:
            raise ConfigException.invalid(name, value, f"Value must be at least {self.min}")
        if self.max is not None and value > self.max:
            raise ConfigException.invalid(name, value, f"Value must be no more than {self.max}")

    def __str__(self) -> str:
        if self.max is None:
            return f"[{self.min},...]"
        if self.min is None:
            return f"[...,{self.max}]"
        return f"[{self.min},...,{self.max}]"


def at_least(n: float) -> Range:
    return Range(min=n)


def between(lo: float, hi: float) -> Range:
    return Range(min=lo, max=hi)


class ValidString(Validator):
    """One of a fixed set of strings (optionally case-insensitive)."""

    def __init__(self, *options: str, case_insensitive: bool = False) -> None:
        self.options = list(options)
        self.case_insensitive = case_insensitive

    def __call__(self, name: str, value: Any) -> None:
        if value is None:
            raise ConfigException.invalid(name, value, f"String must be one of: {self}")
        candidates = self.options
        probe = value
        if self.case_insensitive:
            candidates = [o.upper() for o in self.options]
            probe = value.upper()
        if probe not in candidates:
            raise ConfigException.invalid(name, value, f"String must be one of: {self}")

    def __str__(self) -> str:
        return ", ".join(self.options)


class ValidList(Validator):
    """Every element of a list is one of the given strings (``ValidList.in``)."""

    def __init__(self, *options: str, allow_empty: bool = True) -> None:
        self.options = list(options)
        self.allow_empty = allow_empty

    def __call__(self, name: str, value: Any) -> None:
        if value is None:
            raise ConfigException.invalid(name, value, "Value must not be null")
        if not value and not self.allow_empty:
            raise ConfigException.invalid(name, value, "Empty list is not allowed")
        for item in value:
            if item not in self.options:
                raise ConfigException.invalid(
                    name, item, f"String must be one of: {', '.join(self.options)}"
                )

    def __str__(self) -> str:
        return "[" + ", ".join(self.options) + "]"


class NonNull(Validator):
    def __call__(self, name: str, value: Any) -> None:
        if value is None:
            raise ConfigException(
                f'Missing required configuration "{name}" which has no default value.',
                name=name,
            )

    def __str__(self) -> str:
        return "non-null string"


class Lambda(Validator):
    """A predicate with a description, for the odd one-off rule."""

    def __init__(self, check: Callable[[Any], bool], description: str) -> None:
        self.check = check
        self.description = description

    def __call__(self, name: str, value: Any) -> None:
        if value is not None and not self.check(value):
            raise ConfigException.invalid(name, value, f"Value must be {self.description}")

    def __str__(self) -> str:
        return self.description


def compression_level(lo: int, hi: int, default: int | None = None) -> Validator:
    """A codec level range; gzip also accepts its "default" sentinel (-1)."""
    if default is None:
        return between(lo, hi)
    return Lambda(lambda v: lo <= v <= hi or v == default, f"[{lo},...,{hi}] or {default}")


# -- keys and the definition table -----------------------------------------------------------


@dataclass(frozen=True)
class ConfigKey:
    """One defined configuration key."""

    name: str
    type: ConfigType
    default: Any
    validator: Validator | None
    importance: Importance
    doc: str
    update_mode: UpdateMode = UpdateMode.READ_ONLY
    internal: bool = False

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    @property
    def dynamic(self) -> bool:
        return self.update_mode is not UpdateMode.READ_ONLY


_INT_RE = re.compile(r"[+-]?\d+")
_DOUBLE_RE = re.compile(r"[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?))[fFdD]?")
_COMMA = re.compile(r"\s*,\s*")
_TYPE_NAMES = {
    ConfigType.BOOLEAN: "boolean",
    ConfigType.STRING: "string",
    ConfigType.INT: "int",
    ConfigType.SHORT: "short",
    ConfigType.LONG: "long",
    ConfigType.DOUBLE: "double",
    ConfigType.LIST: "list",
    ConfigType.CLASS: "class",
    ConfigType.PASSWORD: "password",
}


def _int_in(name: str, raw: Any, value: int, lo: int, hi: int, kind: str) -> int:
    if not lo <= value <= hi:
        raise ConfigException.invalid(name, raw, f"Not a number of type {kind}")
    return value


def parse_type(name: str, value: Any, type: ConfigType) -> Any:
    """Parse ``value`` (a string or an already typed value) into ``type``, as Kafka does."""
    if value is None:
        return None
    if isinstance(value, str):
        trimmed = value.strip()
        if type is ConfigType.BOOLEAN:
            low = trimmed.lower()
            if low in ("true", "false"):
                return low == "true"
            raise ConfigException.invalid(name, value, "Expected value to be either true or false")
        if type in (ConfigType.STRING, ConfigType.CLASS):
            return trimmed
        if type is ConfigType.PASSWORD:
            return Password(trimmed)
        if type in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
            if not _INT_RE.fullmatch(trimmed):
                raise ConfigException.invalid(name, value, f"Not a number of type {type.name}")
            return _check_int(name, value, int(trimmed), type)
        if type is ConfigType.DOUBLE:
            if not _DOUBLE_RE.fullmatch(trimmed):
                raise ConfigException.invalid(name, value, "Not a number of type DOUBLE")
            return float(trimmed.rstrip("fFdD").replace("Infinity", "inf"))
        if type is ConfigType.LIST:
            return [] if not trimmed else _COMMA.split(trimmed)
        return value
    # Typed Python values (embedded broker, defaults, dynamic JSON).
    if type is ConfigType.BOOLEAN and isinstance(value, bool):
        return value
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if type in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG) and is_int:
        return _check_int(name, value, value, type)
    if (
        type is ConfigType.DOUBLE
        and isinstance(value, (int, float))
        and not isinstance(value, bool)
    ):
        return float(value)
    if type is ConfigType.LIST and isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value]
    if type is ConfigType.PASSWORD and isinstance(value, Password):
        return value
    if type is ConfigType.CLASS and isinstance(value, builtins.type):
        return f"{value.__module__}.{value.__qualname__}"
    raise ConfigException.invalid(
        name, value, f"Expected value to be a {_TYPE_NAMES.get(type, type.name.lower())}"
    )


def _check_int(name: str, raw: Any, value: int, type: ConfigType) -> int:
    if type is ConfigType.INT:
        return _int_in(name, raw, value, INT_MIN, INT_MAX, "INT")
    if type is ConfigType.SHORT:
        return _int_in(name, raw, value, SHORT_MIN, SHORT_MAX, "SHORT")
    return _int_in(name, raw, value, LONG_MIN, LONG_MAX, "LONG")


def java_double(value: float) -> str:
    """``Double.toString``: plain between 1e-3 and 1e7, else ``d.dddE<exp>``."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    magnitude = abs(value)
    if value == 0 or 1e-3 <= magnitude < 1e7:
        text = repr(value)
        return text if ("." in text or "e" in text) else text + ".0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    exp10 = exponent + len(digits) - 1
    mantissa = ds[0] + "." + (ds[1:] or "0")
    return ("-" if sign else "") + f"{mantissa}E{exp10}"


def to_string(value: Any, type: ConfigType | None) -> str | None:
    """Render a parsed value as Kafka's ``ConfigDef.convertToString`` does (None stays None)."""
    if value is None:
        return None
    if isinstance(value, Password):
        return value.value
    if type is ConfigType.LIST or isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if type is ConfigType.DOUBLE or isinstance(value, float):
        return java_double(float(value))
    return str(value)


class ConfigDef:
    """An ordered table of :class:`ConfigKey`, with Kafka's parse/validate behaviour."""

    def __init__(self, keys: Iterable[ConfigKey] = ()) -> None:
        self._keys: dict[str, ConfigKey] = {}
        for key in keys:
            self.add(key)

    def add(self, key: ConfigKey) -> ConfigDef:
        if key.name in self._keys:
            raise ValueError(f"Configuration {key.name} is defined twice.")
        if key.has_default and key.default is not None:
            # Defaults go through the same parser, so a bad table entry fails at import time.
            parsed = parse_type(key.name, key.default, key.type)
            if key.validator is not None:
                key.validator(key.name, parsed)
            object.__setattr__(key, "default", parsed)
        self._keys[key.name] = key
        return self

    def define(
        self,
        name: str,
        type: ConfigType,
        default: Any,
        importance: Importance,
        doc: str,
        *,
        validator: Validator | None = None,
        update_mode: UpdateMode = UpdateMode.READ_ONLY,
        internal: bool = False,
    ) -> ConfigDef:
        """Add a key; returns self so definitions chain like Kafka's."""
        return self.add(
            ConfigKey(name, type, default, validator, importance, doc, update_mode, internal)
        )

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def __getitem__(self, name: str) -> ConfigKey:
        return self._keys[name]

    def __iter__(self) -> Iterator[ConfigKey]:
        return iter(self._keys.values())

    def __len__(self) -> int:
        return len(self._keys)

    def get(self, name: str) -> ConfigKey | None:
        return self._keys.get(name)

    def names(self) -> list[str]:
        return list(self._keys)

    def parse_value(self, name: str, raw: Any) -> Any:
        """Parse and validate one value for a defined key."""
        key = self._keys[name]
        value = parse_type(name, raw, key.type)
        if key.validator is not None:
            key.validator(name, value)
        return value

    def default_of(self, name: str) -> Any:
        key = self._keys[name]
        if not key.has_default:
            raise ConfigException(
                f'Missing required configuration "{name}" which has no default value.',
                name=name,
            )
        return key.default

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Values for every defined key: given ones parsed and validated, others defaulted."""
        values: dict[str, Any] = {}
        for key in self._keys.values():
            if key.name in props:
                values[key.name] = self.parse_value(key.name, props[key.name])
            else:
                values[key.name] = self.default_of(key.name)
        return values

    def defaults_as_strings(self) -> dict[str, str]:
        """Non-null defaults rendered as strings (Kafka's ``staticDefaultConfigs``)."""
        out: dict[str, str] = {}
        for key in self._keys.values():
            if key.has_default and key.default is not None:
                rendered = to_string(key.default, key.type)
                if rendered is not None:
                    out[key.name] = rendered
        return out


def split_list(value: str) -> list[str]:
    """A LIST value's items, split on commas and trimmed (empty string: no items)."""
    trimmed = value.strip()
    return [] if not trimmed else _COMMA.split(trimmed)


def join_list(items: Sequence[str]) -> str:
    return ",".join(items)
