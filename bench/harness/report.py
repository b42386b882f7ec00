"""The results: a table on stdout, JSON in bench/results/ (a timestamped file and
latest.json), PNG plots (throughput beside the limits, latency CDFs per load level)."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

Row = dict[str, Any]


def _num(value: Any, fmt: str = ",.1f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, fmt)


def _pct(value: Any) -> str:
    return "-" if value is None else f"{value:.0%}" if value >= 0.01 else f"{value:.1%}"


def _rate(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    return f"{value / 1e3:.0f}k" if value >= 1e3 else f"{value:.0f}"


def _throughput_cell(row: Row | None, ratio_keys: tuple[str, ...]) -> str:
    width = 16 + 5 * len(ratio_keys)
    if row is None:
        return f"{'failed':>{width}}"
    ratios = "".join(f" {_pct(row.get(k)):>4}" for k in ratio_keys)
    return f"{row['MBps']:7.1f} {_rate(row['records_per_s']):>6}/s{ratios}"


def table(results: dict[str, Any]) -> str:
    out: list[str] = []
    meta = results["meta"]
    names = list(results["targets"])
    out.append(f"kafkars broker benchmark, {meta['started']} ({meta['mode']} run)")
    out.append(f"machine: {meta['machine']}")
    if "loadavg_start" in meta:
        out.append(
            f"load:    1-minute load average {meta['loadavg_start']:.2f} at the start, "
            f"{meta.get('loadavg_end', float('nan')):.2f} at the end"
        )
    out.append(f"client:  {meta['client']}")
    if meta.get("repeat", 1) > 1:
        out.append(
            f"runs:    each produce, consume and latency figure is the median of "
            f"{meta['repeat']} runs (all of them in the JSON)"
        )
    for name in names:
        t = results["targets"][name]
        where = f"pid {t['pid']}" if t.get("pid") else "process not visible here"
        out.append(f"target:  {name} = {t.get('bootstrap', '?')} ({t.get('kind', '')}, {where})")
    lim = results.get("limits", {})
    if lim:
        out += ["", f"{'loopback limits (one connection, Python)':<52}{'MB/s':>8}"]
        rows = [
            ("socket_write_MBps", "socket sendall → recv_into, 1 MiB chunks"),
            ("file_write_MBps", "write to a new file (page cache), 1 MiB chunks"),
            ("socket_to_file_MBps", "socket → file pump (recv_into, write), 1 MiB"),
            ("sendfile_MBps", "os.sendfile, file in page cache → socket"),
            ("sendfile_cold_MBps", "os.sendfile, file on disk (caches dropped) → socket"),
        ]
        for key, label in rows:
            if key in lim:
                out.append(f"  {label:<50}{_num(lim[key], ',.0f'):>8}")
        if lim.get("drop_caches", "allowed") != "allowed":
            out.append(f"  ({lim['drop_caches']})")
    width = 24

    def section(
        key: str, title: str, ratio_keys: tuple[str, ...], ceiling_key: Callable[[Row], str]
    ) -> None:
        cell = 16 + 5 * len(ratio_keys)
        head = f"{'':<{width}}{'ceiling':>9} |" + "|".join(
            f"{n[: cell - 1]:>{cell}} " for n in names
        )
        cases: list[str] = []
        by: dict[tuple[str, str], Row] = {}
        for name in names:
            for row in results["targets"][name].get(key, []):
                by[(name, row["case"])] = row
                if row["case"] not in cases:
                    cases.append(row["case"])
        if not cases:
            return
        out.extend(["", title, head])
        for case in cases:
            any_row = next(by[(n, case)] for n in names if (n, case) in by)
            ceil = results.get("ceiling", {}).get(ceiling_key(any_row))
            ceil_cell = _num(ceil["MBps"]) if ceil else "-"
            cells = "|".join(f"{_throughput_cell(by.get((n, case)), ratio_keys)} " for n in names)
            out.append(f"{case:<{width}}{ceil_cell:>9} |{cells}")

    section(
        "produce",
        "produce: MB/s of payload, records/s, % of the socket limit, of the file write "
        "limit and of the socket-to-file pump; ceiling: the client to a null sink (acks=0)",
        ("vs_socket", "vs_file_write", "vs_pump"),
        lambda row: f"{row['size']} {row['codec']}",
    )
    section(
        "consume",
        "consume from the page cache: % of the sendfile limit; "
        "ceiling: the client from a record source (batches from memory)",
        ("vs_sendfile",),
        lambda row: f"consume {row['size']}",
    )

    lag_rows = [(n, results["targets"][n].get("lag", {})) for n in names]
    if any(lag.get("consume") for _, lag in lag_rows):
        out += ["", "lag: consume 1 KiB records from offset 0 of a big topic"]
        for n, lag in lag_rows:
            c, f = lag.get("consume"), lag.get("fill")
            if not c or not f:
                out.append(f"  {n}: failed")
                continue
            where = "page cache dropped" if lag.get("page_cache_dropped") else "page cache"
            limit = "disk sendfile" if c.get("limit") == "sendfile_cold_MBps" else "sendfile"
            out.append(
                f"  {n:<12} {f['payload_bytes'] / 2**20:,.0f} MiB ({where}): "
                f"{c['MBps']:,.1f} MB/s, {_rate(c['records_per_s'])}/s, "
                f"{_pct(c.get('vs_sendfile'))} of the {limit} limit "
                f"(filled at {f['MBps']:,.1f} MB/s)"
            )

    lat_rows = [(n, row) for n in names for row in results["targets"][n].get("latency", [])]
    if lat_rows:
        out += [
            "",
            "end-to-end latency, ms: 100 B records, acks=1, 1 partition; load = share of the "
            "maximum produce rate (Apache Kafka's when measured); client: "
            f"{results['meta'].get('latency_client', 'the throughput client, linger.ms=1')} "
            "(unbatched: the throughput client, linger.ms=0)",
            f"{'load':<20}{'target':<14}{'offered/s':>11}{'achieved/s':>12}"
            f"{'p50':>8}{'p99':>8}{'p99.9':>8}{'max':>9}",
        ]
        for level in dict.fromkeys(row["level"] for _, row in lat_rows):
            for n, row in lat_rows:
                if row["level"] != level:
                    continue
                capped = " (capped)" if row.get("capped") else ""
                out.append(
                    f"{level:<20}{n[:13]:<14}{row['offered_per_s']:>11,.0f}"
                    f"{row['achieved_per_s']:>12,.0f}{_num(row['p50'], '.2f'):>8}"
                    f"{_num(row['p99'], '.2f'):>8}{_num(row['p99.9'], '.2f'):>8}"
                    f"{_num(row['max'], '.1f'):>9}{capped}"
                )

    cost_rows: list[tuple[str, list[str]]] = []

    def add(label: str, get: Any) -> None:
        cells = []
        for n in names:
            try:
                cells.append(get(results["targets"][n]))
            except (KeyError, TypeError):
                cells.append("-")
        if any(c != "-" for c in cells):
            cost_rows.append((label, cells))

    add("RSS idle, MiB", lambda t: _num(t["rss_idle_MiB"]))
    add("RSS peak during the run, MiB", lambda t: _num(t["rss_peak_MiB"]))
    add("CPU s per GB in (produce)", lambda t: _num(t["cpu_s_per_GB_in"], ".2f"))
    add("CPU s per GB out (consume)", lambda t: _num(t["cpu_s_per_GB_out"], ".2f"))
    p = "1,000 partitions"
    add(f"{p}: create, s", lambda t: _num(t["partitions"]["create_s"], ".2f"))
    add(
        f"{p}: produce 1 KiB, MB/s",
        lambda t: f"{t['partitions']['MBps']:.1f} ({_pct(t['partitions']['vs_socket'])})",
    )
    add(f"{p}: RSS after, MiB", lambda t: _num(t["partitions"]["rss_MiB"]))
    c = "1,000 connections"
    add(f"{c}: open + 2 requests, s", lambda t: _num(t["connections"]["open_s"], ".2f"))
    add(
        f"{c}: RSS before → open, MiB",
        lambda t: (
            f"{t['connections']['rss_before_MiB']:.0f} → {t['connections']['rss_open_MiB']:.0f}"
        ),
    )
    add(
        f"{c}: produce 1 KiB, MB/s",
        lambda t: (
            f"{t['connections']['produce']['MBps']:.1f} "
            f"({_pct(t['connections']['produce']['vs_socket'])})"
        ),
    )
    add(
        f"{c}: e2e p50/p99 at 10%, ms",
        lambda t: (
            f"{t['connections']['latency']['p50']:.2f}/{t['connections']['latency']['p99']:.2f}"
        ),
    )
    add(f"{c}: ApiVersions p99, ms", lambda t: _num(t["connections"]["ping_p99_ms"], ".2f"))
    if cost_rows:
        out += ["", f"{'broker cost':<40}" + "".join(f"{n[:15]:>16}" for n in names)]
        out += [f"{label:<40}" + "".join(f"{c:>16}" for c in cells) for label, cells in cost_rows]

    startup = results.get("startup", [])
    if startup:
        out += [
            "",
            "start-up of a kafkars broker process (this checkout), seconds; × = / find's time",
            f"{'partitions':>10}{'create':>8}{'stop':>7}{'find':>8}{'clean start':>17}"
            f"{'after SIGKILL':>19}{'fds':>7}{'RSS MiB':>9}",
        ]
        for r in startup:
            asked = r.get("requested_partitions", r["partitions"])
            label = f"{r['partitions']:,}" + ("*" if asked != r["partitions"] else "")
            out.append(
                f"{label:>10}{_num(r.get('create_s'), '.1f'):>8}{r['clean_stop_s']:>7.1f}"
                f"{r['find_s']:>8.3f}{r['clean_start_s']:>8.2f} ×{r['clean_start_vs_find']:<7,.0f}"
                f"{r['unclean_start_s']:>8.2f} ×{r['unclean_start_vs_find']:<9,.0f}"
                f"{_num(r.get('fds'), ',d'):>7}{_num(r.get('rss_MiB'), '.0f'):>9}"
            )
            if asked != r["partitions"]:
                out.append(f"{'':>10}* instead of {asked:,}: the open-file limit (see notes)")

    out += recovery_table(results)
    out += versus_table(results)
    out += cluster_table(results)
    out += failover_table(results)

    for note in results.get("notes", []):
        out.append(f"note: {note}")
    for err in results.get("errors", []):
        out.append(f"failed: {err['step']}: {err['error']}")
    return "\n".join(out)


def _versus_rows(ours: dict[str, Any], theirs: dict[str, Any]) -> list[tuple[str, float | None]]:
    rows: list[tuple[str, float | None]] = []

    def ratio(label: str, get: Callable[[dict[str, Any]], float]) -> None:
        try:
            a, b = get(ours), get(theirs)
        except (KeyError, TypeError, StopIteration):
            return
        rows.append((label, a / b if b else None))

    def case(key: str, name: str, field: str) -> Callable[[dict[str, Any]], float]:
        return lambda t: next(r for r in t[key] if r.get("case", r.get("level")) == name)[field]

    for key in ("produce", "consume"):
        for row in ours.get(key, []):
            ratio(f"{key} {row['case']}, MB/s", case(key, row["case"], "MBps"))
    ratio("lag consume, MB/s", lambda t: t["lag"]["consume"]["MBps"])
    for row in ours.get("latency", []):
        for q in ("p50", "p99", "p99.9", "max"):
            ratio(f"latency {row['level']}: {q}", case("latency", row["level"], q))
    ratio("RSS idle", lambda t: t["rss_idle_MiB"])
    ratio("RSS peak", lambda t: t["rss_peak_MiB"])
    ratio("CPU s per GB in", lambda t: t["cpu_s_per_GB_in"])
    ratio("CPU s per GB out", lambda t: t["cpu_s_per_GB_out"])
    ratio("start to ready, s", lambda t: t["start_s"])
    return rows


def versus_table(results: dict[str, Any]) -> list[str]:
    """The first target (kafkars) over each peer, figure by figure: above 1 is better for
    throughput; below 1 is better for latency, memory, CPU and start-up."""
    names = list(results["targets"])
    out: list[str] = []
    for peer in names[1:]:
        theirs = results["targets"][peer]
        rows = _versus_rows(results["targets"][names[0]], theirs)
        if rows:
            out += ["", f"{names[0]} ÷ {peer} ({theirs.get('kind', '')})"]
            out += [f"  {label:<44}{_num(r, '.2f') + '×' if r else '-':>10}" for label, r in rows]
    return out


CLUSTER_KINDS = (
    ("single", "1 broker, acks=1"),
    ("acks1", "3 brokers, acks=1"),
    ("acksall", "3 brokers, acks=all"),
)


def cluster_table(results: dict[str, Any]) -> list[str]:
    c = results.get("cluster")
    if not c or not c.get("rows"):
        return []
    out = [
        "",
        f"cluster: produce {c['size'] // 1024} KiB records, {results['meta']['client']}; "
        f"ZooKeeper + {c['brokers']} brokers on this machine, RF={c['replication_factor']}, "
        f"min.insync.replicas={c['min_insync_replicas']}; median of {c['repeats']} "
        "alternating runs; MB/s, records/s, broker CPU s per GB (all brokers)",
        f"{'':<14}"
        + "".join(f"{label:>27}" for _, label in CLUSTER_KINDS)
        + f"{'acks=all ratio':>16}",
    ]
    for row in c["rows"]:
        cells = []
        for kind, _ in CLUSTER_KINDS:
            r = row.get(kind)
            if r is None:
                cells.append("failed")
                continue
            cpu = _num(r["cpu_s_per_GB"], ".2f")
            cells.append(f"{r['MBps']:8.1f} {_rate(r['records_per_s']):>6}/s {cpu:>6} s")
        ratio = row.get("acksall_vs_single")
        out.append(
            f"{row['case']:<14}"
            + "".join(f"{cell:>27}" for cell in cells)
            + f"{_num(ratio, '.2f') + '×' if ratio else '-':>16}"
        )
    out.append(f"{'':<14}(acks=all ratio: 3 brokers acks=all MB/s ÷ 1 broker acks=1 MB/s)")
    return out


def failover_table(results: dict[str, Any]) -> list[str]:
    f = results.get("failover")
    if not f or not f.get("cycles"):
        return []
    p = f["producer"]
    out = [
        "",
        f"failover: ZooKeeper + {f['brokers']} brokers, RF={f['replication_factor']}, "
        f"min.insync.replicas={f['min_insync_replicas']}, "
        f"zookeeper.session.timeout.ms={f['zookeeper_session_timeout_ms']}; a producer "
        f"(acks=all, idempotent, {p['records_per_s']:,} records/s of {p['record_size']} B)",
        f"  {'seconds from the signal':<56}{'p50':>8}{'p90':>9}{'max':>9}{'rounds':>9}"
        f"{'failed':>8}",
    ]
    rows = [
        ("first_ack_by_new_leader", "first record acknowledged by the new leader"),
        ("leader_in_zookeeper", "new leader written to ZooKeeper"),
        ("back_in_isr_after_restart", "restart → back in the ISR"),
    ]
    for key, label in rows:
        for how in ("sigkill", "sigterm"):
            s = f.get(how)
            if not s or not s["rounds"]:
                continue
            d = s[key]
            failed = s["failed"] if key == rows[0][0] else s["rounds"] - d["count"]
            out.append(
                f"  {how.upper() + ': ' + label:<56}{_num(d['p50'], '8.2f')}"
                f"{_num(d['p90'], '9.2f')}{_num(d['max'], '9.2f')}{s['rounds']:>9}{failed:>8}"
            )
    if f.get("sigkill", {}).get("rounds"):
        out.append(
            f"  (a SIGKILL is noticed when the broker's ZooKeeper session expires: "
            f"{f['zookeeper_session_timeout_ms'] / 1000:g} s after its last heartbeat)"
        )
    check = f.get("check")
    if check:
        verdict = "OK" if check["ok"] else "FAILED"
        out.append(
            f"  records: {check['produced']:,} produced, {check['acknowledged']:,} acknowledged, "
            f"{check['read']:,} read back, {check['distinct']:,} distinct; "
            f"{check['acknowledged_missing']} acknowledged missing, {check['duplicated']} "
            f"duplicated, {check['offset_differs_from_ack']} at another offset: {verdict}"
        )
    for row in f["cycles"]:
        if "error" in row:
            out.append(f"  round {row['signal']} of broker {row['victim']}: {row['error']}")
    return out


def _clean(value: Any) -> Any:
    """NaN is not JSON: null instead."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def write_json(results: dict[str, Any], out_dir: Path, stamp: str) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"broker-{stamp}.json"
    path.write_text(json.dumps(_clean(results), indent=1) + "\n")
    latest = out_dir / "latest.json"
    shutil.copyfile(path, latest)
    return path, latest


def _bar_rows(results: dict[str, Any], key: str, name: str) -> list[Row]:
    """The rows of one throughput panel; the lag read joins the consume panel."""
    t = results["targets"][name]
    rows = list(t.get(key, []))
    lag = t.get("lag", {}).get("consume")
    if key == "consume" and lag:
        where = "disk" if t["lag"].get("page_cache_dropped") else "page cache"
        rows.append({**lag, "case": f"lag: offset 0 ({where})", "size": 1024, "codec": "none"})
    return rows


def plots(results: dict[str, Any], out_dir: Path) -> list[Path]:
    """throughput.png and latency.png; none (with a note) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter, LogLocator
    except ImportError:
        results["notes"].append("matplotlib is not installed (pip install '.[bench]'): no plots")
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    names = list(results["targets"])
    colors = [f"C{i}" for i in range(len(names))]
    machine = results["meta"]["machine"]
    lim = results.get("limits", {})
    plain = FuncFormatter(lambda v, _: f"{v:,.0f}")

    panels = [
        (
            "produce",
            "produce, payload MB/s",
            [
                ("socket write", lim.get("socket_write_MBps")),
                ("file write", lim.get("file_write_MBps")),
            ],
        ),
        (
            "consume",
            "consume, payload MB/s",
            [
                ("sendfile from page cache", lim.get("sendfile_MBps")),
                ("sendfile from disk", lim.get("sendfile_cold_MBps")),
            ],
        ),
    ]
    panels = [p for p in panels if any(_bar_rows(results, p[0], n) for n in names)]
    if panels:
        cases_of = {
            key: list(dict.fromkeys(r["case"] for n in names for r in _bar_rows(results, key, n)))
            for key, _, _ in panels
        }
        heights = [len(cases_of[key]) for key, _, _ in panels]
        fig, axes = plt.subplots(
            len(panels),
            1,
            figsize=(10, 1.6 + 0.3 * (len(names) + 1) * sum(heights)),
            gridspec_kw={"height_ratios": heights},
            squeeze=False,
            layout="constrained",
        )
        for ax, (key, title, lines) in zip(axes[:, 0], panels, strict=True):
            cases = cases_of[key]
            slots = len(names) + (1 if key in ("produce", "consume") else 0)
            bar = 0.8 / slots
            for i, n in enumerate(names):
                rows = {r["case"]: r for r in _bar_rows(results, key, n)}
                ys = [j + i * bar for j, c in enumerate(cases) if c in rows]
                xs = [rows[c]["MBps"] for c in cases if c in rows]
                ax.barh(ys, xs, bar, color=colors[i], label=n)
                for y, x in zip(ys, xs, strict=True):
                    ax.text(x * 1.02, y, f"{x:,.0f}", va="center", fontsize="x-small")
            if key in ("produce", "consume"):
                # The client's own ceiling for the same record size (and codec).
                ceiling = results.get("ceiling", {})
                ys, xs = [], []
                for j, c in enumerate(cases):
                    row = next(
                        r for n in names for r in _bar_rows(results, key, n) if r["case"] == c
                    )
                    found = ceiling.get(
                        f"{row['size']} {row['codec']}"
                        if key == "produce"
                        else f"consume {row['size']}"
                    )
                    if found:
                        ys.append(j + len(names) * bar)
                        xs.append(found["MBps"])
                if xs:
                    source = "client → null sink" if key == "produce" else "client ← record source"
                    ax.barh(ys, xs, bar, color="lightgrey", hatch="//", label=source)
            for (label, value), style in zip(lines, ("--", ":", "-."), strict=False):
                if value:
                    ax.axvline(value, color="black", linestyle=style, label=f"limit: {label}")
            ax.set_yticks([j + bar * (slots - 1) / 2 for j in range(len(cases))], cases)
            ax.invert_yaxis()
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(plain)
            ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
            ax.grid(True, axis="x", which="both", alpha=0.3)
            ax.set_title(title)
            ax.legend(fontsize="small", loc="lower right")
            ax.tick_params(axis="y", labelsize="small")
        fig.suptitle(f"throughput against the loopback limits ({machine})", fontsize="medium")
        path = out_dir / "throughput.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)

    levels = list(
        dict.fromkeys(r["level"] for n in names for r in results["targets"][n].get("latency", []))
    )
    if levels:
        cols = min(2, len(levels))
        grid = (len(levels) + cols - 1) // cols
        fig, axes = plt.subplots(
            grid, cols, figsize=(6 * cols, 4 * grid), squeeze=False, layout="constrained"
        )
        quantiles = [0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999]
        for ax, level in zip(axes.flat, levels, strict=False):
            for i, n in enumerate(names):
                for r in results["targets"][n].get("latency", []):
                    if r["level"] == level and r["cdf"]:
                        label = f"{n} ({r['achieved_per_s']:,.0f} records/s)"
                        ax.plot(
                            [v for _, v in r["cdf"]],
                            [q for q, _ in r["cdf"]],
                            color=colors[i],
                            label=label,
                        )
            ax.set_xscale("log")
            ax.set_yscale("logit")
            ax.set_yticks(quantiles, [f"p{q * 100:g}" for q in quantiles])
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.set_xlabel("end-to-end latency, ms")
            ax.set_title(f"{level} of the maximum produce rate" if level.endswith("%") else level)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize="small", loc="upper left")
        for ax in list(axes.flat)[len(levels) :]:
            ax.set_visible(False)
        fig.suptitle(
            f"latency CDF: 100 B records, acks=1, 1 partition ({machine})", fontsize="medium"
        )
        path = out_dir / "latency.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    written += _cluster_plot(results, out_dir, plt, plain)
    written += _failover_plot(results, out_dir, plt)
    return written


def _cluster_plot(results: dict[str, Any], out_dir: Path, plt: Any, plain: Any) -> list[Path]:
    """cluster.png: per partition count, one broker acks=1 beside three brokers acks=1 and
    acks=all, each bar the median with the runs' range as an error bar."""
    c = results.get("cluster")
    rows = [r for r in (c or {}).get("rows", []) if r.get("runs")]
    if not c or not rows:
        return []
    fig, ax = plt.subplots(figsize=(10, 1.4 + 1.1 * len(rows)), layout="constrained")
    bar = 0.8 / len(CLUSTER_KINDS)
    for i, (kind, label) in enumerate(CLUSTER_KINDS):
        ys, xs, lo, hi = [], [], [], []
        for j, row in enumerate(rows):
            runs = [r["MBps"] for r in row["runs"].get(kind, [])]
            if not runs:
                continue
            ys.append(j + i * bar)
            xs.append(row[kind]["MBps"])
            lo.append(row[kind]["MBps"] - min(runs))
            hi.append(max(runs) - row[kind]["MBps"])
        ax.barh(ys, xs, bar, xerr=[lo, hi], color=f"C{i}", label=label, capsize=2)
        for y, x, j in zip(ys, xs, range(len(ys)), strict=True):
            ratio = rows[j].get(f"{kind}_vs_single") if kind != "single" else None
            text = f"{x:,.0f}" + (f" ({ratio:.2f}×)" if ratio else "")
            ax.text(x * 1.02 + hi[j], y, text, va="center", fontsize="x-small")
    socket_limit = results.get("limits", {}).get("socket_write_MBps")
    if socket_limit:
        ax.axvline(socket_limit, color="black", linestyle="--", label="limit: socket write")
    ax.set_yticks([j + bar for j in range(len(rows))], [r["case"] for r in rows])
    ax.invert_yaxis()
    ax.xaxis.set_major_formatter(plain)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_xlabel(
        f"payload MB/s (median of {c['repeats']} runs; bars: their range; × = of 1 broker acks=1)"
    )
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=4)
    ax.set_title(
        f"produce to ZooKeeper + {c['brokers']} local brokers, RF={c['replication_factor']}, "
        f"min.insync.replicas={c['min_insync_replicas']}, beside one broker "
        f"({results['meta']['client']})\n{results['meta']['machine']}",
        fontsize="medium",
    )
    path = out_dir / "cluster.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


def _failover_plot(results: dict[str, Any], out_dir: Path, plt: Any) -> list[Path]:
    from matplotlib.ticker import FuncFormatter, LogLocator

    """failover.png: the CDFs of the seconds from the signal to the first record the new
    leader acknowledged (SIGKILL, SIGTERM), and to the new leader in ZooKeeper."""
    f = results.get("failover")
    if not f:
        return []
    curves = [
        (how, key, style)
        for how in ("sigkill", "sigterm")
        for key, style in (("first_ack_by_new_leader", "-"), ("leader_in_zookeeper", ":"))
        if f.get(how, {}).get(key, {}).get("samples_s")
    ]
    if not curves:
        return []
    fig, ax = plt.subplots(figsize=(9, 6.5), layout="constrained")
    labels = {
        "first_ack_by_new_leader": "first record acknowledged by the new leader",
        "leader_in_zookeeper": "new leader in ZooKeeper",
    }
    for how, key, style in curves:
        values = sorted(f[how][key]["samples_s"])
        n = len(values)
        xs = [values[0], *values]
        ys = [0.0, *[(i + 1) / n for i in range(n)]]
        d = f[how][key]
        ax.step(
            xs,
            ys,
            where="post",
            linestyle=style,
            color="C0" if how == "sigkill" else "C1",
            label=f"{how.upper()}: {labels[key]} (n={n}, p50 {d['p50']:.2f} s, "
            f"p90 {d['p90']:.2f} s, max {d['max']:.2f} s)",
        )
    timeout = f["zookeeper_session_timeout_ms"] / 1000
    ax.axvline(
        timeout,
        color="black",
        linestyle="--",
        label=f"zookeeper.session.timeout.ms ({timeout:g} s)",
    )
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xlabel("seconds from the signal to the leader")
    ax.set_ylabel("share of rounds")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.13))
    p = f["producer"]
    ax.set_title(
        f"failover: ZooKeeper + {f['brokers']} brokers, RF={f['replication_factor']}, "
        f"min.insync.replicas={f['min_insync_replicas']}, zookeeper.session.timeout.ms="
        f"{f['zookeeper_session_timeout_ms']}\nproducer acks=all, idempotent, "
        f"{p['records_per_s']:,} records/s; {results['meta']['machine']}",
        fontsize="medium",
    )
    path = out_dir / "failover.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


def recovery_table(results: dict[str, Any]) -> list[str]:
    """Start-up after SIGKILL against the bytes appended since the last clean shutdown."""
    rows = results.get("recovery", [])
    if not rows:
        return []
    mib = 2**20
    out = [
        "",
        "start-up after SIGKILL, one partition: bytes appended since a clean shutdown",
        "(the recovery point) against the bytes recovery read; last row: never shut down",
        f"{'not flushed MiB':>16}{'log MiB':>9}{'clean start s':>15}{'after SIGKILL s':>17}"
        f"{'recovery read MiB':>19}",
    ]
    for r in rows:
        unflushed = "all" if r["unflushed_bytes"] is None else f"{r['unflushed_bytes'] / mib:,.0f}"
        read = r.get("recovery_read_bytes")
        out.append(
            f"{unflushed:>16}{r['log_bytes'] / mib:>9,.0f}{_num(r.get('clean_start_s'), '.2f'):>15}"
            f"{r['unclean_start_s']:>17.2f}{_num(None if read is None else read / mib, ',.1f'):>19}"
        )
    return out
