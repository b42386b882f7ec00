#!/usr/bin/env python3
"""Generate rust/kafkars-python/src/protocol/generated.rs from kafka-protocol's sources.

kafka-protocol's message modules are themselves generated and very regular: one
`pub struct X { pub field: Type, ... }` per message and nested struct. We parse them
with regular expressions and emit, for every struct, `ToPy` (struct -> dict) and
`FromPy` (dict -> struct) impls, plus the `RequestKind`/`ResponseKind` dispatch.

Every struct reachable from a response also gets a `ForVersion` impl that resets to
its `Default` each field the negotiated version cannot carry, so handlers can fill in
every field and `encode_response` drops what the version lacks (as Kafka's own
serialisation does for ignorable fields) instead of kafka-protocol refusing with "A
field is set that is not available on the selected protocol version". The versions
at which a field exists are read off kafka-protocol's `impl Encodable` bodies (see
`parse_encode_body`).

Usage (from anywhere inside the repository):

    python3 rust/kafkars-python/gen/gen_protocol_bridge.py [--check]

`--check` writes nothing and exits 1 when the committed file differs from what would
be generated (CI runs it, so the bridge cannot drift from the crate it is built on).

Stdlib only. Fails loudly on any field type, and any statement or condition in an
`encode` body, it does not know, so a kafka-protocol upgrade cannot silently drop
fields or version rules.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CRATE_DIR = Path(__file__).resolve().parent.parent
OUTPUT = CRATE_DIR / "src" / "protocol" / "generated.rs"

# Leaf types with hand-written impls in protocol/types.rs.
LEAF_TYPES = {
    "bool",
    "i8",
    "i16",
    "i32",
    "i64",
    "u16",
    "u32",
    "f64",
    "StrBytes",
    "Bytes",
    "Uuid",
}
# Newtypes defined in kafka_protocol::messages (referenced as `super::X`).
NEWTYPE_RE = re.compile(r"^pub struct (\w+)\(pub (\w+)\);$", re.M)

# The `data` messages' unknown tagged fields (see `parse_structs`).
TAGGED_FIELDS_TYPE = "BTreeMap<i32, Bytes>"

STRUCT_RE = re.compile(r"^pub struct (\w+) \{\n(.*?)^\}", re.M | re.S)
FIELD_RE = re.compile(r"^    pub (\w+): (.+),$", re.M)


@dataclass
class Field:
    name: str
    ty: str
    is_records: bool


@dataclass
class Struct:
    module: str
    name: str
    fields: list[Field]
    # Filled from the `impl Encodable` body: the versions `encode` accepts, and per
    # field the versions at which it is written (tagged or not).
    valid: frozenset[int] = frozenset()
    present: dict[str, frozenset[int]] | None = None

    @property
    def path(self) -> str:
        return f"kp::messages::{self.module}::{self.name}"


def kafka_protocol_src() -> tuple[Path, str]:
    """Find the kafka-protocol crate the workspace actually builds against."""
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1"],
        cwd=CRATE_DIR,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for pkg in json.loads(out)["packages"]:
        if pkg["name"] == "kafka-protocol":
            return Path(pkg["manifest_path"]).parent / "src", pkg["version"]
    sys.exit("kafka-protocol not found in `cargo metadata`")


def check_type(ty: str, local: set[str], newtypes: set[str], where: str) -> None:
    """Walk a field type; exit on anything we have no conversion for."""
    m = re.fullmatch(r"(Option|Vec)<(.+)>", ty)
    if m:
        check_type(m.group(2), local, newtypes, where)
        return
    if ty in LEAF_TYPES or ty in local or ty == TAGGED_FIELDS_TYPE:
        return
    if ty.startswith("super::") and ty.removeprefix("super::") in newtypes:
        return
    sys.exit(f"gen_protocol_bridge: unknown field type {ty!r} in {where}")


def parse_structs(src: Path, newtypes: set[str], data_modules: set[str]) -> list[Struct]:
    """Every struct of kafka-protocol's message modules. Those of `data` messages
    (coordinator records) keep `unknown_tagged_fields` as a `{tag: bytes}` field: a
    record may carry a tag the generator could not type (see vendor/README.md)."""
    structs: list[Struct] = []
    for path in sorted((src / "messages").glob("*.rs")):
        text = path.read_text()
        module = path.stem
        found = STRUCT_RE.findall(text)
        local = {name for name, _ in found}
        for name, body in found:
            fields = []
            parsed = FIELD_RE.findall(body)
            # Every `pub` line of the body must have been understood.
            if len(re.findall(r"^    pub ", body, re.M)) != len(parsed):
                sys.exit(f"gen_protocol_bridge: could not parse every field of {module}::{name}")
            for fname, fty in parsed:
                if fname == "unknown_tagged_fields" and module not in data_modules:
                    continue
                check_type(fty, local, newtypes, f"{module}::{name}.{fname}")
                is_records = fname == "records"
                if is_records and fty != "Option<Bytes>":
                    sys.exit(f"gen_protocol_bridge: {module}::{name}.records has type {fty}")
                fields.append(Field(fname, fty, is_records))
            structs.append(Struct(module, name, fields))
    return structs


# ---------------------------------------------------------------------------
# Field versions, from kafka-protocol's `impl Encodable for X { fn encode(..) }`.
#
# The bodies are a tree of `if <cond> { .. } else { .. }` around statements. We parse
# that tree (after masking string literals and `types::{Struct,OptionStruct} { version }`,
# the only braces that are not blocks) and walk it with the set of versions that can reach each
# point: a version condition splits the set between its branches, an `if` on a
# version whose branch only `bail!`s removes those versions from what follows (that is
# how the supported range is checked), and an `if` on a field's value (tagged-field
# presence, or the "field is set" rejection in an `else`) keeps the set. A field exists
# at the versions that reach a `<type>.encode(buf, &self.field)` for it. Anything not
# in the small vocabulary below is an error, never skipped.

ENCODE_IMPL_RE = re.compile(
    r"^impl Encodable for (\w+) \{\n"
    r"    fn encode<B: ByteBufMut>\(&self, buf: &mut B, version: i16\) -> Result<\(\)> \{\n"
    r"(.*?)\n    \}\n    fn compute_size\(",
    re.M | re.S,
)
VERSION_DOMAIN = frozenset(range(0, 128))  # i16 in principle; kafka stays far below
VERSION_COND_RE = re.compile(r"(?:version|\d+|[<>=!]=|[<>]|&&|\|\||[()]|\s)+")
FIELD_ENCODE_RE = re.compile(r"types::[\w:()]+ ?\.encode\(buf, &self\.(\w+)\)\?")
FIELD_REF_RE = re.compile(r"\bself\s*\.\s*(\w+)")
# Statements that write no field, or write only the tagged-field bookkeeping.
NEUTRAL_STMTS = [
    re.compile(r"(let (mut )?)?num_tagged_fields = self\.unknown_tagged_fields\.len\(\)"),
    re.compile(r"num_tagged_fields \+= 1"),
    re.compile(r"types::UnsignedVarInt\.encode\(buf, (num_tagged_fields|computed_size) as u32\)\?"),
    re.compile(r"types::UnsignedVarInt\.encode\(buf, \d+\)\?"),  # a tag number
    re.compile(r"let computed_size = .*\.compute_size\(&self\.\w+\)\?"),
    re.compile(r"write_unknown_tagged_fields\(buf, \d+\.\., &self\.unknown_tagged_fields\)\?"),
    re.compile(r"bail!\(.*\)"),
    re.compile(r"Ok\(\(\)\)"),
]
SIZE_GUARD_RE = re.compile(r"(num_tagged_fields|computed_size) > std::u32::MAX as usize")


NEVER_WRITTEN: list[str] = []  # reported by main()


class EncodeShapeError(Exception):
    pass


def _tokenize(body: str) -> list[str]:
    body = re.sub(r'"(?:[^"\\]|\\.)*"', '"…"', body)  # "({} fields)" is no block
    body = re.sub(r"types::(Struct|OptionStruct) \{ version \}", r"types::\1(version)", body)
    parts = re.split(r"([{};])", body)
    return [" ".join(p.split()) for p in parts]


def _parse_block(tokens: list[str], i: int, top: bool) -> tuple[list, int]:
    """Items until the matching `}` (or the end at top level). tokens alternate
    text, delimiter, text, delimiter, ..."""
    items: list = []
    while True:
        if i >= len(tokens):
            if not top:
                raise EncodeShapeError("unbalanced braces")
            return items, i
        text = tokens[i]
        delim = tokens[i + 1] if i + 1 < len(tokens) else None
        if delim is None:
            if text:
                items.append(("stmt", text))
            return items, i + 1
        if delim == ";":
            items.append(("stmt", text))
            i += 2
        elif delim == "}":
            if text:  # trailing expression (`Ok(())`)
                items.append(("stmt", text))
            if top:
                raise EncodeShapeError("unbalanced braces")
            return items, i + 2
        elif delim == "{":
            if not text.startswith("if "):
                raise EncodeShapeError(f"block opened by {text!r}")
            item, i = _parse_if(tokens, i)
            items.append(item)
        else:  # pragma: no cover
            raise AssertionError(delim)


def _parse_if(tokens: list[str], i: int) -> tuple[tuple, int]:
    """tokens[i] is `if COND` followed by `{`."""
    cond = tokens[i].removeprefix("if ")
    then, i = _parse_block(tokens, i + 2, top=False)
    otherwise = None
    if i + 1 < len(tokens) and tokens[i + 1] == "{":
        if tokens[i] == "else":
            otherwise, i = _parse_block(tokens, i + 2, top=False)
        elif tokens[i].startswith("else if "):
            tokens[i] = tokens[i].removeprefix("else ")
            nested, i = _parse_if(tokens, i)
            otherwise = [nested]
    return ("if", cond, then, otherwise), i


def _version_split(cond: str, versions: frozenset[int]) -> tuple[frozenset[int], frozenset[int]]:
    """Split `versions` by a condition on `version` alone."""
    expr = cond.replace("&&", " and ").replace("||", " or ")
    if re.search(r"!(?!=)", expr):
        raise EncodeShapeError(f"negated version condition {cond!r}")
    try:
        taken = frozenset(v for v in versions if eval(expr, {"__builtins__": {}}, {"version": v}))
    except Exception as err:
        raise EncodeShapeError(f"version condition {cond!r}: {err}") from None
    return taken, versions - taken


def _only_bails(items: list) -> bool:
    return bool(items) and all(k == "stmt" and t.startswith("bail!(") for k, t, *_ in items)


def _walk(items: list, versions: frozenset[int], written: dict[str, set[int]]) -> frozenset[int]:
    """Record field writes; return the versions that fall through the block."""
    for item in items:
        if item[0] == "stmt":
            text = item[1]
            m = FIELD_ENCODE_RE.fullmatch(text)
            if m:
                written.setdefault(m.group(1), set()).update(versions)
            elif not any(r.fullmatch(text) for r in NEUTRAL_STMTS):
                raise EncodeShapeError(f"unknown statement {text!r}")
            elif text.startswith("bail!("):
                versions = frozenset()  # nothing gets past a bail
            continue
        _, cond, then, otherwise = item
        if SIZE_GUARD_RE.fullmatch(cond):
            if otherwise is not None or not _only_bails(then):
                raise EncodeShapeError(f"size guard with more than a bail: {cond!r}")
            continue
        if "self" in cond:
            # A value test: tagged-field presence (`&self.f != &Default::default()`,
            # `!self.f.is_empty()`, `self.flag`, ...) or, inside an `else`, the
            # "field is set that is not available" rejection. Either way it does not
            # narrow the versions; writes under it count as the field being present.
            if otherwise is not None:
                raise EncodeShapeError(f"else after a value condition {cond!r}")
            _walk(then, versions, written)
            continue
        if not VERSION_COND_RE.fullmatch(cond) or "version" not in cond:
            raise EncodeShapeError(f"unknown condition {cond!r}")
        taken, rest = _version_split(cond, versions)
        out = _walk(then, taken, written)
        if otherwise is not None:
            out |= _walk(otherwise, rest, written)
        else:
            out |= rest
        versions = out
    return versions


def parse_encode_body(body: str) -> tuple[frozenset[int], dict[str, frozenset[int]]]:
    """(versions `encode` accepts, {field: versions at which it is written})."""
    tokens = _tokenize(body)
    items, _ = _parse_block(tokens, 0, top=True)
    first = items[0] if items else None
    if not (
        first
        and first[0] == "if"
        and "self" not in first[1]
        and first[3] is None
        and _only_bails(first[2])
    ):
        raise EncodeShapeError("encode does not start with its supported-version check")
    written: dict[str, set[int]] = {}
    valid = _walk([first], VERSION_DOMAIN, written)
    if not valid or written:
        raise EncodeShapeError("bad supported-version check")
    _walk(items[1:], valid, written)
    return valid, {f: frozenset(v) for f, v in written.items()}


def attach_versions(src: Path, structs: list[Struct]) -> None:
    by_key = {(s.module, s.name): s for s in structs}
    for path in sorted((src / "messages").glob("*.rs")):
        module = path.stem
        text = path.read_text()
        impls = ENCODE_IMPL_RE.findall(text)
        if len(impls) != text.count("\nimpl Encodable for "):
            sys.exit(f"gen_protocol_bridge: an `impl Encodable` in {path.name} has a new shape")
        for name, body in impls:
            s = by_key.get((module, name))
            where = f"{module}::{name}"
            if s is None:
                sys.exit(f"gen_protocol_bridge: Encodable for unknown struct {where}")
            try:
                s.valid, written = parse_encode_body(body)
            except EncodeShapeError as err:
                sys.exit(f"gen_protocol_bridge: cannot read {where}::encode: {err}")
            names = {f.name for f in s.fields}
            # Every field reference in the body must be a field we know.
            refs = set(FIELD_REF_RE.findall(body)) - {"unknown_tagged_fields"}
            if refs - names:
                unknown = sorted(refs - names)
                sys.exit(f"gen_protocol_bridge: {where}::encode uses unknown fields {unknown}")
            s.present = {f.name: frozenset(written.get(f.name, ())) & s.valid for f in s.fields}
            # A field `encode` never mentions belongs to versions past those kafka-protocol
            # encodes (e.g. InitProducerIdRequest.enable_2_pc, v6+): always dropped.
            for f in s.fields:
                if f.name == "unknown_tagged_fields":
                    continue
                if not s.present[f.name] and f.name in refs:
                    sys.exit(f"gen_protocol_bridge: {where}::encode never writes {f.name}")
                if not s.present[f.name]:
                    NEVER_WRITTEN.append(f"{where}.{f.name}")


def parse_enum(text: str, enum: str) -> list[tuple[str, str]]:
    """Variants `Name(Type)` of RequestKind / ResponseKind."""
    m = re.search(rf"^pub enum {enum} \{{\n(.*?)^\}}", text, re.M | re.S)
    if not m:
        sys.exit(f"gen_protocol_bridge: enum {enum} not found")
    return re.findall(r"^    (\w+)\((\w+)\),$", m.group(1), re.M)


def parse_api_keys(text: str) -> list[str]:
    m = re.search(r"^pub enum ApiKey \{\n(.*?)^\}", text, re.M | re.S)
    if not m:
        sys.exit("gen_protocol_bridge: enum ApiKey not found")
    return re.findall(r"^    (\w+) = \d+,$", m.group(1), re.M)


def parse_data_messages(text: str, requests, responses) -> list[tuple[str, str]]:
    """(module, name) of the top-level `data` messages: everything `messages.rs`
    re-exports that is neither a request nor a response (coordinator records, consumer
    protocol messages, headers)."""
    kinds = {ty for _, ty in requests + responses}
    return [(m, n) for m, n in re.findall(r"^pub use (\w+)::(\w+);$", text, re.M) if n not in kinds]


def emit_data_dispatch(data: list[tuple[str, str]]) -> str:
    enc = "\n".join(
        f'        "{n}" => encode_data_as::<kp::messages::{m}::{n}>(obj, version, buf),'
        for m, n in data
    )
    dec = "\n".join(
        f'        "{n}" => decode_data_as::<kp::messages::{m}::{n}>(py, buf, version),'
        for m, n in data
    )
    return f"""
fn unknown_data(name: &str) -> PyErr {{
    PyValueError::new_err(format!("no data message named {{name:?}}"))
}}

/// Encode the `data` message `name` (a coordinator record key or value, ...) from its
/// dict at `version`, appending to `buf`.
pub(crate) fn encode_data(
    name: &str,
    obj: &Bound<'_, PyAny>,
    version: i16,
    buf: &mut BytesMut,
) -> PyResult<()> {{
    match name {{
{enc}
        _ => Err(unknown_data(name)),
    }}
}}

/// Decode the `data` message `name` at `version` from `buf` into its dict.
pub(crate) fn decode_data<'py>(
    py: Python<'py>,
    name: &str,
    buf: &mut bytes::Bytes,
    version: i16,
) -> PyResult<Bound<'py, PyAny>> {{
    match name {{
{dec}
        _ => Err(unknown_data(name)),
    }}
}}
"""


def emit_struct(s: Struct) -> str:
    to_lines = []
    from_arms = []
    for f in s.fields:
        key = f'intern!(py, "{f.name}")'
        if f.is_records:
            value = f"records::records_to_py(py, &self.{f.name})?"
            conv = "records::records_from_py(value)?"
        else:
            value = f"self.{f.name}.to_py(py)?"
            conv = "FromPy::from_py(value)?"
        to_lines.append(f"        dict.set_item({key}, {value})?;")
        from_arms.append(f'                "{f.name}" => out.{f.name} = {conv},')
    field_names = ", ".join(f'"{f.name}"' for f in s.fields)
    if s.fields:
        closure = (
            "|key, value| {\n"
            "            match key {\n" + "\n".join(from_arms) + "\n"
            "                _ => return Ok(false),\n"
            "            }\n"
            "            Ok(true)\n"
            "        }"
        )
    else:
        closure = "|_, _| Ok(false)"
    body_to = "\n".join(to_lines)
    return f"""
impl ToPy for {s.path} {{
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {{
        let dict = PyDict::new(py);
{body_to}
        Ok(dict.into_any())
    }}
}}

impl FromPy for {s.path} {{
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self> {{
        let mut out = Self::default();
        for_each_field(obj, "{s.name}", &[{field_names}], {closure})?;
        Ok(out)
    }}
}}
"""


def version_cond(versions: frozenset[int], valid: frozenset[int]) -> str:
    """A Rust condition on `version` true for `versions`, for any version in `valid`
    (outside `valid`, `encode` bails anyway, so the ends may stay open)."""
    assert versions <= valid and valid
    if versions == valid:
        return "true"
    if not versions:
        return "false"
    lo, hi = min(valid), max(valid)
    vs = sorted(versions)
    runs, start = [], vs[0]
    for a, b in zip(vs, [*vs[1:], None], strict=True):
        if b != a + 1:
            runs.append((start, a))
            start = b
    conds = []
    for a, b in runs:
        if a <= lo:
            conds.append(f"version <= {b}")
        elif b >= hi:
            conds.append(f"version >= {a}")
        elif a == b:
            conds.append(f"version == {a}")
        else:
            conds.append(f"({a}..={b}).contains(&version)")
    return " || ".join(conds)


def nested_struct(ty: str, local: set[str]) -> tuple[str, str] | None:
    """(how to reach the nested structs, struct name) for struct-valued fields."""
    for pattern, shape in (
        (r"(\w+)", "one"),
        (r"Option<(\w+)>", "option"),
        (r"Vec<(\w+)>", "vec"),
        (r"Option<Vec<(\w+)>>", "option_vec"),
    ):
        m = re.fullmatch(pattern, ty)
        if m and m.group(1) in local:
            return shape, m.group(1)
    if re.search(r"\b(" + "|".join(map(re.escape, local)) + r")\b", ty) if local else False:
        sys.exit(f"gen_protocol_bridge: no ForVersion recursion for field type {ty}")
    return None


def response_structs(structs: list[Struct], responses) -> list[Struct]:
    """Every struct reachable from a ResponseKind payload, in `structs` order."""
    by_key = {(s.module, s.name): s for s in structs}
    local = {}
    for s in structs:
        local.setdefault(s.module, set()).add(s.name)
    top = {s.name: s for s in structs if s.name in {ty for _, ty in responses}}
    seen: set[tuple[str, str]] = set()
    stack = [(top[ty].module, ty) for _, ty in responses]
    while stack:
        key = stack.pop()
        if key in seen:
            continue
        seen.add(key)
        for f in by_key[key].fields:
            nested = nested_struct(f.ty, local[key[0]])
            if nested:
                stack.append((key[0], nested[1]))
    return [s for s in structs if (s.module, s.name) in seen]


def when(cond: str, stmt: str, block: bool = False) -> str:
    if cond == "true":
        return f"{{\n{stmt}\n}}" if block else stmt
    return f"if {cond} {{\n{stmt}\n}}"


def emit_for_version(s: Struct, local: set[str]) -> str:
    if s.present is None:
        sys.exit(f"gen_protocol_bridge: no Encodable impl parsed for {s.module}::{s.name}")
    drops = []  # (field, condition under which it is reset)
    recurse = []
    absent_anywhere: set[int] = set()
    for f in s.fields:
        present = s.present[f.name]
        absent = s.valid - present
        if absent:
            drops.append((f.name, version_cond(absent, s.valid)))
            absent_anywhere |= absent
        nested = nested_struct(f.ty, local)
        if nested:
            cond = version_cond(present, s.valid)
            shape = nested[0]
            if shape == "one":
                stmt = f"self.{f.name}.retain_version(version);"
            elif shape == "option":
                stmt = f"if let Some(x) = &mut self.{f.name} {{ x.retain_version(version); }}"
            elif shape == "vec":
                stmt = f"for x in &mut self.{f.name} {{ x.retain_version(version); }}"
            else:
                stmt = (
                    f"for x in self.{f.name}.iter_mut().flatten() {{ x.retain_version(version); }}"
                )
            if cond != "false":
                recurse.append(when(cond, stmt))
    lines = []
    if len(drops) == 1:
        name, cond = drops[0]
        lines.append(when(cond, f"self.{name} = Self::default().{name};"))
    elif drops:
        # Build the default only at versions that drop something (usually not the newest).
        inner = "\n".join(when(cond, f"self.{name} = d.{name};") for name, cond in drops)
        any_cond = version_cond(frozenset(absent_anywhere), s.valid)
        lines.append(when(any_cond, f"let d = Self::default();\n{inner}", block=True))
    lines.extend(recurse)
    arg = "version" if lines else "_version"
    body = "\n".join(lines)
    return f"""
impl ForVersion for {s.path} {{
    fn retain_version(&mut self, {arg}: i16) {{
{body}
    }}
}}
"""


def emit_dispatch(requests, responses, api_keys) -> str:
    req_arms = "\n".join(f"        RequestKind::{v}(x) => x.to_py(py)," for v, _ in requests)
    resp_to_arms = "\n".join(f"        ResponseKind::{v}(x) => x.to_py(py)," for v, _ in responses)
    resp_variants = {v for v, _ in responses}
    missing = [k for k in api_keys if k not in resp_variants]
    if missing:
        sys.exit(f"gen_protocol_bridge: ApiKeys without a ResponseKind variant: {missing}")
    from_arms = "\n".join(
        f"        ApiKey::{k} => ResponseKind::{k}(FromPy::from_py(obj)?)," for k in api_keys
    )
    req_variants = {v for v, _ in requests}
    missing = [k for k in api_keys if k not in req_variants]
    if missing:
        sys.exit(f"gen_protocol_bridge: ApiKeys without a RequestKind variant: {missing}")
    req_from_arms = "\n".join(
        f"        ApiKey::{k} => RequestKind::{k}(FromPy::from_py(obj)?)," for k in api_keys
    )
    enc_arms = "\n".join(
        f"        ResponseKind::{v}(x) => Encodable::encode(x, buf, version)," for v, _ in responses
    )
    sanitize_arms = "\n".join(
        f"        ResponseKind::{v}(x) => x.retain_version(version)," for v, _ in responses
    )
    name_arms = "\n".join(f'        ApiKey::{k} => "{k}",' for k in api_keys)
    req_types, resp_types = dict(requests), dict(responses)
    version_arms = "\n".join(
        f"        ApiKey::{k} => intersect(<kp::messages::{req_types[k]} as Message>::VERSIONS, "
        f"<kp::messages::{resp_types[k]} as Message>::VERSIONS),"
        for k in api_keys
    )
    return f"""
const UNKNOWN_KIND: &str = "message kind unknown to the protocol bridge; regenerate generated.rs";

/// The request body as a Python dict (see `ToPy`).
pub(crate) fn request_to_py<'py>(
    py: Python<'py>,
    req: &RequestKind,
) -> PyResult<Bound<'py, PyAny>> {{
    match req {{
{req_arms}
        // RequestKind is #[non_exhaustive]; a newer kafka-protocol needs a regenerate.
        _ => Err(PyNotImplementedError::new_err(UNKNOWN_KIND)),
    }}
}}

/// A response as a Python dict: for tests and tools (handlers build responses, they
/// do not read them).
pub(crate) fn response_to_py<'py>(
    py: Python<'py>,
    resp: &ResponseKind,
) -> PyResult<Bound<'py, PyAny>> {{
    match resp {{
{resp_to_arms}
        _ => Err(PyNotImplementedError::new_err(UNKNOWN_KIND)),
    }}
}}

/// Build the response for `api_key` from a handler's dict (see `FromPy`).
pub(crate) fn response_from_py(api_key: ApiKey, obj: &Bound<'_, PyAny>) -> PyResult<ResponseKind> {{
    Ok(match api_key {{
{from_arms}
    }})
}}

/// Build a request for `api_key` from a dict (see `FromPy`): the client side, for the
/// Spark reader and tools.
pub(crate) fn request_from_py(api_key: ApiKey, obj: &Bound<'_, PyAny>) -> PyResult<RequestKind> {{
    Ok(match api_key {{
{req_from_arms}
    }})
}}

/// Reset to their defaults the fields (at any depth) that `version` of the response
/// cannot carry; see `ForVersion`.
pub(crate) fn sanitize_response(resp: &mut ResponseKind, version: i16) {{
    match resp {{
{sanitize_arms}
        // Unknown kinds fail in `encode_response`.
        _ => {{}}
    }}
}}

/// Encode a response body into any `ByteBufMut` (`ResponseKind::encode` only takes
/// `BytesMut`; the network layer writes into its own buffers). Fields `version` does
/// not have are dropped first (`sanitize_response`), so handlers need not know which
/// version they answer.
pub(crate) fn encode_response<B: ByteBufMut>(
    mut resp: ResponseKind,
    version: i16,
    buf: &mut B,
) -> anyhow::Result<()> {{
    sanitize_response(&mut resp, version);
    match &resp {{
{enc_arms}
        _ => anyhow::bail!(UNKNOWN_KIND),
    }}
}}

/// Versions this build can both decode the request and encode the response for.
///
/// Use this, not `ApiKey::valid_versions`, for ApiVersions: kafka-protocol 0.18 reports
/// e.g. OffsetCommit up to v10 while its OffsetCommitRequest only decodes up to v9.
pub(crate) fn supported_versions(api_key: ApiKey) -> VersionRange {{
    const fn intersect(a: VersionRange, b: VersionRange) -> VersionRange {{
        VersionRange {{
            min: if a.min > b.min {{ a.min }} else {{ b.min }},
            max: if a.max < b.max {{ a.max }} else {{ b.max }},
        }}
    }}
    match api_key {{
{version_arms}
    }}
}}

/// The API's name as kafka-protocol spells it (`"Produce"`, `"ApiVersions"`, ...).
pub(crate) fn api_key_name(api_key: ApiKey) -> &'static str {{
    match api_key {{
{name_arms}
    }}
}}
"""


HEADER = """\
// @generated by rust/kafkars-python/gen/gen_protocol_bridge.py from kafka-protocol {version}.
// Do not edit. Regenerate with (it runs rustfmt on this file itself):
//     python3 rust/kafkars-python/gen/gen_protocol_bridge.py
//
// One `ToPy` (struct -> dict) and one `FromPy` (dict -> struct) impl per message struct,
// a `ForVersion` impl per struct a response can contain (field versions read off
// kafka-protocol's `encode` bodies), plus the RequestKind / ResponseKind dispatch and
// the by-name dispatch of the `data` messages (coordinator records).
// Leaf types live in `types.rs`, record fields in `records.rs`.

use bytes::BytesMut;
use kafka_protocol as kp;
use kafka_protocol::messages::{{ApiKey, RequestKind, ResponseKind}};
use kafka_protocol::protocol::{{Encodable, Message, VersionRange}};
use kafka_protocol::protocol::buf::ByteBufMut;
use pyo3::exceptions::{{PyNotImplementedError, PyValueError}};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::records;
use super::{{ForVersion, FromPy, ToPy, decode_data_as, encode_data_as, for_each_field}};
"""


def main() -> None:
    src, version = kafka_protocol_src()
    messages_rs = (src / "messages.rs").read_text()
    newtypes = {name for name, _inner in NEWTYPE_RE.findall(messages_rs)}
    requests = parse_enum(messages_rs, "RequestKind")
    responses = parse_enum(messages_rs, "ResponseKind")
    data = parse_data_messages(messages_rs, requests, responses)
    structs = parse_structs(src, newtypes, {m for m, _ in data})
    attach_versions(src, structs)
    api_keys = parse_api_keys(messages_rs)
    known = {s.name for s in structs}
    for _, ty in requests + responses:
        if ty not in known:
            sys.exit(f"gen_protocol_bridge: enum payload {ty} has no parsed struct")
    out = [HEADER.format(version=version)]
    out.append(emit_dispatch(requests, responses, api_keys))
    out.append(emit_data_dispatch(data))
    out.extend(emit_struct(s) for s in structs)
    local: dict[str, set[str]] = {}
    for s in structs:
        local.setdefault(s.module, set()).add(s.name)
    sanitized = response_structs(structs, responses)
    out.extend(emit_for_version(s, local[s.module]) for s in sanitized)
    check = "--check" in sys.argv[1:]
    target = OUTPUT.with_suffix(".rs.check") if check else OUTPUT
    target.write_text("".join(out))
    subprocess.run(["rustfmt", "--edition", "2024", str(target)], check=False)
    if check:
        fresh = target.read_text()
        target.unlink()
        if fresh != OUTPUT.read_text():
            sys.exit(
                f"{OUTPUT.relative_to(CRATE_DIR.parent.parent)} is out of date: run "
                "python3 rust/kafkars-python/gen/gen_protocol_bridge.py"
            )
        print(f"{OUTPUT.relative_to(CRATE_DIR.parent.parent)} is up to date")
        return
    if NEVER_WRITTEN:
        print("fields no encodable version writes:", ", ".join(NEVER_WRITTEN))
    print(
        f"wrote {OUTPUT.relative_to(CRATE_DIR.parent.parent)}: {len(structs)} structs, "
        f"{len(requests)} requests, {len(responses)} responses, {len(api_keys)} api keys, "
        f"{len(data)} data messages, "
        f"{len(sanitized)} ForVersion impls"
    )


if __name__ == "__main__":
    main()
