"""The package's import-time dependencies form no cycle: a module can be imported (and
understood) without dragging the whole broker in through the back door."""

from __future__ import annotations

import ast
from pathlib import Path

import kafkars

ROOT = Path(kafkars.__file__).parent.parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_time_edges(path: Path, modules: set[str]) -> set[str]:
    """Modules `path` imports when it is imported: not under TYPE_CHECKING, not inside
    functions (a deferred import runs later)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    # `from kafkars import _core` needs the package, which is initialised
                    # first anyway; the extension module itself imports nothing of ours.
                    if full in modules:
                        edges.add(full)
                    elif base in modules and alias.name != "_core":
                        edges.add(base)
            if isinstance(node, (ast.ClassDef, ast.If, ast.Try, ast.With)):
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(node, field, []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(ast.parse(path.read_text()).body)
    edges.discard(name)
    return edges


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := walk(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := walk(node)):
            return found
    return None


def test_no_import_cycles() -> None:
    files = sorted((ROOT / "kafkars").rglob("*.py"))
    modules = {module_name(f) for f in files}
    graph = {module_name(f): import_time_edges(f, modules) for f in files}
    assert len(graph) > 50
    assert "kafkars.server.kafka_apis" in graph["kafkars.server.kafka_server"]
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


# -- the handlers' seam ------------------------------------------------------------------
APIS = ROOT / "kafkars" / "server" / "apis"


def server_references(path: Path) -> list[str]:
    """What in a handler module reaches for the KafkaServer: an import of
    kafkars.server.kafka_server (even under TYPE_CHECKING), or a `server` parameter or
    name. Handlers take `(apis, request)` and use the collaborators KafkaApis was given."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        line = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            found += [f"{line} imports {a.name}" for a in node.names if "kafka_server" in a.name]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = [a.name for a in node.names]
            if "kafka_server" in module or "kafka_server" in names or "KafkaServer" in names:
                found.append(f"{line} imports from {module or '.'}")
        elif isinstance(node, ast.arg) and node.arg == "server":
            found.append(f"{line} has a `server` parameter")
        elif isinstance(node, ast.Name) and node.id in ("server", "KafkaServer"):
            found.append(f"{line} refers to `{node.id}`")
        elif isinstance(node, ast.Constant) and node.value == "KafkaServer":
            found.append(f"{line} names KafkaServer in an annotation")
    return found


def test_handlers_never_see_the_server() -> None:
    files = sorted(APIS.glob("*.py"))
    assert len(files) > 10
    found = [ref for f in files for ref in server_references(f)]
    assert not found, "\n".join(found)


def test_server_reference_finder_finds_them(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from kafkars.server.kafka_server import KafkaServer\n"
        "def handle(server: 'KafkaServer', request: object) -> None:\n"
        "    return server.metadata\n"
    )
    assert len(server_references(bad)) >= 3
    good = tmp_path / "good.py"
    good.write_text("def handle(apis: object, request: object) -> object:\n    return apis\n")
    assert server_references(good) == []
