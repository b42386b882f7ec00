"""The test's own network: one network namespace per host (ZooKeeper, three brokers, the
clients), each with a veth pair to a bridge in a hub namespace of its own, on a private
/24. Nothing is added to the root namespace, so the addresses cannot clash with anything
(two runs at once each have their own hub).

Faults are applied inside the hosts' namespaces: nftables rules in a table `inet jepsen`
(drops for partitions, `numgen random` drops for loss) and, for delay, iptables sending
outgoing packets to an NFQUEUE that `kafkars.testing.jepsen.delay` releases late (this kernel has no
`sch_netem`, so `tc netem` is not available: see README).

Namespaces are named `kj<pid>-<host>` after the process that made them; `cleanup(pid)`
removes a run's namespaces and kills what still runs in them, and `cleanup_stale()` does it
for runs whose process is gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

SUBNET = "10.213.0"
HOSTS = {"zk": 10, "b1": 11, "b2": 12, "b3": 13, "cl": 20}
CLONE_NEWNET = 0x40000000
NETNS_DIR = Path("/run/netns")
_NAME = re.compile(r"^kj(\d+)-(\w+)$")


def run(*args: str, check: bool = True, input: str | None = None) -> str:
    done = subprocess.run(args, capture_output=True, text=True, input=input, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def missing_tools() -> str | None:
    """Why this machine cannot run the suite, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, nftables)"
    for tool in ("ip", "nft", "iptables"):
        if not any((Path(d) / tool).exists() for d in ("/usr/sbin", "/sbin", "/usr/bin")):
            return f"needs `{tool}` (make system-deps installs iproute2, nftables, iptables)"
    probe = f"kjprobe{os.getpid()}"
    try:
        run("ip", "netns", "add", probe)
    except (RuntimeError, OSError) as e:
        return f"cannot create a network namespace: {e}"
    finally:
        run("ip", "netns", "del", probe, check=False)
    return None


class Network:
    """The hosts' namespaces, addresses and the faults on them."""

    def __init__(self, owner: int | None = None) -> None:
        self.owner = owner or os.getpid()
        self.prefix = f"kj{self.owner}"
        self.hub = f"{self.prefix}-hub"

    def ns(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    @staticmethod
    def address(host: str) -> str:
        return f"{SUBNET}.{HOSTS[host]}"

    def exec_prefix(self, host: str) -> list[str]:
        return ["ip", "netns", "exec", self.ns(host)]

    def create(self) -> Network:
        try:
            run("ip", "netns", "add", self.hub)
            run("ip", "-n", self.hub, "link", "add", "br0", "type", "bridge")
            run("ip", "-n", self.hub, "link", "set", "dev", "br0", "up")
            for host in HOSTS:
                ns = self.ns(host)
                run("ip", "netns", "add", ns)
                port = f"v{host}"
                # Both ends are made in their namespaces: no name ever exists in ours.
                pair = f"ip link add eth0 netns {ns} type veth peer name {port} netns {self.hub}"
                run(*pair.split())
                run("ip", "-n", self.hub, "link", "set", "dev", port, "master", "br0")
                run("ip", "-n", self.hub, "link", "set", "dev", port, "up")
                run("ip", "-n", ns, "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
                run("ip", "-n", ns, "link", "set", "dev", "eth0", "up")
                run("ip", "-n", ns, "link", "set", "dev", "lo", "up")
        except BaseException:
            self.destroy()
            raise
        return self

    def enter(self, host: str) -> None:
        """Moves this thread (and the threads and processes it starts later) into `host`'s
        namespace. Python 3.11 has no os.setns."""
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(NETNS_DIR / self.ns(host), os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns into {self.ns(host)}")
        finally:
            os.close(fd)

    # --- faults -------------------------------------------------------------------------

    def partition(self, groups: Sequence[Iterable[str]]) -> None:
        """Cuts every host of one group from every host of another (both directions);
        hosts in no group (the clients) still reach everyone. Each host drops what comes in
        from the other side, so senders see silence (an OUTPUT drop would fail their
        send at once with EPERM, which no real network does)."""
        sets = [set(g) for g in groups]
        cut: dict[str, set[str]] = {}
        for i, a in enumerate(sets):
            for b in sets[i + 1 :]:
                for x in a:
                    cut.setdefault(x, set()).update(b)
                for y in b:
                    cut.setdefault(y, set()).update(a)
        for host, peers in cut.items():
            addrs = ", ".join(self.address(p) for p in sorted(peers))
            self._rules(host, [f"ip saddr {{ {addrs} }} drop"])

    def lose(self, sender: str, percent: int) -> None:
        """Loses `percent` of the packets `sender` sends to anyone (dropped as they
        arrive); what it receives all arrives: loss in one direction."""
        for host in HOSTS:
            if host != sender:
                rule = f"ip saddr {self.address(sender)} numgen random mod 100 < {percent} drop"
                self._rules(host, [rule])

    def delay(self, hosts: Iterable[str], delay_ms: int, jitter_ms: int) -> None:
        """Holds every packet `hosts` send for delay ± jitter ms (so they also reorder):
        iptables queues them to `kafkars.testing.jepsen.delay` in the host's namespace."""
        for host in hosts:
            child = subprocess.Popen(
                [
                    *self.exec_prefix(host),
                    sys.executable,
                    "-m",
                    "kafkars.testing.jepsen.delay",
                    "--delay-ms",
                    str(delay_ms),
                    "--jitter-ms",
                    str(jitter_ms),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            # It binds the queue before it prints; --queue-bypass lets packets through
            # if it dies.
            assert child.stderr is not None
            line = child.stderr.readline().decode()
            if "bound" not in line:
                child.kill()
                raise RuntimeError(f"jepsen.delay did not start: {line}")
            queue = "iptables -A OUTPUT -o eth0 -j NFQUEUE --queue-num 0 --queue-bypass"
            run(*self.exec_prefix(host), *queue.split())

    def _rules(self, host: str, inbound: list[str]) -> None:
        script = [
            "table inet jepsen {",
            "  chain input { type filter hook input priority 0; policy accept;",
            *[f"    {r}" for r in inbound],
            "  }",
            "}",
        ]
        run(*self.exec_prefix(host), "nft", "-f", "-", input="\n".join(script) + "\n")

    def heal(self) -> None:
        """Removes every fault: the nftables table, the queue rule and the delayers."""
        for host in HOSTS:
            ns = self.ns(host)
            if not (NETNS_DIR / ns).exists():
                continue
            run(*self.exec_prefix(host), "nft", "delete", "table", "inet", "jepsen", check=False)
            run(*self.exec_prefix(host), "iptables", "-F", "OUTPUT", check=False)
            if host != "cl":
                self._kill_in(ns, delayers_only=True)

    # --- teardown -----------------------------------------------------------------------

    def _kill_in(self, ns: str, delayers_only: bool = False) -> None:
        pids = run("ip", "netns", "pids", ns, check=False).split()
        for pid in (int(p) for p in pids):
            if pid == os.getpid():
                continue
            if delayers_only and b"kafkars.testing.jepsen.delay" not in _cmdline(pid):
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def destroy(self) -> None:
        """Kills whatever still runs in the namespaces (but this process) and deletes
        them; idempotent."""
        for host in [*HOSTS, "hub"]:
            ns = self.ns(host)
            if (NETNS_DIR / ns).exists():
                self._kill_in(ns)
                run("ip", "netns", "del", ns, check=False)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def cleanup(owner: int) -> None:
    Network(owner).destroy()


def cleanup_stale() -> list[int]:
    """Removes the namespaces of runs whose process has gone (killed before its own
    teardown); returns their pids."""
    owners = set()
    if NETNS_DIR.exists():
        for entry in NETNS_DIR.iterdir():
            m = _NAME.match(entry.name)
            if m and not Path(f"/proc/{m.group(1)}").exists():
                owners.add(int(m.group(1)))
    for owner in owners:
        cleanup(owner)
    return sorted(owners)
