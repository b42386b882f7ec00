// Package franzgo pins franz-go, whose own integration tests (pkg/kgo: TestGroupETL,
// TestTxnEtl, ...) `make franz-go` builds from the module cache and runs against a kafkars
// broker and Apache Kafka (tests/go/run.py).
package franzgo

import _ "github.com/twmb/franz-go/pkg/kgo"
