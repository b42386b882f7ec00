"""MockTime and its purgatory keep the DelayedOperationPurgatory contract: an operation
completes exactly once, early through try_complete, or expired when the clock passes
its deadline (in deadline order), or at shutdown."""

from __future__ import annotations

from kafkars.coordinator.clock import MockTime


class Op:
    def __init__(self, name: str, delay_ms: int, log: list[str], ready: bool = False) -> None:
        self.name, self.delay_ms, self.log, self.ready = name, delay_ms, log, ready

    def try_complete(self) -> bool:
        return self.ready

    def on_expiration(self) -> None:
        self.log.append(f"{self.name} expired")

    def on_complete(self) -> None:
        self.log.append(f"{self.name} completed")


def test_clock_moves_only_when_told() -> None:
    clock = MockTime(now_ms=5000, monotonic_s=10)
    clock.sleep(250)
    assert (clock.milliseconds(), clock.monotonic()) == (5250, 10.25)


def test_deadlines_fire_in_order_and_once() -> None:
    clock = MockTime()
    p = clock.purgatory("test")
    log: list[str] = []
    late, early = Op("late", 200, log), Op("early", 100, log)
    assert not p.try_complete_else_watch(late, ["k"])
    assert not p.try_complete_else_watch(early, ["k"])
    clock.sleep(99)
    assert log == [] and p.delayed == 2
    clock.sleep(150)
    assert log == ["early expired", "early completed", "late expired", "late completed"]
    assert p.delayed == 0


def test_check_and_complete_and_shutdown() -> None:
    clock = MockTime()
    p = clock.purgatory("test")
    log: list[str] = []
    now = Op("now", 100, log, ready=True)
    assert p.try_complete_else_watch(now, ["k"]) and log == ["now completed"]
    waiting, other = Op("waiting", 100, log), Op("other", 100, log)
    p.try_complete_else_watch(waiting, ["k"])
    p.try_complete_else_watch(other, ["j"])
    waiting.ready = True
    assert p.check_and_complete("k") == 1
    clock.sleep(100)  # its deadline passes: nothing more for it
    assert log == ["now completed", "waiting completed", "other expired", "other completed"]
    zero = Op("zero", 0, log)
    p.try_complete_else_watch(zero, ["k"])  # already due
    assert log[-2:] == ["zero expired", "zero completed"]
    pending = Op("pending", 1000, log)
    p.try_complete_else_watch(pending, ["k"])
    p.shutdown()
    assert log[-1] == "pending completed"
