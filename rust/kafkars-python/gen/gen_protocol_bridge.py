#!/usr/bin/env python3
"""Generate rust/kafkars-python/src/protocol/generated.rs from kafka-protocol's sources.

kafka-protocol's message modules are themselves generated and very regular: one
`pub struct X { pub field: Type, ... }` per message and nested struct. We parse them
with regular expressions and emit, for every struct, `ToPy` (struct -> dict) and
`FromPy` (dict -> struct) impls, plus the `RequestKind`/`ResponseKind` dispatch.

Usage (from anywhere inside the repository):

    python3 rust/kafkars-python/gen/gen_protocol_bridge.py

Stdlib only. Fails loudly on any field type it does not know, so a kafka-protocol
upgrade cannot silently drop fields.
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
    if ty in LEAF_TYPES or ty in local:
        return
    if ty.startswith("super::") and ty.removeprefix("super::") in newtypes:
        return
    sys.exit(f"gen_protocol_bridge: unknown field type {ty!r} in {where}")


def parse_structs(src: Path, newtypes: set[str]) -> list[Struct]:
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
                if fname == "unknown_tagged_fields":
                    continue
                check_type(fty, local, newtypes, f"{module}::{name}.{fname}")
                is_records = fname == "records"
                if is_records and fty != "Option<Bytes>":
                    sys.exit(f"gen_protocol_bridge: {module}::{name}.records has type {fty}")
                fields.append(Field(fname, fty, is_records))
            structs.append(Struct(module, name, fields))
    return structs


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
    enc_arms = "\n".join(
        f"        ResponseKind::{v}(x) => Encodable::encode(x, buf, version)," for v, _ in responses
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

/// Encode a response body into any `ByteBufMut` (`ResponseKind::encode` only takes
/// `BytesMut`; the network layer writes into its own buffers).
pub(crate) fn encode_response<B: ByteBufMut>(
    resp: &ResponseKind,
    version: i16,
    buf: &mut B,
) -> anyhow::Result<()> {{
    match resp {{
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
// Do not edit. Regenerate with:
//     python3 rust/kafkars-python/gen/gen_protocol_bridge.py && cargo fmt -p kafkars-python
//
// One `ToPy` (struct -> dict) and one `FromPy` (dict -> struct) impl per message struct,
// plus the RequestKind / ResponseKind dispatch. Leaf types live in `types.rs`,
// record fields in `records.rs`.

use kafka_protocol as kp;
use kafka_protocol::messages::{{ApiKey, RequestKind, ResponseKind}};
use kafka_protocol::protocol::{{Encodable, Message, VersionRange}};
use kafka_protocol::protocol::buf::ByteBufMut;
use pyo3::exceptions::PyNotImplementedError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::records;
use super::{{FromPy, ToPy, for_each_field}};
"""


def main() -> None:
    src, version = kafka_protocol_src()
    messages_rs = (src / "messages.rs").read_text()
    newtypes = {name for name, _inner in NEWTYPE_RE.findall(messages_rs)}
    structs = parse_structs(src, newtypes)
    requests = parse_enum(messages_rs, "RequestKind")
    responses = parse_enum(messages_rs, "ResponseKind")
    api_keys = parse_api_keys(messages_rs)
    known = {s.name for s in structs}
    for _, ty in requests + responses:
        if ty not in known:
            sys.exit(f"gen_protocol_bridge: enum payload {ty} has no parsed struct")
    out = [HEADER.format(version=version)]
    out.append(emit_dispatch(requests, responses, api_keys))
    out.extend(emit_struct(s) for s in structs)
    OUTPUT.write_text("".join(out))
    subprocess.run(["rustfmt", "--edition", "2024", str(OUTPUT)], check=False)
    print(
        f"wrote {OUTPUT.relative_to(CRATE_DIR.parent.parent)}: {len(structs)} structs, "
        f"{len(requests)} requests, {len(responses)} responses, {len(api_keys)} api keys"
    )


if __name__ == "__main__":
    main()
