# The Java ecosystem tests (issue 24): kafka-clients, Kafka Streams and Kafka's tools against
# kafkars and Apache Kafka (tests/ecosystem). tests/java is one small Maven project: its
# classes and dependencies land in tests/java/target (git-ignored), rebuilt when a source
# or the pom is newer than the jar.
#   make java-tests        build tests/java
#   make ecosystem         run tests/ecosystem (both brokers; CI runs the kafkars side)
JAVA_TESTS_JAR := tests/java/target/ecosystem-1.jar
JAVA_TESTS_SRC := tests/java/pom.xml $(shell find tests/java/src -name '*.java' 2>/dev/null)

.PHONY: java-tests ecosystem

$(JAVA_TESTS_JAR): $(JAVA_TESTS_SRC)
	@command -v mvn >/dev/null || { apt-get update -qq && apt-get install -y -qq maven; }
	mvn -q -B -Dstyle.color=never -f tests/java/pom.xml package

java-tests: $(JAVA_TESTS_JAR) ## build the Java ecosystem tests (tests/java, Maven) into tests/java/target

ecosystem: dev reference-deps java-tests ## the Java clients, Streams and Kafka's tools against kafkars and Apache Kafka
	KAFKARS_LONG=1 $(PY) -m pytest -q tests/ecosystem

# CI builds the Java scenarios before the Python tests run them.
test-python: java-tests
