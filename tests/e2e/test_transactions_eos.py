"""Exactly-once consume-transform-produce across a kill -9 of the application: the
restarted instance fences the dead one's transaction, resumes from the offsets committed
in the last committed transaction, and the output holds every input record once."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from confluent_kafka import Producer
from test_transactions import create_topic, read_values

from kafkars.broker import Broker

# One application instance: reads `source`, writes "out-<value>" to `sink`, and commits
# the input offsets in the same transaction, a few records per transaction.
APP = textwrap.dedent(
    """
    import sys, time
    from confluent_kafka import Consumer, Producer, TopicPartition

    bootstrap, source, sink, group, total = sys.argv[1:6]
    c = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "isolation.level": "read_committed", "auto.offset.reset": "earliest",
    })
    c.assign([TopicPartition(source, 0)])
    committed = c.committed([TopicPartition(source, 0)], 30)[0].offset
    c.seek(TopicPartition(source, 0, max(committed, 0)))
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": group})
    p.init_transactions(30)
    done = max(committed, 0)
    while done < int(total):
        msgs = c.consume(3, 1.0)
        msgs = [m for m in msgs if not m.error()]
        if not msgs:
            continue
        p.begin_transaction()
        for m in msgs:
            p.produce(sink, value=b"out-" + m.value(), partition=0)
        p.flush(10)
        print("produced", msgs[-1].offset(), flush=True)
        time.sleep(0.2)  # a window for the kill between produce and commit
        offsets = [TopicPartition(source, 0, msgs[-1].offset() + 1)]
        p.send_offsets_to_transaction(offsets, c.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        done = msgs[-1].offset() + 1
    print("finished", flush=True)
    """
)


def test_exactly_once_across_an_application_kill(broker: Broker, topic: str) -> None:
    source, sink, group = topic, f"{topic}-out", f"eos-{topic}"
    create_topic(broker, source)
    create_topic(broker, sink)
    total = 30
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(total):
        p.produce(source, value=str(i).encode(), partition=0)
    p.flush(10)
    args = [sys.executable, "-c", APP, broker.bootstrap_servers, source, sink, group, str(total)]

    first = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    assert first.stdout is not None
    produced = 0
    while produced < 3:  # a few transactions in, with one open
        line = first.stdout.readline()
        assert line, "the application exited early"
        produced += line.startswith("produced")
    first.kill()  # SIGKILL: its open transaction is left for the coordinator
    first.wait()

    second = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "finished" in second.stdout
    out = read_values(broker, sink, "read_committed", total)
    assert out == [f"out-{i}".encode() for i in range(total)]
    # The dead instance's uncommitted output is in the log but never read as committed.
    assert len(read_values(broker, sink, "read_uncommitted", total, timeout=5)) >= total
