#!/usr/bin/env bash
# Generate the coordinator record messages (`__consumer_offsets`, `__transaction_state`)
# into vendor/kafka-protocol with kafka-protocol's own generator (`protocol_codegen`),
# from Apache Kafka's JSON schemas. Nothing here writes Rust by hand: the generator
# writes the modules, this script copies them and the generator's own `pub mod` lines.
#
#   vendor/gen_coordinator_records.sh KAFKA_PROTOCOL_GIT KAFKA_GIT
#
# Both arguments are git repositories (bare is fine) holding the commits pinned below.
set -euo pipefail

KP_COMMIT=66f7de6f3bae527addd7bd351124185ba5d31d8c     # tychedelia/kafka-protocol-rs
KAFKA_COMMIT=1eb7644349cb07139d6a3c1ad1986979647cac99  # apache/kafka trunk, Oct 2024 (3.9 formats)
RECORDS=(
  group-coordinator/src/main/resources/common/message/OffsetCommitKey.json
  group-coordinator/src/main/resources/common/message/OffsetCommitValue.json
  group-coordinator/src/main/resources/common/message/GroupMetadataKey.json
  group-coordinator/src/main/resources/common/message/GroupMetadataValue.json
  group-coordinator/src/main/resources/common/message/ConsumerGroupMetadataKey.json
  group-coordinator/src/main/resources/common/message/ConsumerGroupMetadataValue.json
  group-coordinator/src/main/resources/common/message/ConsumerGroupPartitionMetadataKey.json
  group-coordinator/src/main/resources/common/message/ConsumerGroupPartitionMetadataValue.json
  group-coordinator/src/main/resources/common/message/ConsumerGroupMemberMetadataKey.json
  group-coordinator/src/main/resources/common/message/ConsumerGroupMemberMetadataValue.json
  group-coordinator/src/main/resources/common/message/ConsumerGroupTargetAssignmentMetadataKey.json
  group-coordinator/src/main/resources/common/message/ConsumerGroupTargetAssignmentMetadataValue.json
  group-coordinator/src/main/resources/common/message/ConsumerGroupTargetAssignmentMemberKey.json
  group-coordinator/src/main/resources/common/message/ConsumerGroupTargetAssignmentMemberValue.json
  group-coordinator/src/main/resources/common/message/ConsumerGroupCurrentMemberAssignmentKey.json
  group-coordinator/src/main/resources/common/message/ConsumerGroupCurrentMemberAssignmentValue.json
  transaction-coordinator/src/main/resources/common/message/TransactionLogKey.json
  transaction-coordinator/src/main/resources/common/message/TransactionLogValue.json
)

# The generator's messages.rs summary needs at least one request/response pair (it
# takes the highest API key); this one is fed along and its output thrown away.
PAIR=(
  clients/src/main/resources/common/message/ApiVersionsRequest.json
  clients/src/main/resources/common/message/ApiVersionsResponse.json
)

KP_GIT=$1
KAFKA_GIT=$2
VENDOR=$(cd "$(dirname "$0")" && pwd)/kafka-protocol
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# The generator, run on a list of files instead of its hard-coded Kafka checkout (its
# main.rs clones apache/kafka with git2; the generating code is untouched).
git -C "$KP_GIT" archive "$KP_COMMIT" protocol_codegen | tar -x -C "$WORK"
sed -i '/^git2 = /d' "$WORK/protocol_codegen/Cargo.toml"
cat > "$WORK/protocol_codegen/src/main.rs" <<'RS'
pub mod generate_messages;

fn main() -> Result<(), failure::Error> {
    let mut args = std::env::args().skip(1);
    let out = args.next().expect("output dir");
    generate_messages::run(&out, args.map(Into::into).collect())
}
RS

# Kafka's schemas, rewritten only where the generator reads them differently from Kafka's
# own generator (FieldSpec/MessageSpec), none changing the format:
# - "coordinator-key"/"coordinator-value" (Kafka 4.x) -> "data" (the pinned commit
#   already says "data");
# - `"default": null` is dropped: Kafka reads it exactly as no default (for a struct, the
#   empty struct), the generator refuses it (ConsumerGroupMemberMetadataValue);
# - a field with "taggedVersions" and no "versions" gets its tagged versions as
#   "versions", Kafka's default, which the generator requires (TransactionLogValue);
# - the generator cannot encode a nullable struct as a tagged field (its output does not
#   compile), so ConsumerGroupMemberMetadataValue's tagged ClassicMemberMetadata (tag 0)
#   is left out of that message (decoding keeps it in `unknown_tagged_fields`, encoding
#   writes it back from there) and generated as a message of its own, the body of the
#   tag after its null marker.
mkdir -p "$WORK/json" "$WORK/out/messages"
for f in "${RECORDS[@]}" "${PAIR[@]}"; do
  git -C "$KAFKA_GIT" show "$KAFKA_COMMIT:$f" >"$WORK/json/$(basename "$f")"
done
python3 - "$WORK"/json/*.json <<'PY'
import json, re, sys
def fix(field):
    if "default" in field and field["default"] is None:
        del field["default"]
    if "taggedVersions" in field and "versions" not in field:
        field["versions"] = field["taggedVersions"]
    for sub in field.get("fields", []):
        fix(sub)
for path in sys.argv[1:]:
    text = re.sub(r"^\s*//.*$", "", open(path).read(), flags=re.M)
    spec = json.loads(text)
    spec["type"] = re.sub(r"^coordinator-(key|value)$", "data", spec["type"])
    for field in spec["fields"] + spec.get("commonStructs", []):
        fix(field)
    if spec["name"] == "ConsumerGroupMemberMetadataValue":
        (classic,) = [f for f in spec["fields"] if f["name"] == "ClassicMemberMetadata"]
        assert classic["tag"] == 0 and spec["validVersions"] == "0", "schema changed"
        spec["fields"].remove(classic)
        own = {"type": "data", "name": "ClassicMemberMetadata", "validVersions": "0",
               "flexibleVersions": "0+", "fields": classic["fields"]}
        json.dump(own, open(path.replace(spec["name"], "ClassicMemberMetadata"), "w"), indent=2)
    json.dump(spec, open(path, "w"), indent=2)
PY
(cd "$WORK/protocol_codegen" &&
  CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$WORK/target} \
    cargo run -q --release -- "$WORK/out/messages" "$WORK"/json/*.json)
rustfmt --edition 2021 "$WORK"/out/messages/*.rs "$WORK/out/messages.rs"

rm "$WORK"/out/messages/api_versions_*.rs
cp "$WORK"/out/messages/*.rs "$VENDOR/src/messages/"
# The generator's `pub mod x; pub use x::X;` lines for these messages, placed after the
# existing data messages (before `produce_request`, the first request).
grep -E '^pub (mod|use) ' "$WORK/out/messages.rs" | grep -v api_versions_ >"$WORK/lines"
python3 - "$VENDOR/src/messages.rs" "$WORK/lines" <<'PY'
import sys
path, lines = sys.argv[1], open(sys.argv[2]).read().splitlines()
text = open(path).read()
anchor = "pub mod produce_request;\n"
pairs = [lines[i : i + 2] for i in range(0, len(lines), 2)]
new = "".join(f"{m}\n{u}\n\n" for m, u in pairs if m + "\n" not in text)
assert anchor in text
open(path, "w").write(text.replace(anchor, new + anchor, 1))
PY
echo "generated: $(ls "$WORK"/out/messages | tr '\n' ' ')"
