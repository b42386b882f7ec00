#!/usr/bin/env bash
# librdkafka's own test suite against a kafkars broker (see shared CONFORMANCE.md).
#
#   scripts/conformance.sh [TESTS...]      default: the suite's smoke list
#   scripts/conformance.sh all             every numbered test in the suite
#   CLUSTER=3 scripts/conformance.sh 0103  against ZooKeeper and three brokers
#
# Builds librdkafka 2.0.2 from Debian's source package once into .cache/librdkafka
# (about 7 minutes on 2 cores), starts a broker with the settings the suite assumes,
# runs each test in its own process (-E: no sockem fault injection, -L: no local mock
# cluster) and writes the outcome to conformance/results.txt. The broker runs the ACL
# authorizer with allow.everyone.if.no.acl.found=true (the ACL tests add deny rules), and
# KAFKA_PATH points at shims that run kafkars-topics/-acls/-configs for tests that call
# Kafka's CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=$ROOT/.cache/librdkafka
PY=${PY:-$ROOT/.venv/bin/python}
SMOKE="0000 0001 0004 0012 0017 0022 0030 0039 0049 0087 0103"
TESTS=${*:-$SMOKE}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}

build() {
  [ -x "$CACHE/src/tests/test-runner" ] && return
  apt-get update -qq
  apt-get install -y -qq dpkg-dev zlib1g-dev libssl-dev libzstd-dev liblz4-dev libsasl2-dev >/dev/null
  mkdir -p "$CACHE" && cd "$CACHE"
  sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources > src.sources
  apt-get update -qq -o Dir::Etc::sourcelist="$CACHE/src.sources" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0
  apt-get source --download-only -o Dir::Etc::sourcelist="$CACHE/src.sources" -o Dir::Etc::sourceparts=- librdkafka
  rm -rf src && mkdir src && tar xf librdkafka_*.orig.tar.gz -C src --strip-components=1
  cd src && ./configure --disable-curl >/dev/null && make -j2 libs >/dev/null && make -j2 -C tests build >/dev/null
  cd "$ROOT"
}

build
if [ "$TESTS" = all ]; then
  TESTS=$(cd "$CACHE/src/tests" && ls 0[0-9][0-9][0-9]-*.c 0[0-9][0-9][0-9]-*.cpp | cut -c1-4 | sort -u | tr '\n' ' ')
fi
DATA=$(mktemp -d)
BOOTSTRAP=127.0.0.1:9092
if [ -n "${CLUSTER:-}" ]; then
  # CLUSTER=3: ZooKeeper and three brokers (kafkars-cluster) instead of one broker.
  "$PY" -m kafkars.testing.cluster -n "$CLUSTER" \
    --override auto.create.topics.enable=true --override num.partitions=4 \
    --override group.min.session.timeout.ms=1000 --override group.initial.rebalance.delay.ms=0 \
    --override transaction.max.timeout.ms=900000 \
    --override authorizer.class.name=kafka.security.authorizer.AclAuthorizer \
    --override allow.everyone.if.no.acl.found=true > "$DATA/cluster.log" 2>&1 &
  BROKER=$!
  # Stopping the cluster removes the brokers' data: KEEP_LOGS=1 copies their logs first.
  keep_broker_logs() {
    sed -n 's/^broker \([0-9]*\): .*, data in \(.*\)$/\1 \2/p' "$DATA/cluster.log" |
      while read -r id dir; do cp "$dir/.kafkars-server.log" "$DATA/broker-$id.log" 2>/dev/null || true; done
  }
  trap '[ -z "${KEEP_LOGS:-}" ] || keep_broker_logs; kill -INT $BROKER 2>/dev/null; wait $BROKER 2>/dev/null; [ -n "${KEEP_LOGS:-}" ] || rm -rf "$DATA"' EXIT
  for _ in $(seq 600); do grep -q '^bootstrap.servers' "$DATA/cluster.log" 2>/dev/null && break; sleep 0.1; done
  BOOTSTRAP=$(sed -n 's/^bootstrap.servers: *//p' "$DATA/cluster.log")
else
"$PY" -m kafkars.server --ready-file "$DATA/ready.json" \
  --override listeners=PLAINTEXT://127.0.0.1:9092 --override log.dirs="$DATA/logs" \
  --override auto.create.topics.enable=true --override num.partitions=4 \
  --override group.min.session.timeout.ms=1000 --override group.initial.rebalance.delay.ms=0 \
  --override offsets.topic.replication.factor=1 --override transaction.state.log.replication.factor=1 \
  --override transaction.state.log.min.isr=1 --override transaction.max.timeout.ms=900000 \
  --override authorizer.class.name=kafka.security.authorizer.AclAuthorizer \
  --override allow.everyone.if.no.acl.found=true \
  > "$DATA/broker.log" 2>&1 &
BROKER=$!
trap 'kill $BROKER 2>/dev/null; wait $BROKER 2>/dev/null; [ -n "${KEEP_LOGS:-}" ] || rm -rf "$DATA"' EXIT
for _ in $(seq 300); do [ -f "$DATA/ready.json" ] && break; sleep 0.1; done
fi

cd "$CACHE/src/tests"
# The run's own client config, so runs against different brokers can share the build.
printf 'bootstrap.servers=%s\nbroker.address.family=v4\n' "$BOOTSTRAP" > "$DATA/test.conf"
export RDKAFKA_TEST_CONF=$DATA/test.conf
export LD_LIBRARY_PATH=../src:../src-cpp TEST_KAFKA_VERSION=3.9.0
# Tests that run Kafka's CLI (kafka-topics.sh, kafka-acls.sh) get ours through shims.
export KAFKA_PATH=$ROOT/conformance/kafka-bin BROKERS=$BOOTSTRAP
mkdir -p "$ROOT/conformance"
results=${RESULTS:-$ROOT/conformance/results.txt}
: > "$results"
pass=0 fail=0
for t in $TESTS; do
  if TESTS=$t timeout "$TEST_TIMEOUT" ./test-runner -p1 -E -L > "$DATA/test-$t.log" 2>&1; then
    echo "PASS $t" | tee -a "$results"; pass=$((pass + 1))
  else
    echo "FAIL $t" | tee -a "$results"; fail=$((fail + 1))
    tail -5 "$DATA/test-$t.log" | sed 's/^/    /'
  fi
done
echo "$pass passed, $fail failed"
[ -z "${KEEP_LOGS:-}" ] || echo "logs in $DATA"
