"""The Java ecosystem against both brokers (issue 24): kafka-clients, Kafka's command-line
tools and Kafka Streams, each scenario run against kafkars and Apache Kafka 4.1.1 (the
reference), so a difference is the broker's and not the test's.

One broker of each kind per session; every test uses its own topics and groups. The Java
scenarios (tests/java) are built once with Maven (`make java-tests`) and run one JVM per
scenario group and broker, their results shared by the tests that assert on them.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kafkars.broker import Broker
from kafkars.testing.reference_kafka import ReferenceKafka

from .support import Target, run_java

JAVA_PROJECT = Path(__file__).resolve().parents[1] / "java"
TARGET = JAVA_PROJECT / "target"
BROKERS = ("kafkars", "kafka")

# Both brokers run the ACL authorizer (the ACL tool needs one) with the anonymous
# PLAINTEXT principal a super user, so every other scenario is unaffected by it.
COMMON_CONFIG: dict[str, Any] = {
    "auto.create.topics.enable": True,
    "num.partitions": 1,
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 1000,
    "super.users": "User:ANONYMOUS",
}
KAFKARS_CONFIG = {
    **COMMON_CONFIG,
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
}
KAFKA_CONFIG = {
    **COMMON_CONFIG,
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
}


def _sources_newer_than(stamp: Path) -> bool:
    if not stamp.exists():
        return True
    built = stamp.stat().st_mtime
    sources = [JAVA_PROJECT / "pom.xml", *JAVA_PROJECT.joinpath("src").rglob("*.java")]
    return any(s.stat().st_mtime > built for s in sources)


@pytest.fixture(scope="session")
def java_classpath() -> str:
    """Builds tests/java once (Maven; skipped when target/ is newer than the sources)."""
    jar = TARGET / "ecosystem-1.jar"
    if _sources_newer_than(jar):
        mvn = shutil.which("mvn")
        if mvn is None:
            pytest.fail("the Java ecosystem tests need Maven (make system-deps)")
        result = subprocess.run(
            [mvn, "-q", "-B", "-f", str(JAVA_PROJECT / "pom.xml"), "package"],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            pytest.fail(f"mvn package failed:\n{result.stdout[-4000:]}{result.stderr[-4000:]}")
    return f"{jar}:{TARGET / 'lib'}/*"


@pytest.fixture(scope="session")
def kafkars_broker() -> Iterator[Broker]:
    with Broker(process=True, config=KAFKARS_CONFIG) as b:
        yield b


@pytest.fixture(scope="session")
def reference_kafka() -> Iterator[ReferenceKafka]:
    with ReferenceKafka(config=KAFKA_CONFIG) as k:
        yield k


_TARGETS: dict[str, Target] = {}


@pytest.fixture
def target(request: pytest.FixtureRequest) -> Target:
    name = request.param
    if name not in _TARGETS:
        if name == "kafkars":
            b = request.getfixturevalue("kafkars_broker")
            _TARGETS[name] = Target(name, b.bootstrap_servers, b.log_dir)
        else:
            k = request.getfixturevalue("reference_kafka")
            _TARGETS[name] = Target(name, k.bootstrap_servers, k.log_dir)
    return _TARGETS[name]


@pytest.fixture
def unique() -> Callable[[str], str]:
    """Unique topic / group names: unique("topic") -> "topic-1a2b3c4d"."""
    return lambda stem: f"{stem}-{uuid.uuid4().hex[:8]}"


# The Java scenario groups, run in this order in one background thread per broker as soon as
# a test asks for the first of them: the two brokers' runs overlap each other and the tests.
SCENARIOS = ("AdminScenario", "AdminMore", "Clients")


@pytest.fixture
def scenario(target: Target, java_classpath: str) -> Callable[[str], dict[str, Any]]:
    """scenario("Clients") -> that class's steps against `target`, run once per session."""
    if not target.scenarios:
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"java-{target.name}")
        for main_class in SCENARIOS:
            prefix = f"{main_class.lower()}-{uuid.uuid4().hex[:8]}"
            target.scenarios[main_class] = executor.submit(
                run_java, java_classpath, main_class, target.bootstrap_servers, prefix
            )
        executor.shutdown(wait=False)

    def get(main_class: str) -> dict[str, Any]:
        return target.scenarios[main_class].result()

    return get
