"""Architecture check: perfci's packages (docs/architecture.md) import downwards only, and no two
packages import each other, directly or through others."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[2] / "perfci"

# lowest first; a package may import from its own layer or any lower one (never a cycle, even within a layer)
# fmt: off
LAYERS: dict[str, int] = {
    "core": 0,  # errors, config, patterns, cpus (modules at the top of perfci/)
    "format": 0,  # model, codec, schema, JSON files, comparison format, schemas
    "stats": 1,
    "metrics": 2,
    "profilers": 3, "workloads": 3,
    "engine": 4,
    "store": 5, "compare": 5, "importers": 5,
    "ab": 6,
    "reports": 7,
    "api": 8,
    "cli": 9, "pytest_plugin": 9,
}
# fmt: on
CORE_MODULES = {
    "errors",
    "config",
    "patterns",
    "cpus",
    "fractions",
    "options",
    "work_folder",
    "parent_death",
    "interrupts",
}
ENGINE_MODULES = {"runner", "worker", "supervisor", "case_session", "lockstep"}


def package_of(module: str) -> str:
    """`perfci.compare.decide` -> `compare`; a module at the top of perfci/ -> `core`; perfci itself -> `root`."""
    parts = module.split(".")
    if len(parts) == 1:
        return "root"
    head = parts[1]
    return head if (ROOT / head).is_dir() else "core"


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("perfci"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("perfci")}
    return found


def package_graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        module = ".".join(rel.parts)
        src = package_of(module)
        if module in ("perfci.__init__", "perfci.__main__"):
            continue  # the public face: re-exports the workload API, starts the CLI
        for imported in imports(path):
            dst = package_of(imported)
            if dst not in (src, "root"):
                edges.setdefault(src, set()).add(dst)
            elif dst == "root" and src not in ("workloads", "ab"):
                # `import perfci` is the workload API (built-in workload files) and the installed package's
                # location (ab/revisions.py); anywhere else it would hide an upward import
                edges.setdefault(src, set()).add("root")
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(u: str) -> list[str] | None:
        state[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                return [*stack[stack.index(v) :], v]
            if v not in state and (found := visit(v)):
                return found
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(edges):
        if u not in state and (found := visit(u)):
            return found
    return None


def test_every_package_and_top_level_module_has_a_layer() -> None:
    packages = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    modules = {p.stem for p in ROOT.glob("*.py") if not p.name.startswith("_")}
    assert not packages - set(LAYERS), f"add these packages to LAYERS: {sorted(packages - set(LAYERS))}"
    assert not modules - CORE_MODULES, f"top-level modules outside the core: {sorted(modules - CORE_MODULES)}"


def test_engine_is_a_package() -> None:
    assert (ROOT / "engine").is_dir()
    assert not [m for m in ENGINE_MODULES if (ROOT / f"{m}.py").exists()]


def test_imports_point_downwards() -> None:
    edges = package_graph()
    assert "root" not in {d for ds in edges.values() for d in ds}, "only workload files may `import perfci`"
    upward = sorted(f"{s} (layer {LAYERS[s]}) imports {d} (layer {LAYERS[d]})" for s, ds in edges.items() for d in ds
                    if d != "root" and LAYERS[d] > LAYERS[s])  # fmt: skip
    assert not upward, "\n".join(upward)


def test_no_package_cycle() -> None:
    cycle = find_cycle(package_graph())
    assert cycle is None, "package cycle: " + " -> ".join(cycle or [])


def test_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}}) is None


def test_the_architecture_page_names_every_module() -> None:
    """docs/architecture.md names each module by its path under perfci/ (`compare/rolling_baseline.py`;
    `config.py` for the core modules at the top). The built-in suites are workload files, named by their folder."""
    page = (ROOT.parent / "docs" / "architecture.md").read_text()
    modules = [p.relative_to(ROOT).as_posix() for p in sorted(ROOT.rglob("*.py")) if p.name != "__init__.py"]
    missing = [m for m in modules if not m.startswith("workloads/builtin/") and f"`{m}`" not in page]
    assert missing == []
